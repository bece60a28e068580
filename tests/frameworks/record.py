"""Record a framework's traces against the scripted model: one command per setup.

    python3 tests/frameworks/record.py SETUP [SETUP...]     # or --all
        [--out tests/data/frameworks] [--venvs .venvs] [--prepare-only] [--only SCENARIO,...]

A *setup* is a framework with one instrumentation (and mode), described by
``tests/frameworks/setups/<name>.json``::

    {"name", "language": "python" | "node", "framework", "instrumentation",
     "driver": path under tests/frameworks, "requirements": pinned file (python) |
     "dir": npm project with package.json and package-lock.json (node),
     "env": {extra environment}, "packages": [distributions whose versions are reported],
     "not_recorded": {field: why the framework's spans cannot carry it},
     "scenarios": scenario file under tests/frameworks (default ``scenarios.json``; the RAG
     setups name ``rag_scenarios.json``)}

For each setup this makes its environment if needed (``<venvs>/fw-<requirements stem>`` from
the pinned file, stamped with its hash; ``npm ci`` in the npm project), starts the scripted
model (:mod:`model_server`) and an OTLP/HTTP capture endpoint (:mod:`capture`), runs the
driver with them in its environment, and writes ``<out>/<name>/``: ``traces.binpb.gz`` (and
``logs.binpb.gz``), ``truth.json`` (:mod:`truth`), ``model.jsonl``, ``driver.jsonl`` and
``versions.json``. Standard library only: it runs with any Python 3.11.

Exit status: 0 when every setup recorded, 1 when one failed (its output is still written).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

from capture import CaptureServer  # noqa: E402
from model_server import ModelServer  # noqa: E402
from truth import compute  # noqa: E402

SETUPS = HERE / "setups"
DEFAULT_OUT = REPO / "tests" / "data" / "frameworks"
DEFAULT_VENVS = REPO / ".venvs"
DRIVER_TIMEOUT_S = 900
PROVIDER_ENV = ("ANTHROPIC_", "GOOGLE_", "GEMINI_")  # a shell's own keys: replaced
STAMP = ".fw-stamp"
RECIPE = "1"

# Telemetry that frameworks send home, and settings a developer's shell may carry: off.
QUIET_ENV = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "OTEL_SDK_DISABLED": "false",
    "ANONYMIZED_TELEMETRY": "false",
    "DO_NOT_TRACK": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
    "AGNO_TELEMETRY": "false",
    "TRACELOOP_TELEMETRY": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "AUTOGEN_DISABLE_RUNTIME_TRACING": "false",
    "NO_COLOR": "1",
    "PYTHONUNBUFFERED": "1",
}


def scenarios_path(setup: dict[str, Any]) -> Path:
    """The setup's scenario file (``scenarios.json`` unless the setup names another)."""
    return HERE / setup.get("scenarios", "scenarios.json")


def load_setup(name: str) -> dict[str, Any]:
    path = SETUPS / f"{name}.json"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in SETUPS.glob("*.json")))
        raise SystemExit(f"unknown setup {name!r} (known: {known})")
    setup = json.loads(path.read_text())
    setup.setdefault("name", name)
    return setup


def all_setups() -> list[str]:
    return sorted(p.stem for p in SETUPS.glob("*.json"))


# --- environments ----------------------------------------------------------------------------


def _stamp(requirements: Path) -> str:
    digest = hashlib.sha256(f"recipe={RECIPE}\n".encode() + requirements.read_bytes())
    digest.update(sys.version.split()[0].encode())
    return digest.hexdigest()


def python_env(setup: dict[str, Any], venvs: Path) -> Path:
    """The setup's venv python, created from its pinned requirements when missing or stale."""
    requirements = HERE / setup["requirements"]
    venv = venvs / f"fw-{requirements.stem}"
    python = venv / "bin" / "python"
    stamp = _stamp(requirements)
    if python.exists() and (venv / STAMP).exists() and (venv / STAMP).read_text() == stamp:
        return python
    if venv.exists():
        shutil.rmtree(venv)
    print(f"[{setup['name']}] creating {venv}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-r", str(requirements)], check=True)
    nodeps = requirements.with_name(requirements.stem + "-nodeps.txt")
    if nodeps.exists():
        subprocess.run([*pip, "--no-deps", "-r", str(nodeps)], check=True)
    (venv / STAMP).write_text(stamp)
    return python


def node_env(setup: dict[str, Any]) -> Path:
    """The setup's npm project, installed with ``npm ci`` when ``node_modules`` is stale."""
    project = HERE / setup["dir"]
    lock = project / "package-lock.json"
    stamp_file = project / "node_modules" / STAMP
    stamp = hashlib.sha256(lock.read_bytes()).hexdigest()
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return project
    print(f"[{setup['name']}] npm ci in {project}", flush=True)
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=project, check=True
    )
    stamp_file.write_text(stamp)
    return project


def prepare(setup: dict[str, Any], venvs: Path) -> list[str]:
    """The command that runs the setup's driver (its environment made first)."""
    if setup["language"] == "python":
        return [str(python_env(setup, venvs)), str(HERE / setup["driver"])]
    project = node_env(setup)
    return ["node", str(project / setup["driver"])]


# --- versions --------------------------------------------------------------------------------


def versions(setup: dict[str, Any], command: list[str]) -> dict[str, str]:
    packages = setup.get("packages", [])
    if setup["language"] == "python":
        script = (
            "import json,sys\nfrom importlib.metadata import version\nout={}\n"
            "for p in sys.argv[1:]:\n"
            "    try: out[p]=version(p)\n"
            "    except Exception: out[p]='not installed'\n"
            "print(json.dumps(out))"
        )
        found = subprocess.run(
            [command[0], "-c", script, *packages], capture_output=True, text=True, check=True
        )
        return {**json.loads(found.stdout), "python": _python_version(command[0])}
    lock = json.loads((HERE / setup["dir"] / "package-lock.json").read_text())
    installed = lock.get("packages", {})
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        **{
            p: installed.get(f"node_modules/{p}", {}).get("version", "not installed")
            for p in packages
        },
        "node": node,
    }


def _python_version(python: str) -> str:
    return subprocess.run(
        [python, "-c", "import sys;print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()


# --- recording -------------------------------------------------------------------------------


def driver_env(
    setup: dict[str, Any], model: ModelServer, capture: CaptureServer, work: Path, only: str | None
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "TRACELOOP_", "OPENAI_", "PYTHON", "FW_", "NODE_"))
        and not k.startswith(PROVIDER_ENV)
    }
    env.update(QUIET_ENV)
    env.update(
        {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_BASE": model.base_url,
            "OPENAI_API_KEY": "sk-scripted-model-key",
            # Anthropic's and Gemini's clients take the server's root (provider_formats)
            "ANTHROPIC_BASE_URL": model.root_url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-model-key",
            "GOOGLE_GEMINI_BASE_URL": model.root_url,
            "GEMINI_API_KEY": "scripted-model-key",
            "OTEL_EXPORTER_OTLP_ENDPOINT": capture.endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_SERVICE_NAME": f"fw-{setup['name']}",
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_METRICS_EXPORTER": "none",
            "FW_SCENARIOS": str(scenarios_path(setup)),
            "FW_LOG": str(work / "driver.jsonl"),
            "FW_MODEL": setup.get("model", "gpt-4o-mini"),
            "FW_SETUP": setup["name"],
            "PYTHONPATH": str(HERE),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    if only:
        env["FW_ONLY"] = only
    env.update({k: str(v) for k, v in setup.get("env", {}).items()})
    return env


def record(name: str, out_root: Path, venvs: Path, only: str | None = None) -> bool:
    """Record one setup into ``out_root/name``; True when the driver exited 0."""
    setup = load_setup(name)
    command = prepare(setup, venvs)
    out = out_root / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    scenarios = json.loads(scenarios_path(setup).read_text())
    model = ModelServer(scenarios, out / "model.jsonl").start()
    capture = CaptureServer().start()
    started = time.monotonic()
    try:
        proc = subprocess.run(
            command,
            env=driver_env(setup, model, capture, out, only),
            cwd=str(out),
            capture_output=True,
            text=True,
            timeout=DRIVER_TIMEOUT_S,
        )
        capture.wait_idle()
    finally:
        model.stop()
        capture.stop()
    capture.write(out)
    (out / "driver.log").write_text(
        proc.stdout[-20000:] + "\n--- stderr ---\n" + proc.stderr[-20000:]
    )
    truth = compute(name, out / "model.jsonl", out / "driver.jsonl")
    truth.update(
        {
            "framework": setup.get("framework"),
            "instrumentation": setup.get("instrumentation"),
            "mode": setup.get("mode"),
            "not_recorded": setup.get("not_recorded", {}),
        }
    )
    (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    (out / "versions.json").write_text(json.dumps(versions(setup, command), indent=1) + "\n")
    seconds = time.monotonic() - started
    print(
        f"[{name}] exit {proc.returncode} in {seconds:.1f}s; captured {capture.counts()}; "
        f"{len(truth['turns'])} turn(s)",
        flush=True,
    )
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
    return proc.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("setups", nargs="*")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--venvs", type=Path, default=DEFAULT_VENVS)
    parser.add_argument(
        "--prepare-only", action="store_true", help="make the environments, record nothing"
    )
    parser.add_argument("--only", help="comma-separated scenario ids")
    args = parser.parse_args()
    names = all_setups() if args.all else args.setups
    if not names:
        parser.error(f"name a setup or --all (known: {', '.join(all_setups())})")
    ok = True
    for name in names:
        if args.prepare_only:
            prepare(load_setup(name), args.venvs)
            continue
        try:
            ok = record(name, args.out, args.venvs, args.only) and ok
        except subprocess.CalledProcessError as exc:
            print(f"[{name}] environment failed: {exc}", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
