"""Writing the run document: the typed writer against the dict writer it replaced, in one run.

    python benchmarks/document_writing.py [--traces 2000] [--repeat 3] [--rounds 3] [--json]
                                          [--baseline-ref COMMIT]

What is timed is what a ``score`` run does to write its document once its traces are scored:
each case result into the case log (its entry), the head (``run`` and ``summary``), and the
outputs of ``score --json PATH`` with the default store (redacted; the ``--json`` file and
the stored run). The results are those of the README's main job (the 100 tau-bench
conversations scored against their golden dataset), repeated with fresh trace ids up to
``--traces``, scored once (by the current tree, not timed) and handed to both writers.

The baseline is the writer before issue 39 (``--baseline-ref``, default
:data:`BASELINE_REF`: the last commit whose document was built as dicts), its tree taken
with ``git archive`` and timed in child processes exactly as the current tree is, in the same
run, the two alternating: ``speedup`` is the baseline's median seconds over the current
tree's. Both trees write the same bytes (the ``--json`` files are compared, the run's time,
commit and temporary folder masked).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import json
import pickle
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
BASELINE_REF = "7be9c35203e942ffa315e13dc920e729df537a5a"
"""The last commit whose run document was built as dicts (report.document.case_dict)."""


def _results(work: Path, count: int) -> tuple[list[Any], Any]:
    """The main job's case results repeated with fresh trace ids up to ``count``, and its
    dataset (in the tree imported)."""
    from benchmarks.tau_bench.convert import convert
    from tracegrade.config import load_config
    from tracegrade.dataset import load_dataset
    from tracegrade.pipeline import evaluate_dataset, from_files
    from tracegrade.scoring import config_for

    convert(TAU, work)
    dataset = load_dataset(work / "dataset.yaml")
    traces = from_files([work / "traces.jsonl"]).traces
    config = config_for(load_config(), dataset)
    scored = list(evaluate_dataset(traces, dataset, config=config).results)
    results = [
        dataclasses.replace(r, trace_id=f"{n:08x}{(r.trace_id or '')[8:]}")
        for n in range(count // len(scored) + 1)
        for r in scored
    ][:count]
    return results, dataset


def _writer(results: list[Any], dataset: Any, out: Path) -> Callable[[], None]:
    """One write of the document (entries, head, ``--json`` and the store), in the imported
    tree's API: the typed writer's, or the dict writer's before it."""
    from tracegrade.pipeline import outputs
    from tracegrade.report import document
    from tracegrade.report.caselog import CaseLog
    from tracegrade.scoring.streaming import TraceFacts
    from tracegrade.scoring.summary import RunningSummary

    running = RunningSummary(1.0)
    for result in results:
        running.add(result)
    facts = TraceFacts()
    typed = hasattr(document, "case_entry")
    before = document.run_meta if typed else document.run_info
    files = (
        "config_files"
        if "config_files" in inspect.signature(before).parameters
        else "config_sources"
    )

    def write() -> None:
        db = out / f"{time.perf_counter_ns()}.db"
        with CaseLog() as cases:
            for result in results:
                cases.add(document.case_entry(result) if typed else document.case_dict(result))
            summary = running.summary(0)
            meta: dict[str, Any] = dict(tier=None, min_pass_rate=1.0, trace_source="t")
            meta[files] = ()
            if typed:
                from tracegrade.run_document import StreamedDocument, head_of

                run = document.run_meta(summary, facts, dataset, run_id="r", **meta)
                doc: Any = StreamedDocument(head_of(run, summary), cases)
            else:
                info = document.run_info(summary, facts, dataset, run_id="r", **meta)
                doc = document.streamed_document(summary, cases, info)
            outputs.write_outputs(doc, str(db), str(out / "run.json"), None, False)
        db.unlink()

    return write


def child(results_file: Path, repeat: int) -> dict[str, Any]:
    """Time the writer of the tracegrade this process imports, on the pickled results."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-bench-") as folder:
        work = Path(folder)
        results, dataset = pickle.loads(results_file.read_bytes())
        write = _writer(results, dataset, work)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            write()
            times.append(time.perf_counter() - started)
        text = (work / "run.json").read_bytes()
        masked = json.loads(text)
        masked["run"]["created_at"] = masked["run"]["git_sha"] = None
        masked["run"]["dataset"]["source"] = None  # a temporary folder of its own
        masked["run"].pop("evaluator", None)  # run.evaluator came after the baseline commit
        renamed = {"config_sources": "config_files"}  # run_document.RENAMED_FIELDS, read alike
        masked["run"] = {renamed.get(k, k): v for k, v in masked["run"].items()}
        digest = hashlib.sha256(json.dumps(masked).encode()).hexdigest()
    return {"seconds": statistics.median(times), "cases": len(results), "json_sha256": digest}


def _run_child(tree: Path, results: Path, repeat: int) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree)]
    command += ["--results", str(results), "--repeat", str(repeat)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=tree)
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


def baseline_tree(ref: str, into: Path) -> Path:
    """The repository's tree at ``ref`` (``git archive``), extracted into ``into``."""
    archive = into / "baseline.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "archive", ref], cwd=ROOT, stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run(
    count: int = 2000, repeat: int = 3, baseline_ref: str = BASELINE_REF, rounds: int = 3
) -> dict[str, Any]:
    """Both writers on ``count`` results: ``rounds`` child processes of each, alternating (a
    shared machine's load falls on both alike), each the median of ``repeat`` writes; the
    figures are the medians over the rounds."""
    old: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tracegrade-baseline-") as folder:
        work = Path(folder)
        results = work / "results.pickle"  # scored once, by this tree: both write the same
        results.write_bytes(pickle.dumps(_results(work / "tau", count)))
        tree = baseline_tree(baseline_ref, work)
        for _ in range(rounds):
            old.append(_run_child(tree, results, repeat))
            new.append(_run_child(ROOT, results, repeat))
    old_s = statistics.median(f["seconds"] for f in old)
    new_s = statistics.median(f["seconds"] for f in new)
    return {
        "traces": count,
        "baseline_ref": baseline_ref,
        "baseline_s": round(old_s, 3),
        "typed_s": round(new_s, 3),
        "speedup": round(old_s / new_s, 2),
        "same_json": {f["json_sha256"] for f in old + new} == {new[0]["json_sha256"]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--results", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.child is not None:
        sys.path.insert(0, str(args.child))
        print(json.dumps(child(args.results, args.repeat)))
        return 0
    figures = run(args.traces, args.repeat, args.baseline_ref, args.rounds)
    return report(figures, args.json, _table)


def _table(figures: dict[str, Any]) -> None:
    print(
        f"{figures['traces']} traces: the dict writer ({figures['baseline_ref']}) "
        f"{figures['baseline_s']} s, the typed writer {figures['typed_s']} s: "
        f"{figures['speedup']}x faster; same --json: {figures['same_json']}"
    )


if __name__ == "__main__":
    sys.exit(main())
