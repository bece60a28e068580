"""Issue 35, "install like a library": tracegrade's wheel (``pip wheel .``) installed into a
fresh virtualenv outside the clone is a working ``tracegrade``: it scores a user's own OTLP
file with the user's own dataset, runs the user's own agent, and collects OTLP; the base
install is at most 250 MB of site-packages and holds none of the extras' libraries, and a
command whose extra is missing exits 2 naming its ``pip install`` line.

The user's agent and dataset (``user_agent.py``, ``user_dataset.yaml``) are copied into a
temporary directory, the commands run there with the virtualenv's own interpreter and no
``PYTHONPATH``, so nothing of the clone can be imported. Building the wheel and installing it
with its dependencies from PyPI takes about a minute: one virtualenv serves every test here."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
MAX_BASE_MB = 250
EXTRAS_LIBRARIES = ("jinja2", "argon2", "psycopg", "numpy", "scipy", "statsmodels", "matplotlib")


class Installed:
    """The fresh virtualenv and a user's project directory beside it."""

    def __init__(self, venv: Path, project: Path):
        self.venv = venv
        self.project = project
        self.python = venv / "bin" / "python"
        self.tracegrade = venv / "bin" / "tracegrade"
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TRACEGRADE_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))
        } | {"COLUMNS": "160"}

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.tracegrade), *args],
            cwd=self.project,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def agent(self, question: str, **env: str) -> str:
        done = subprocess.run(
            [str(self.python), "user_agent.py"],
            cwd=self.project,
            env=self.env | env,
            input=question,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(base / "dist"), str(ROOT)], check=True)
    [wheel] = (base / "dist").glob("tracegrade-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    venv_pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*venv_pip, "install", str(wheel)], check=True)
    project = base / "my-agent"
    project.mkdir()
    for name in ("user_agent.py", "user_dataset.yaml"):
        shutil.copy(HERE / name, project / name)
    return Installed(venv, project)


def _site_packages(venv: Path) -> Path:
    [site] = (venv / "lib").glob("python3.*/site-packages")
    return site


def test_the_base_install_is_at_most_250_mb_without_the_extras(installed):
    site = _site_packages(installed.venv)
    size_mb = (
        int(
            subprocess.run(
                ["du", "-sk", str(site)], capture_output=True, text=True, check=True
            ).stdout.split()[0]
        )
        / 1024
    )
    print(f"base install: {size_mb:.0f} MB of site-packages")
    assert size_mb <= MAX_BASE_MB, f"{size_mb:.0f} MB of site-packages > {MAX_BASE_MB} MB"
    present = [name for name in EXTRAS_LIBRARIES if (site / name).exists()]
    assert present == []
    where = subprocess.run(
        [str(installed.python), "-c", "import tracegrade; print(tracegrade.__file__)"],
        cwd=installed.project,
        env=installed.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert Path(where.strip()).is_relative_to(site)  # the wheel's, not the clone's


def test_score_a_users_own_otlp_file_with_their_dataset(installed):
    for question in ("What is the weather in Lima?", "Will it rain in Paris?"):
        installed.agent(question, AGENT_OTLP_FILE="traces.jsonl")
    done = installed.run("score", "traces.jsonl", "--dataset", "user_dataset.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed 2/2 (100%)" in done.stdout
    assert (installed.project / ".tracegrade" / "tracegrade.db").is_file()


def test_run_a_users_own_agent(installed):
    done = installed.run(
        "run", "user_dataset.yaml", "--agent-cmd", f"{installed.python} user_agent.py", "--no-save"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed 2/2 (100%)" in done.stdout


def test_collect_receives_the_agents_spans(installed):
    collect = subprocess.Popen(
        [str(installed.tracegrade), "collect", "--db", "collected.db"]
        + ["--grpc-port", "0", "--http-port", "0"],
        cwd=installed.project,
        env=installed.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = collect.stdout.readline() if collect.stdout else ""
        assert "ready" in ready, ready
        http = ready.split("OTLP/HTTP ")[1].split(",")[0]
        installed.agent(
            "What is the weather in Lima?", OTEL_EXPORTER_OTLP_ENDPOINT=f"http://{http}"
        )
    finally:
        collect.send_signal(signal.SIGINT)
        collect.communicate(timeout=60)
    done = installed.run("inspect", "--db", "collected.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "get_weather" in done.stdout and "18°C and overcast" in done.stdout


def test_a_command_without_its_extra_names_the_pip_line(installed):
    done = installed.run("ui", "--db", "collected.db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "pip install 'tracegrade[ui]'" in done.stderr
