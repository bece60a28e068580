"""Re-make the shipped demo recording: ``python -m tests.examples.record_replay [FOLDER]``.

The keyless demo (``python -m examples.ecommerce.demo``) replays responses recorded by
:mod:`examples.ecommerce.record`, the one command that records against any OpenAI-compatible
endpoint. The recording shipped in ``examples/ecommerce/recorded/`` was made against the
scripted model of the tests (:mod:`tests.support.ecommerce_model`, ``good`` variant, served by
:class:`~tests.support.openai_server.ScriptedOpenAI`): it calls the tools a good model would
and writes its answers from the tool results, so the recording is the same on every run
(``tests/examples/test_demo.py`` checks the shipped files are what this writes today). The
scripted model stays in the tests; only its recorded answers ship in ``examples/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from examples.ecommerce.record import record
from examples.ecommerce.replay import RECORDED, VARIANTS
from tests.support.ecommerce_model import ecommerce_model
from tests.support.openai_server import ScriptedOpenAI

MODEL = "scripted-shop-model"
"""The model name the recording and the demo use: what answers is a script, not an LLM."""


def record_scripted(folder: Path = RECORDED) -> dict[str, int]:
    """Record every variant from the scripted model into ``folder``; responses per variant.

    Raises:
        click.ClickException: a pass did not complete (nothing of it written).
    """
    counts = {}
    with ScriptedOpenAI(ecommerce_model("good")) as server:
        for name in VARIANTS.values():
            out = folder / f"{name}.jsonl"
            counts[name] = record(server.base_url, "test", MODEL, name != "good", out)
    return counts


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else RECORDED
    for name, count in record_scripted(folder).items():
        print(f"{name}: {count} responses written to {folder / f'{name}.jsonl'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
