"""Run the code examples of the docs (``docs/**/*.md``) and of ``README.md`` as tests.

Sybil (a library for testing documentation examples) finds the fenced code blocks; this
module says how each kind runs. Every block of these languages runs, in the order of its
page, in one working directory per page that holds the repository's shipped data
(``datasets/``, ``examples/``, ``config/``, ``benchmarks/``, ``deploy/``, ``tests/``) and
``.venv`` (this interpreter's environment), so a command is written exactly as a reader types
it from a clone (``.venv/bin/tracegrade ...``) and what it writes (``out/``,
``.tracegrade/``) stays in the temporary directory:

- ``bash``: run by ``bash -euo pipefail``, so it stops at the first failing command; its
  status must be 0, or N when the fence says ``exit=N`` (```` ```bash exit=1 ````). With
  ``model=ecommerce`` (or ``model=ecommerce:VARIANT``) the example shop agent's calls go to the
  scripted model of :mod:`tests.support.ecommerce_model` (``OPENAI_BASE_URL``), so a command
  written for a real model and key runs here without either.
- ``python``: executed in the page's namespace (blocks of a page share it). With
  ``file=PATH`` the block is written to PATH instead (and compiled), for a later block to use.
- ``yaml``: ``dataset`` loads it with :func:`tracegrade.load_dataset`, ``config`` with
  :func:`tracegrade.load_config`, anything else must parse as YAML. ``file=PATH`` writes it
  to PATH first (so later commands read it).
- ``json``: must parse.
- ``javascript``: ``file=PATH`` writes it to PATH; it must pass ``node --check`` (skipped
  without node).

A block that cannot run here (it needs an API key, a network or a server left running) is
preceded by ``<!-- skip: next "why" -->``: Sybil skips it, and :func:`skip_reasons` checks
that every skip gives its reason. Blocks of other languages (``text``, ``console``,
``python-console``, none) are output and are not run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import SkipParser
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

ROOT = Path(__file__).parents[2]
SHIPPED = ("datasets", "examples", "config", "benchmarks", "deploy", "tests")
RUNNABLE = ("bash", "python", "yaml", "json", "javascript")
TIMEOUT_S = 120

_INFO = re.compile(
    r"(?P<language>bash|python|yaml|json|javascript)(?P<options>[ \t][^\n]*)?$\n", re.M
)
_SKIP = re.compile(r"<!--\s*skip:\s*(?P<action>\w+)(?P<reason>[^>]*?)\s*-->")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, the words after it, and its text."""

    language: str
    options: dict[str, str]
    source: str


def _options(text: str | None) -> dict[str, str]:
    """``exit=1 file=a.py dataset`` -> ``{"exit": "1", "file": "a.py", "dataset": ""}``."""
    words = shlex.split(text or "")
    return dict(w.split("=", 1) if "=" in w else (w, "") for w in words)


def _blocks(document: Document) -> Iterator[Region]:
    lexer = RawFencedCodeBlockLexer(info_pattern=_INFO)
    for region in lexer(document):
        lexemes = region.lexemes
        block = Block(lexemes["language"], _options(lexemes["options"]), str(lexemes["source"]))
        yield Region(region.start, region.end, block, evaluate)


@dataclass
class Page:
    """A page's working directory and what its examples left there."""

    workdir: Path
    env: dict[str, str] = field(default_factory=dict)


def prepare(workdir: Path) -> Page:
    """A working directory with the shipped data and ``.venv`` linked in."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED:
        (workdir / name).symlink_to(ROOT / name, target_is_directory=True)
    (workdir / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACEGRADE_", "OPENAI_"))}
    env.update(PYTHONPATH=str(workdir), PYTHONDONTWRITEBYTECODE="1")
    return Page(workdir, env)


@contextmanager
def _inside(page: Page) -> Iterator[None]:
    before, saved = Path.cwd(), {k: os.environ.get(k) for k in ("TRACEGRADE_DB",)}
    os.chdir(page.workdir)
    os.environ.pop("TRACEGRADE_DB", None)
    sys.path.insert(0, str(page.workdir))
    try:
        yield
    finally:
        sys.path.remove(str(page.workdir))
        os.chdir(before)
        os.environ.update({k: v for k, v in saved.items() if v is not None})


def _where(example: Example) -> str:
    return f"{Path(example.path).relative_to(ROOT)}:{example.line}"


def _write(page: Page, block: Block) -> Path | None:
    if "file" not in block.options:
        return None
    path = page.workdir / block.options["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.source, encoding="utf-8")
    return path


@contextmanager
def _model(block: Block) -> Iterator[dict[str, str]]:
    """The environment that points the shop agent at the scripted model, when asked for."""
    if "model" not in block.options:
        yield {}
        return
    from tests.support.ecommerce_model import ecommerce_model
    from tests.support.openai_server import ScriptedOpenAI
    from tests.support.weather_model import weather_model

    name, _, variant = block.options["model"].partition(":")
    assert name in ("ecommerce", "weather"), f"unknown model={name!r} (ecommerce, weather)"
    script = ecommerce_model(variant or "good") if name == "ecommerce" else weather_model
    with ScriptedOpenAI(script) as server:  # type: ignore[arg-type]
        yield {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "scripted",
            "OPENAI_MODEL": "gpt-4o-mini",
        }


NODE_PROJECT = ROOT / "tests" / "frameworks" / "js" / "js-openai-otel"
"""The pinned npm project whose ``node_modules`` a ``node`` block uses."""


def _skip_or_fail(message: str) -> None:
    if os.environ.get("TRACEGRADE_REQUIRE_FRAMEWORKS") == "1":
        raise AssertionError(message)
    raise unittest.SkipTest(message)


def _node_modules(page: Page) -> None:
    """Link the pinned project's ``node_modules`` into the page's directory (once)."""
    modules = NODE_PROJECT / "node_modules"
    if shutil.which("node") is None:
        _skip_or_fail("node is not installed")
    if not modules.is_dir():
        _skip_or_fail(
            f"{modules} is missing: make it with "
            "python3 tests/frameworks/record.py --prepare-only js-openai-otel"
        )
    link = page.workdir / "node_modules"
    if not link.exists():
        link.symlink_to(modules, target_is_directory=True)


def _bash(page: Page, block: Block, where: str) -> None:
    if "node" in block.options:
        _node_modules(page)
    with _model(block) as model_env:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.source],
            cwd=page.workdir,
            env={**page.env, **model_env},
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    expected = int(block.options.get("exit", "0"))
    if done.returncode != expected:
        raise AssertionError(
            f"{where}: exit {done.returncode}, expected {expected}\n$ {block.source}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


def _python(page: Page, block: Block, where: str, namespace: dict[str, Any]) -> None:
    code = compile(block.source, where, "exec")
    if _write(page, block) is None:
        with _inside(page):
            exec(code, namespace)


def _yaml(page: Page, block: Block, where: str) -> None:
    from tracegrade import load_config, load_dataset

    path = _write(page, block) or page.workdir / ".example.yaml"
    if path.name == ".example.yaml":
        path.write_text(block.source, encoding="utf-8")
    with _inside(page):
        if "dataset" in block.options:
            load_dataset(path)
        elif "config" in block.options:
            load_config(path)
        else:
            yaml.safe_load(block.source)


def _javascript(page: Page, block: Block, where: str) -> None:
    path = _write(page, block) or page.workdir / ".example.cjs"
    if path.name == ".example.cjs":
        path.write_text(block.source, encoding="utf-8")
    if shutil.which("node") is None:
        raise unittest.SkipTest("node is not installed")
    done = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, f"{where}: node --check failed\n{done.stderr[-3000:]}"


def evaluate(example: Example) -> None:
    """Run one block (see the module docstring)."""
    block: Block = example.parsed
    page: Page = example.namespace["__page__"]
    where = _where(example)
    if block.language == "bash":
        _bash(page, block, where)
    elif block.language == "python":
        _python(page, block, where, example.namespace)
    elif block.language == "yaml":
        _yaml(page, block, where)
    elif block.language == "javascript":
        _javascript(page, block, where)
    else:
        _write(page, block)
        json.loads(block.source)


SYBIL = Sybil(parsers=[_blocks, SkipParser()], patterns=["*.md"])


def documents() -> list[Path]:
    """README.md and every page of the docs, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def skip_reasons(path: Path) -> list[tuple[int, str]]:
    """Each ``skip: next`` / ``skip: start`` comment of a page: (line, its reason, "" when
    it gives none)."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _SKIP.finditer(text):
        if match.group("action") in ("next", "start"):
            reason = match.group("reason").strip().strip("\"'")
            found.append((text.count("\n", 0, match.start()) + 1, reason))
    return found
