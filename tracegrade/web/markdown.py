"""Markdown in trace content (the user's and the agent's messages), rendered safely.

markdown-it-py (CommonMark plus tables and strikethrough, the ``js-default`` preset) with raw
HTML off: every ``<`` in a message becomes ``&lt;``, so a message cannot add an element, a
script or an attribute. Links keep markdown-it's URL check (no ``javascript:``,
``vbscript:``, ``file:`` or non-image ``data:`` URLs) and open nothing of this server's:
``rel="nofollow noopener noreferrer"``. Images are shown as links (``image: ALT``), never
loaded (the Content-Security-Policy would refuse them anyway). Single newlines are line
breaks, as chat messages are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

REL = "nofollow noopener noreferrer"


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
    md = MarkdownIt("js-default", {"html": False, "linkify": False, "breaks": True})
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MD = _parser()


def render_markdown(text: str | None) -> Markup:
    """``text`` (Markdown, untrusted) as HTML that is safe to insert; "" for None."""
    if not text:
        return Markup("")
    return Markup(_MD.render(text))  # noqa: S704 - html off: markdown-it escapes every tag
