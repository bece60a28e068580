"""The run documents of the README's main job and the demo, made by the commands as a user
runs them (``score --json``, ``run --json``), with what differs between two runs of the same
input masked (ids, times, durations, paths): the reference that a change to how documents are
written must give byte for byte (tests/report/test_same_documents.py).

``python -m tests.support.reference_documents --write`` re-makes the references in
tests/data/reference_documents/ (only for a change meant to alter the documents).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REFERENCES = ROOT / "tests" / "data" / "reference_documents"
MAIN_JOB = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
OPENINFERENCE = ROOT / "datasets" / "tau-bench-otlp" / "openinference" / "traces.jsonl.gz"
GOLDEN = ROOT / "datasets" / "ecommerce" / "golden.yaml"
SIMULATED = ROOT / "datasets" / "ecommerce" / "simulated.yaml"
MASK = "<masked>"

_MASKED_KEYS = {
    "run_id",
    "created_at",
    "started_at",
    "finished_at",
    "git_sha",
    "git_branch",
    "trace_id",
    "trace_ids",
    "span_id",
    "id",
    "config_fingerprint",
}
"""Keys whose values differ between two runs of the same input (ids, clock times, the
checkout's commit), and the evaluator's config fingerprint and id (``run.evaluator``: they
change with every field the config gains, which is not what these documents pin)."""
_CHECKOUT_KEYS = {"git_sha", "git_branch"}
"""Masked even when null: a detached checkout (a CI clone) has no branch."""
_TIMED = re.compile(r"(^|_)(ms|s)($|_)|latency|duration|^measured$")
"""Measured times: a run's durations and latencies are the clock's, not the input's."""
_TIMES_IN_TEXT = re.compile(r"\b\d+(\.\d+)?\s?(ms|s)\b")


def mask(value: Any, key: str = "", tmp: str = "") -> Any:
    """``value`` with ids, times, durations and the temporary folder ``tmp`` masked."""
    if key in _MASKED_KEYS and (value is not None or key in _CHECKOUT_KEYS):
        return MASK
    if isinstance(value, dict):
        return {k: mask(v, k, tmp) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key, tmp) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and _TIMED.search(key):
        return MASK
    if isinstance(value, str):
        text = value.replace(tmp, "<tmp>") if tmp else value
        text = text.replace(sys.executable, "<python>")  # the interpreter differs per venv
        text = text.replace(str(ROOT), "<root>")  # the checkout's folder differs per clone
        return _TIMES_IN_TEXT.sub("<time>", text) if _TIMED.search(key) else text
    return value


def _tracegrade(args: list[str], env: dict[str, str], expect: int) -> None:
    command = [sys.executable, "-m", "tracegrade", *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, (args, done.stdout[-2000:], done.stderr[-2000:])


def _read(path: Path, tmp: Path) -> dict[str, Any]:
    masked: dict[str, Any] = mask(json.loads(path.read_text(encoding="utf-8")), tmp=str(tmp))
    return masked


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env.pop("TRACEGRADE_DB", None)
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def score_documents(tmp: Path) -> dict[str, dict[str, Any]]:
    """The README's main job (``score`` against its golden dataset) and its tour's
    reference-free ``score`` of an OpenInference file, masked."""
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tau_bench" / "convert.py"), str(MAIN_JOB)]
        + [str(tmp / "tau")],
        check=True,
        capture_output=True,
    )
    env = _env()
    traces, dataset = str(tmp / "tau" / "traces.jsonl"), str(tmp / "tau" / "dataset.yaml")
    out = tmp / "score-main.json"
    _tracegrade(["score", traces, "--dataset", dataset, "--json", str(out), "--no-save"], env, 1)
    free = tmp / "score-reference-free.json"
    args = ["score", str(OPENINFERENCE), "--min-pass-rate", "0.5", "--json", str(free)]
    _tracegrade([*args, "--no-save"], env, 0)
    return {"score-main": _read(out, tmp), "score-reference-free": _read(free, tmp)}


def run_documents(tmp: Path) -> dict[str, dict[str, Any]]:
    """The demo's runs (its recorded model, no key): the agent in process and as a command,
    then the regressed model gated against the first run as baseline, masked."""
    from examples.ecommerce.demo import MODEL
    from examples.ecommerce.replay import ReplayServer

    db = str(tmp / "demo.db")
    run = ["run", str(GOLDEN), "--no-judge", "--smoke", "--db", db]
    found: dict[str, dict[str, Any]] = {}
    server = ReplayServer()
    with server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            good = _env(
                OPENAI_API_KEY="none", OPENAI_MODEL=MODEL, OPENAI_BASE_URL=server.base_url()
            )
            bad = {**good, "OPENAI_BASE_URL": server.base_url("invented_price")}
            agent = ["--agent", "examples.ecommerce.agent:answer"]
            command = ["--agent-cmd", f"{sys.executable} -m examples.ecommerce --messages"]
            command += ["--input-format", "messages"]
            steps: list[tuple[str, list[str], dict[str, str], int]] = [
                ("run-agent", [*agent, "--label", "demo-agent"], good, 0),
                ("run-agent-cmd", [*command, "--label", "demo-agent-cmd"], good, 0),
                (
                    "run-regressed",
                    [*agent, "--label", "demo-regressed", "--baseline", "baseline"],
                    bad,
                    1,
                ),
            ]
            for name, args, env, expect in steps:
                out = tmp / f"{name}.json"
                _tracegrade([*run, *args, "--json", str(out)], env, expect)
                found[name] = _read(out, tmp)
                if name == "run-agent":
                    _tracegrade(["runs", "baseline", "latest", "--db", db], env, 0)
        finally:
            server.shutdown()
    return found


def simulated_documents(tmp: Path) -> dict[str, dict[str, Any]]:
    """``run`` of the example shop's simulated customers (datasets/ecommerce/simulated.yaml,
    the scripted user against the scripted shop model; twice each: the goal rate over
    repeats), masked."""
    from tests.support.ecommerce_model import ecommerce_model
    from tests.support.openai_server import ScriptedOpenAI

    server = ScriptedOpenAI(ecommerce_model("good")).start()  # type: ignore[arg-type]
    try:
        env = _env(
            OPENAI_API_KEY="test",
            OPENAI_MODEL="gpt-4o-mini",
            OPENAI_BASE_URL=server.base_url,
            SHOP_THREADS_DB=str(tmp / "threads.db"),
        )
        for name in ("TRACEGRADE_JUDGE_MODEL", "TRACEGRADE_SIMULATOR_MODEL"):
            env.pop(name, None)
        out = tmp / "run-simulated.json"
        args = ["run", str(SIMULATED), "--no-judge", "--no-save", "--repeat", "2"]
        args += ["--agent", "examples.ecommerce.threads:sqlite_agent", "--json", str(out)]
        _tracegrade(args, env, 0)
    finally:
        server.stop()
    return {"run-simulated": _read(out, tmp)}


MAKERS: dict[str, Callable[[Path], dict[str, dict[str, Any]]]] = {
    "score": score_documents,
    "run": run_documents,
    "simulated": simulated_documents,
}


def text(document: dict[str, Any]) -> str:
    """The masked document as it is kept (indented JSON, keys in document order)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.support.reference_documents --write")
    REFERENCES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for make in MAKERS.values():
            for name, document in make(Path(folder)).items():
                (REFERENCES / f"{name}.json").write_text(text(document), encoding="utf-8")
                print(f"wrote {REFERENCES / name}.json")


if __name__ == "__main__":
    main()
