"""SpanView.has_key_prefix: the NUL-joined key gate agrees with a per-key scan."""

from __future__ import annotations

import pytest

from tracegrade.normalize.view import SpanView
from tracegrade.spans import Span


def _view(attributes: dict) -> SpanView:
    return SpanView(Span("t" * 32, "s" * 16, None, "span", 1, 0, 1, attributes=attributes))


@pytest.mark.parametrize(
    "keys",
    [
        [],
        ["gen_ai.system"],
        ["agent_framework.x", "gen_ai.prompt.0.role"],
        ["x\0gen_ai.prompt.0", "other"],  # a NUL inside a key: no false positive
        ["\0gen_ai.", "gen_ai"],
        ["a", "", "gen_ai.completion.1.content"],
    ],
)
@pytest.mark.parametrize(
    "prefix", ["gen_ai.", "gen_ai.prompt.", "gen_ai.completion.", "agent_framework.", ""]
)
def test_has_key_prefix_matches_scan(keys, prefix):
    view = _view(dict.fromkeys(keys, "v"))
    expected = any(key.startswith(prefix) for key in keys)
    assert view.has_key_prefix(prefix) is expected
    assert view.has_key_prefix(prefix) is expected  # the cached key text answers the same
