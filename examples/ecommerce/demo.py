"""Try ``tracegrade run`` without an API key: ``python -m examples.ecommerce.demo``.

From the repository root, installed with the example's extra (``pip install -e
'.[examples]'``: the openai-v2 instrumentation that traces the agent's LLM calls; a plain
``pip install -e .`` is told so), this runs the example shop agent through its golden dataset
(``datasets/ecommerce/golden.yaml``, 23 cases; ``--smoke``: its 5 smoke cases) against a
recorded model (:mod:`examples.ecommerce.replay`: no network, no key), once in each of
``tracegrade run``'s agent styles, and stores every run where ``tracegrade`` keeps them
(``--db``, else ``$TRACEGRADE_DB``, else ``.tracegrade/tracegrade.db``):

1. ``--agent examples.ecommerce.agent:answer``: the agent in process;
2. ``--agent-cmd "python -m examples.ecommerce --messages" --input-format messages``: one
   process per turn, exporting OTLP to the run's receiver;
3. ``--agent-url``: the agent as a running HTTP service (``python -m examples.ecommerce.serve``)
   in the three steps a service needs: a fixed receiver port (``--otlp-http-port``), the
   service's exporter pointed at it (``OTEL_EXPORTER_OTLP_ENDPOINT``), and ``--body`` sending the
   whole conversation for multi-turn cases;
4. the first run marked as the baseline (``tracegrade runs baseline latest`` right after it),
   then the agent against the recording of a regressed model (it states prices 10% below the
   tools' figures) with ``--baseline baseline``: the gate exits 1.

Each command is printed before it runs, as you would type it. Then ``tracegrade runs``,
``compare``, ``history`` and ``ui`` show what was stored. Exit 0 when every step did what it
should (the regressed run is expected to exit 1), 1 otherwise, naming the step.

The recording (``examples/ecommerce/recorded/``) is re-made against any OpenAI-compatible
endpoint with one command, ``OPENAI_API_KEY=... python -m examples.ecommerce.record --upstream
https://api.openai.com/v1 --model gpt-4o-mini`` (:mod:`examples.ecommerce.record`); the one
shipped was recorded from tracegrade's scripted test model, not an LLM.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click

from examples.ecommerce.replay import ReplayServer

ROOT = Path(os.path.abspath(__file__)).parents[2]
"""The folder holding ``examples/`` and ``datasets/`` (the clone, or a folder linking them)."""
MODEL = "scripted-shop-model"
"""The model name the recording was made with: a script, not an LLM (no price is known)."""
BODY = '{"messages": "{messages}"}'
"""``--body`` for the service: the whole conversation each turn (multi-turn cases)."""


def _dataset() -> str:
    """The golden dataset's path as typed: relative from the clone's root, else absolute."""
    path = ROOT / "datasets" / "ecommerce" / "golden.yaml"
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else relative


class StepFailed(Exception):
    """A demo step did not do what it should; the message says which and how."""


def _shown(args: Sequence[str]) -> str:
    """The command as a user would type it (``tracegrade``, ``python``)."""
    words = ["tracegrade", *args[3:]] if list(args[1:3]) == ["-m", "tracegrade"] else list(args)
    return shlex.join("python" if w == sys.executable else w for w in words)


def _tracegrade(args: Sequence[str], env: dict[str, str], expect: tuple[int, ...] = (0,)) -> None:
    """Run ``tracegrade ARGS``, shown first; :class:`StepFailed` unless it exits in ``expect``."""
    command = [sys.executable, "-m", "tracegrade", *args]
    click.secho(f"\n$ {_shown(command)}", bold=True)
    code = subprocess.run(command, env=env, check=False).returncode
    if code not in expect:
        wanted = " or ".join(map(str, expect))
        raise StepFailed(f"`{_shown(command)}` exited {code}, expected {wanted}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _service(env: dict[str, str], receiver_port: int) -> Iterator[str]:
    """The shop agent as an HTTP service exporting to ``receiver_port``; its URL."""
    service_env = {
        **env,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    command = [sys.executable, "-m", "examples.ecommerce.serve", "--port", "0"]
    shown = " ".join(f"{k}={v}" for k, v in service_env.items() if k.startswith("OTEL_"))
    click.secho(f"\n$ {shown} {_shown(command)} &", bold=True)
    process = subprocess.Popen(command, env=service_env, stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("listening on "):
            raise StepFailed(f"the shop service did not start (printed {line!r})")
        click.echo(line.rstrip())
        yield line.removeprefix("listening on ").strip()
    finally:
        process.terminate()
        process.wait(timeout=30)


def _steps(env: dict[str, str], options: list[str], regressed_env: dict[str, str]) -> None:
    run = ["run", _dataset(), "--no-judge", *options]
    db = [arg for arg in options if arg.startswith("--db=")]
    in_process = ["--agent", "examples.ecommerce.agent:answer", "--label", "demo-agent"]
    _tracegrade([*run, *in_process], env)
    _tracegrade(["runs", "baseline", "latest", *db], env)
    command = f"{shlex.quote(sys.executable)} -m examples.ecommerce --messages"
    agent_cmd = ["--agent-cmd", command, "--input-format", "messages", "--label", "demo-agent-cmd"]
    _tracegrade([*run, *agent_cmd], env)
    port = _free_port()
    with _service(env, port) as url:
        http = ["--agent-url", f"{url}/chat", "--otlp-http-port", str(port), "--body", BODY]
        _tracegrade([*run, *http, "--label", "demo-agent-url"], env)
    click.secho("\nNow a regressed model (it states prices from memory); the gate should fail:")
    regressed = ["--agent", "examples.ecommerce.agent:answer", "--label", "demo-regressed"]
    _tracegrade([*run, *regressed, "--baseline", "baseline"], regressed_env, expect=(1,))


def _next_steps(db: str | None) -> str:
    where = f" --db {shlex.quote(db)}" if db else ""
    tg = _tracegrade_command()
    return (
        "\nDone: four runs stored. Look at them:\n"
        f"  {tg} runs{where}                      # newest first\n"
        f"  {tg} compare baseline latest{where}   # the regression, case by case\n"
        f"  {tg} history ecommerce{where}         # the trend\n"
        f"  {tg} ui{where}                        # http://127.0.0.1:8765/\n"
        f"With a real model: OPENAI_API_KEY=... {tg} run datasets/ecommerce/golden.yaml "
        "--agent examples.ecommerce.agent:answer"
    )


def _tracegrade_command() -> str:
    """How to call tracegrade from here: the script beside this Python (``.venv/bin/tracegrade``
    as the README installs it, relative to the working directory when inside it)."""
    script = Path(sys.executable).parent / "tracegrade"
    if not script.exists():
        return "tracegrade"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


@click.command()
@click.option("--db", metavar="PATH|URL", help="Store for the runs (default: tracegrade's).")
@click.option("--smoke", is_flag=True, help="Only the smoke tier (5 cases): a quicker tour.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
def main(db: str | None, smoke: bool, concurrency: int) -> None:
    """Run the shop agent's golden dataset against a recorded model, in each agent style."""
    if importlib.util.find_spec("opentelemetry.instrumentation.openai_v2") is None:
        raise click.UsageError(
            "the example agent needs the examples extra (the openai-v2 instrumentation traces "
            "its LLM calls): pip install -e '.[examples]'"
        )
    options = [f"--concurrency={concurrency}", *(["--smoke"] if smoke else [])]
    options += [f"--db={db}"] if db else []
    server = ReplayServer()
    with server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = {**os.environ, "OPENAI_API_KEY": "replay-needs-no-key", "OPENAI_MODEL": MODEL}
        base["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.getenv("PYTHONPATH")])])
        env = {**base, "OPENAI_BASE_URL": server.base_url()}
        regressed = {**base, "OPENAI_BASE_URL": server.base_url("invented_price")}
        click.echo(f"recorded model (examples/ecommerce/recorded/) on {server.base_url()}")
        try:
            _steps(env, options, regressed)
        except StepFailed as exc:
            click.secho(f"\ndemo failed: {exc}", fg="red", err=True)
            sys.exit(1)
        finally:
            server.shutdown()
    click.echo(_next_steps(db))


if __name__ == "__main__":
    main()
