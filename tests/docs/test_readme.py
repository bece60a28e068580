"""Issue 27: the README stays a front page (at most 200 lines: the pitch, the two commands, a
short tour, links), and every link it makes into the docs leads to a page that exists. A new
section belongs in ``docs/``, linked from here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
README = ROOT / "README.md"
MAX_LINES = 200


def test_the_readme_is_at_most_200_lines():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, (
        f"README.md has {lines} lines (at most {MAX_LINES}): move the new section into docs/ "
        "and link it from the README's Documentation table"
    )


def test_every_link_into_the_docs_leads_to_a_page():
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text(encoding="utf-8"))
    assert len(links) > 20
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing


def test_every_guide_and_reference_page_is_linked_from_the_readme():
    text = README.read_text(encoding="utf-8")
    pages = [
        p.relative_to(ROOT).as_posix()
        for folder in ("getting-started", "concepts", "guides")
        for p in sorted((ROOT / "docs" / folder).glob("*.md"))
    ]
    assert [p for p in pages if f"]({p})" not in text] == []
