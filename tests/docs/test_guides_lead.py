"""Issue 35, defect 9: the receiving-OTLP and production-scoring guides lead with the commands
a user needs (a shell block before any other section); the receiving guide keeps measurements
and their history on the performance page, linked, not dated in the guide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"


@pytest.mark.parametrize("name", ["receiving-otlp.md", "production-scoring.md"])
def test_a_guide_leads_with_its_commands(name: str) -> None:
    text = (GUIDES / name).read_text()
    first_block = text.index("```bash")
    assert first_block < text.index("\n## ") and text[:first_block].count("\n") <= 6
    assert "tracegrade " in text[first_block : text.index("```", first_block + 7)]


def test_the_receiving_guide_holds_no_dated_measurements() -> None:
    text = (GUIDES / "receiving-otlp.md").read_text()
    assert not re.search(r"\d\d:\d\d(-\d\d:\d\d)? UTC|stops? ago|\d{4}-\d\d-\d\d", text)
    assert "(../performance.md)" in text
