"""Markdown in trace content (the user's and the agent's messages), rendered safely.

markdown-it-py (CommonMark plus tables and strikethrough, the ``js-default`` preset) with raw
HTML off: every ``<`` in a message becomes ``&lt;``, so a message cannot add an element, a
script or an attribute. Links keep markdown-it's URL check (no ``javascript:``,
``vbscript:``, ``file:`` or non-image ``data:`` URLs) and open nothing of this server's:
``rel="nofollow noopener noreferrer"``. Images are shown as links (``image: ALT``), never
loaded (the Content-Security-Policy would refuse them anyway). Single newlines are line
breaks, as chat messages are written.

Bounded for hostile text: a message's first :data:`MAX_MARKDOWN_CHARS` characters are
rendered as Markdown and the rest is shown as plain text behind "show all" (a ``<details>``
element: no script), and nesting stops at :data:`MAX_NESTING` levels. markdown-it's time is
linear in the text, but its bracket and emphasis rules cost up to a nesting limit per
character: 20,000 ``![`` took 2.7 s at markdown-it's default limit of 100 (20 such answers
kept a page 28 s), 0.2 s within these bounds. Pages that render Markdown do so in a worker
thread (:func:`tracegrade.web.base.render_offloaded`), never on the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

REL = "nofollow noopener noreferrer"
MAX_MARKDOWN_CHARS = 8_000
"""Characters of one message rendered as Markdown; the rest is plain text behind "show all"."""
MAX_NESTING = 20
"""Deepest nesting of Markdown constructs parsed (markdown-it's ``maxNesting``; its
``js-default`` preset has 100)."""


def _link_open(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", REL)
    return str(self.renderToken(tokens, idx, options, env))


def _image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or ())
    href = escape(token.attrGet("src") or "")
    return f'<a href="{href}" rel="{REL}">image: {escape(alt)}</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt(
        "js-default",
        {"html": False, "linkify": False, "breaks": True, "maxNesting": MAX_NESTING},
    )
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MD = _parser()


def render_markdown(text: str | None) -> Markup:
    """``text`` (Markdown, untrusted) as HTML that is safe to insert; "" for None. Past
    :data:`MAX_MARKDOWN_CHARS`, the rest of the text follows as escaped plain text in a
    closed ``<details>`` ("show all")."""
    if not text:
        return Markup("")
    head, rest = _split(text)
    html = Markup(_MD.render(head))  # noqa: S704 - html off: markdown-it escapes every tag
    if not rest:
        return html
    summary = f"show all ({len(rest):,} more characters)"
    return html + Markup(
        '<details class="md-more"><summary>{}</summary><pre>{}</pre></details>'
    ).format(summary, rest)


def _split(text: str) -> tuple[str, str]:
    """``text`` cut after :data:`MAX_MARKDOWN_CHARS` characters, at the last line break of
    its last quarter when there is one (not inside a paragraph)."""
    if len(text) <= MAX_MARKDOWN_CHARS:
        return text, ""
    cut = text.rfind("\n", MAX_MARKDOWN_CHARS * 3 // 4, MAX_MARKDOWN_CHARS)
    cut = MAX_MARKDOWN_CHARS if cut < 0 else cut + 1
    return text[:cut], text[cut:]
