"""Issue 24: the house's shape holds. No import cycle among tracegrade's modules; the one
layers contract (and its companions) in pyproject.toml is kept, and an import of
``tracegrade.scoring`` from ``tracegrade.cli`` breaks it; command modules stay small and no
function is longer than 60 lines."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "tracegrade"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle():
    graph = grimp.build_graph("tracegrade", exclude_type_checking_imports=True)
    assert _cycles(graph) == []


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(Path(sys.executable).parent)}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_the_import_contracts_are_kept():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Layers: faces" in result.stdout and "0 broken" in result.stdout


def test_an_import_of_scoring_from_the_cli_breaks_the_contracts(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "tracegrade", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "tracegrade" / "cli" / "sneaky.py").write_text(
        "from tracegrade.scoring import build_scorers\n"
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = _lint_imports(tmp_path, pythonpath=copy)
    assert result.returncode != 0
    assert "tracegrade.cli.sneaky -> tracegrade.scoring" in result.stdout


def _functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno
    ]


def test_no_function_is_longer_than_sixty_lines():
    long = [(w, n) for p in PACKAGE.rglob("*.py") for w, n in _functions(p) if n > 60]
    assert long == []


def test_command_modules_parse_call_and_render_in_at_most_150_lines():
    """A command module defines a click command; shared options and rendering live apart."""
    big = {
        p.name: n
        for p in (PACKAGE / "cli").glob("*.py")
        if "@click.command" in (text := p.read_text()) or "@click.group" in text
        if (n := len(text.splitlines())) > 150
    }
    assert big == {}


def test_the_root_holds_at_most_ten_plain_modules():
    """Issue 39: the root is vocabulary; helpers live in ``_util/`` or the package they serve."""
    plain = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in {"__init__", "__main__"})
    assert len(plain) <= 10, plain


def test_mypy_strict_is_locked_in_the_config():
    """Issue 39: ``mypy`` (CI) is ``mypy --strict``: no implicit re-export, no untyped call,
    strict equality."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["strict"] is True and config["files"] == ["tracegrade"]
    relaxed = {"implicit_reexport", "allow_untyped_calls", "allow_untyped_defs"}
    assert not relaxed & set(config)
    for override in config.get("overrides", []):  # none relaxes a check
        assert set(override) <= {"module", "ignore_missing_imports"}, override
        assert override["ignore_missing_imports"] is False, override


def test_no_package_attribute_is_both_a_module_and_a_public_name():
    """Issue 39: ``tracegrade.pipeline.score`` is the function, never the module on a second
    access: no package has a submodule named as one of its public names."""
    shadowed = []
    for init in PACKAGE.rglob("__init__.py"):
        package = ".".join(init.parent.relative_to(ROOT).parts)
        names = set(getattr(importlib.import_module(package), "__all__", ()))
        modules = {p.stem for p in init.parent.glob("*.py")}
        modules |= {p.name for p in init.parent.iterdir() if (p / "__init__.py").exists()}
        shadowed += [f"{package}.{name}" for name in sorted(names & modules)]
    assert shadowed == []


def test_the_pipeline_holds_its_use_cases_in_at_most_22_modules():
    """Issue 39: page data, chat and waterfall live beside the web routes, accounts and trace
    search in web/, leases in store/, agent construction in runner/agents/; one module reads
    traces."""
    modules = sorted(p.stem for p in (PACKAGE / "pipeline").glob("*.py"))
    assert len(modules) <= 22, modules
    for moved in ("pages", "chat", "waterfall", "trace_search", "accounts", "leases"):
        assert moved not in modules
    assert "reading" in modules and not {"sources", "selection"} & set(modules)


def test_the_pipeline_index_and_the_architecture_name_each_use_case_once():
    """Issue 39: docs/architecture.md's table and the pipeline package's docstring name every
    pipeline module, each once (the table: in its first column)."""
    pipeline = importlib.import_module("tracegrade.pipeline")
    index = pipeline.__doc__ or ""
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = architecture.split("## The use cases", 1)[1].split("\n## ", 1)[0]
    for module in (p.stem for p in (PACKAGE / "pipeline").glob("*.py")):
        if module == "__init__":
            continue
        assert index.count(f":mod:`.{module}`") == 1, module
        assert table.count(f"| `{module}` |") == 1, module


def _test_imports(path: Path) -> list[str]:
    """The ``tests.*`` modules that ``path`` imports (absolute imports only)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [name for name in names if name.startswith("tests.")]


def _module_directory(name: str) -> Path:
    """The directory holding test module or package ``name`` (``tests.web.shop`` -> tests/web)."""
    path = ROOT.joinpath(*name.split("."))
    return path.parent if path.with_suffix(".py").exists() else path


def test_tests_import_only_tests_support_across_directories():
    """Issue 39: a test module, conftest or helper imports from its own directory or from
    tests/support/, never from another directory's conftest, tests or helpers (a helper two
    directories share lives in tests/support/; the instrumentation harness, tests/harness/, is
    reached through tests/support/harness_venvs.py)."""
    tests = ROOT / "tests"
    support = tests / "support"
    astray = []
    for path in tests.rglob("*.py"):
        if "node_modules" in path.parts or path.parent == support:
            continue
        for name in _test_imports(path):
            home = _module_directory(name)
            if home not in (path.parent, support):
                astray.append(f"{path.relative_to(ROOT)}: {name}")
    assert astray == []


def _classes_by_name(word: str) -> dict[str, list[str]]:
    """Top-level classes of tracegrade whose name holds ``word`` -> the modules defining them."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and word in node.name:
                found.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    return found


def test_one_meaning_per_word_export():
    """Issue 39 item 4: "export" means the OpenTelemetry SDK's exporting (spans, logs and metrics
    sent over OTLP: runner.telemetry.RunExport, report.otlp_export) and the export commands;
    a run's results and figures sent to ``--export-otlp`` are its evaluation signals
    (pipeline.signals.RunSignals), not a second RunExport; no pipeline module is named export."""
    assert not (PACKAGE / "pipeline" / "export.py").exists()
    twice = {name: where for name, where in _classes_by_name("Export").items() if len(where) > 1}
    assert twice == {}


def test_one_meaning_per_word_source():
    """Issue 39 item 4: a source is where traces come from (a trace backend ``import --from
    SOURCE`` pulls from: tracegrade/sources/; the run document's ``trace_source``). Where a
    convention map finds a field is a FieldLocation, where a derived field came from a
    FieldOrigin, a dataset the dashboard edits an EditableDataset, the cases a comparison reads
    RunCases (compare.run_cases): every Source class is a trace backend's, defined once."""
    found = _classes_by_name("Source")
    assert {name: where for name, where in found.items() if len(where) > 1} == {}
    modules = [w for where in found.values() for w in where]
    astray = [w for w in modules if not w.startswith("tracegrade/sources/")]
    assert astray == []
    assert not (PACKAGE / "compare" / "case_sources.py").exists()


def _sources_words() -> list[str]:
    """Every word of tracegrade's code, docstrings and comments holding "sources" (not
    "resources"), outside tracegrade/sources/, as ``path: word``; the module path
    ``tracegrade.sources`` (or ``/sources``) is left out."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PACKAGE / "sources") in path.parents:
            continue
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"[\w.~/]*sources\w*", text):
            word = match.group()
            if "resources" in word or re.fullmatch(r"(~?tracegrade[./]|~?\.)sources", word):
                continue
            found.append(f"{path.relative_to(ROOT)}: {word}")
    return found


def test_one_meaning_per_word_sources_in_the_code():
    """Issue 39 item 4: "sources" are the trace backends ``import --from`` pulls from
    (tracegrade/sources/) and nothing else: where a span's field was read is its origin
    (SpanView.origins), where a convention map looks a location, the evidence holding a
    supported value its ``evidence`` (faithfulness details), the config files read
    ``config_files``, who wrote a follow-up ``written_by`` / ``followup_writers``;
    ``config_sources`` and ``followup_sources`` are only read, from documents written before."""
    assert _sources_words() == [
        "tracegrade/run_document.py: config_sources",  # RunMeta's read alias
        "tracegrade/run_document.py: config_sources",  # its description
        "tracegrade/run_document.py: followup_sources",  # AttemptEntry's read alias
        "tracegrade/run_document.py: followup_sources",  # its description
        "tracegrade/run_document.py: config_sources",  # RENAMED_FIELDS
        "tracegrade/run_document.py: followup_sources",
    ]


def test_one_meaning_per_word_source_where_a_field_was_read_is_its_origin():
    """Issue 39 item 4: where normalising read a span's field or role is its origin
    (SpanView.origins and role_origin, inspect --explain's read_from and role_origin), where a
    convention map looks a location; neither is called a source."""
    from dataclasses import fields

    from tracegrade.normalize.explain import FieldOrigin, SpanRole
    from tracegrade.normalize.view import SpanView

    named = [f.name for c in (FieldOrigin, SpanRole, SpanView) for f in fields(c)]
    # data_source: the retrieval's, gen_ai.data_source.id (GenAI semconv)
    assert [name for name in named if "source" in name] == ["data_source"]


def test_one_meaning_per_word_sources_the_config_files_are_config_files():
    """Issue 39 item 4: the config files a run read are ``Config.files`` and the run
    document's ``run.config_files`` (``config_sources`` is read from documents written before,
    never written)."""
    from dataclasses import fields

    from tracegrade.config import Config
    from tracegrade.run_document import RENAMED_FIELDS, RunMeta

    assert [f.name for f in fields(Config) if "source" in f.name] == []
    assert [name for name in RunMeta.model_fields if "source" in name] == ["trace_source"]
    assert RENAMED_FIELDS["run"] == {"config_sources": "config_files"}


def test_one_meaning_per_word_evaluator():
    """Issue 39 item 4: an evaluator is what scored a run (scoring.identity.Evaluator, the
    run document's ``evaluator``, ``gen_ai.evaluation.evaluator.*``); the pytest plugin's
    ``tracegrade`` fixture is a CaseChecker."""
    assert _classes_by_name("Evaluator") == {"Evaluator": ["tracegrade/scoring/identity.py"]}


SAME_CONCEPT = {
    "Clarifier": (
        "runner.conversation.Clarifier is the Protocol of judge.clarify.Clarifier: what "
        "JudgeClarifications asks of it (follow_up), so a test can give a scripted one"
    ),
    "_Strict": (
        "config._Strict and dataset.cases._Strict: the same private base, a pydantic model "
        "of a file format refusing unknown keys (extra='forbid'), one per format's module"
    ),
}
"""Class names defined in several modules of tracegrade for one concept, and why."""


def test_one_meaning_per_class_name():
    """Issue 39 item 4: a class name defined in two modules of tracegrade names one concept
    (:data:`SAME_CONCEPT`, each with its reason); two meanings get two names."""
    twice: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                twice.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    twice = {name: where for name, where in twice.items() if len(where) > 1}
    assert {name: where for name, where in twice.items() if name not in SAME_CONCEPT} == {}
    assert sorted(SAME_CONCEPT.keys() - twice.keys()) == []  # the list is kept current
