"""Create the per-instrumentation virtualenvs the trace harness runs in.

    python tests/harness/make_venvs.py [--root DIR] [--jobs N] [NAME...]

For each ``requirements-<NAME>.txt`` beside this file (all of them when no NAME
is given) this creates ``DIR/harness-<NAME>`` (default ``DIR``: ``<repo>/.venvs``)
and pip-installs the file into it; when ``requirements-<NAME>-nodeps.txt``
exists it is installed afterwards with ``--no-deps`` (traceloop, whose full
dependency resolution does not finish). A venv whose stamp file matches the
hash of its requirement files and Python version is skipped, so re-running is
cheap; a stale or broken one is rebuilt from scratch. After installing, a
smoke import checks the venv before the stamp is written.

Standard library only: CI calls this on a fresh machine with nothing but
Python and PyPI. pip's own configuration (index, proxies) applies.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_ROOT = REPO / ".venvs"
STAMP = ".harness-stamp"
RECIPE_VERSION = "1"  # bump to force every venv to be rebuilt

# Modules that must import in each venv (besides the common ones).
SMOKE_IMPORTS = {
    "openai-v2-default": [
        "opentelemetry.instrumentation.openai_v2",
        "opentelemetry.util.genai.handler",
    ],
    "openai-v2-latest": [
        "opentelemetry.instrumentation.openai_v2",
        "opentelemetry.util.genai.handler",
    ],
    "openinference": ["openinference.instrumentation.openai", "openinference.instrumentation"],
    "traceloop": [
        "traceloop.sdk",
        "traceloop.sdk.decorators",
        "opentelemetry.instrumentation.openai",
    ],
    "pydantic-ai": ["pydantic_ai", "pydantic_ai.models.openai", "pydantic_ai.models.instrumented"],
    "backends": ["phoenix.server.main", "mlflow.server", "openinference.instrumentation.openai"],
    "agent-framework": [
        "agent_framework",
        "agent_framework_openai",
        "agent_framework.observability",
    ],
}
COMMON_IMPORTS = [
    "openai",
    "yaml",
    "opentelemetry.sdk.trace",
    "opentelemetry.sdk._logs",
    "opentelemetry.exporter.otlp.proto.common.trace_encoder",
    "opentelemetry.exporter.otlp.proto.common._log_encoder",
]


def available_names() -> list[str]:
    names = []
    for path in sorted(HERE.glob("requirements-*.txt")):
        name = path.name[len("requirements-") : -len(".txt")]
        if not name.endswith("-nodeps"):
            names.append(name)
    return names


def requirement_files(name: str) -> tuple[Path, Path | None]:
    req = HERE / f"requirements-{name}.txt"
    nodeps = HERE / f"requirements-{name}-nodeps.txt"
    return req, (nodeps if nodeps.exists() else None)


def venv_dir(name: str, root: Path | str | None = None) -> Path:
    return Path(root or DEFAULT_ROOT) / f"harness-{name}"


def venv_python(name: str, root: Path | str | None = None) -> Path:
    d = venv_dir(name, root)
    return d / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def expected_stamp(name: str, python: str | None = None) -> str:
    req, nodeps = requirement_files(name)
    h = hashlib.sha256()
    h.update(f"recipe={RECIPE_VERSION}\n".encode())
    h.update(req.read_bytes())
    if nodeps is not None:
        h.update(b"\n--no-deps--\n" + nodeps.read_bytes())
    version = subprocess.run(
        [python or sys.executable, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    h.update(f"\npython={version}\n".encode())
    return h.hexdigest()


def venv_status(
    name: str, root: Path | str | None = None, python: str | None = None
) -> tuple[bool, str]:
    """(ready, reason): whether the venv exists and matches its requirement files."""
    py = venv_python(name, root)
    stamp = venv_dir(name, root) / STAMP
    if not py.exists():
        return False, f"{venv_dir(name, root)} does not exist"
    if not stamp.exists():
        return False, f"{venv_dir(name, root)} has no {STAMP} (incomplete install)"
    if stamp.read_text().strip() != expected_stamp(name, python):
        return False, f"{venv_dir(name, root)} is stale (requirements changed)"
    return True, "ok"


def _run(cmd: list[str], log, env=None) -> None:
    log.write(f"\n$ {' '.join(cmd)}\n")
    log.flush()
    proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"command failed with exit code {proc.returncode}: {' '.join(cmd)}")


def build(name: str, root: Path, python: str, force: bool = False) -> tuple[str, str, float]:
    """Create/refresh one venv. Returns (name, status, seconds)."""
    start = time.monotonic()
    stamp_value = expected_stamp(name, python)
    target = venv_dir(name, root)
    stamp = target / STAMP
    if (
        not force
        and stamp.exists()
        and venv_python(name, root).exists()
        and stamp.read_text().strip() == stamp_value
    ):
        return name, "up to date", time.monotonic() - start
    if target.exists():
        shutil.rmtree(target)
    root.mkdir(parents=True, exist_ok=True)
    log_path = root / f"harness-{name}.log"
    req, nodeps = requirement_files(name)
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    with open(log_path, "w") as log:
        try:
            _run([python, "-m", "venv", str(target)], log)
            py = str(venv_python(name, root))
            pip = [py, "-m", "pip", "install", "--progress-bar", "off"]
            _run(pip + ["-r", str(req)], log, env)
            if nodeps is not None:
                _run(pip + ["--no-deps", "-r", str(nodeps)], log, env)
            mods = COMMON_IMPORTS + SMOKE_IMPORTS.get(name, [])
            _run(
                [
                    py,
                    "-c",
                    "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)",
                ]
                + mods,
                log,
                env,
            )
        except Exception as exc:
            log.write(f"\nFAILED: {exc}\n")
            return name, f"FAILED ({exc}); log: {log_path}", time.monotonic() - start
    stamp.write_text(stamp_value + "\n")
    return name, "created", time.monotonic() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"default: all of {available_names()}"
    )
    parser.add_argument("--root", type=Path, default=None, help=f"default: {DEFAULT_ROOT}")
    parser.add_argument("--jobs", type=int, default=3, help="venvs built in parallel (default 3)")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter for the venvs (default: this one)"
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the stamp matches")
    args = parser.parse_args(argv)

    names = args.names or available_names()
    unknown = [n for n in names if n not in available_names()]
    if unknown:
        parser.error(f"unknown venv name(s) {unknown}; known: {available_names()}")
    root = (args.root or DEFAULT_ROOT).resolve()
    root.mkdir(parents=True, exist_ok=True)
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("# created by tests/harness/make_venvs.py\n*\n")

    print(f"harness venvs under {root}: {', '.join(names)} (jobs={args.jobs})", flush=True)
    t0 = time.monotonic()
    failed = False
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(build, n, root, args.python, args.force) for n in names]
        for fut in concurrent.futures.as_completed(futures):
            name, status, secs = fut.result()
            failed |= status.startswith("FAILED")
            print(f"  harness-{name:<20} {status:<12} {secs:6.1f}s", flush=True)
    print(f"total {time.monotonic() - t0:.1f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
