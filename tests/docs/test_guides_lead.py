"""Issue 35, defect 9: the receiving-OTLP and production-scoring guides lead with the two
commands a user needs (a shell block before any other section); measurements, their dates and
history live on the performance page and the internals on the architecture page, linked, not in
the guides."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDES = DOCS / "guides"

# the two commands each guide opens with: the receiver and what feeds or reads it
LEAD_COMMANDS = {
    "receiving-otlp.md": ("tracegrade collect", "OTEL_EXPORTER_OTLP_ENDPOINT="),
    "production-scoring.md": ("tracegrade collect", "tracegrade score --follow"),
}
# a measurement's date or time of day (an example output's timestamp, 2026-11-23T09:00:00Z, is
# not one), or its history
DATED = re.compile(r"\d\d:\d\d(-\d\d:\d\d)? UTC|stops? ago|\d{4}-\d\d-\d\d(?!T)|[Aa]n earlier run")


def _first_block(text: str) -> tuple[int, str]:
    start = text.index("```bash")
    return start, text[start : text.index("```", start + 7)]


@pytest.mark.parametrize("name", sorted(LEAD_COMMANDS))
def test_a_guide_leads_with_its_two_commands(name: str) -> None:
    text = (GUIDES / name).read_text()
    start, block = _first_block(text)
    assert start < text.index("\n## ") and text[:start].count("\n") <= 6
    commands = [line for line in block.splitlines()[1:] if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    for command, expected in zip(commands, LEAD_COMMANDS[name], strict=True):
        assert expected in command


@pytest.mark.parametrize("name", sorted(LEAD_COMMANDS))
def test_a_guide_holds_no_dated_measurements_and_links_them(name: str) -> None:
    text = (GUIDES / name).read_text()
    assert not DATED.search(text), DATED.search(text)
    assert "(../performance.md" in text


def test_the_production_guide_leaves_its_internals_to_the_architecture_page() -> None:
    guide = (GUIDES / "production-scoring.md").read_text()
    architecture = (DOCS / "architecture.md").read_text()
    for internal in ("FOR UPDATE SKIP", "statement_timestamp()", "014_score_queue"):
        assert internal not in guide and internal in architecture
    assert "(../architecture.md#every-trace-scored-exactly-once)" in guide


def test_the_receiving_guide_leaves_the_memory_bound_internals_to_the_architecture_page() -> None:
    guide = (GUIDES / "receiving-otlp.md").read_text()
    architecture = (DOCS / "architecture.md").read_text()
    for internal in ("malloc_trim", "length bytes", "decoded message then too"):
        assert internal not in guide and internal in architecture
    assert "(../architecture.md#receiver-memory-bound)" in guide
