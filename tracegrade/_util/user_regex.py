"""Regular expressions written by users and applied to trace text: dataset ``regex:``
argument predicates, ``clarifications`` patterns of ``tracegrade run``, ``dataset build
--redact`` patterns.

They are compiled by RE2 (``google-re2``), whose matching takes time linear in the text
whatever the pattern: with Python's ``re`` a dataset's ``^(a+)+$`` against a 40-character
argument would backtrack for hours and hang ``score``. RE2 has no backreferences (``\\1``)
and no lookaround (``(?=``, ``(?<=``), which are what make backtracking unbounded; a pattern
using them is refused with :class:`UserRegexError` naming it, at load time.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

MAX_PROGRAM_BYTES = 8 * 2**20
"""Memory RE2 may use to compile one pattern (its default); a pattern past it is refused."""


class UserRegexError(ValueError):
    """A user pattern that RE2 cannot compile: the message names it and says why."""


@lru_cache(maxsize=1024)
def compile_user_regex(pattern: str, ignore_case: bool = False) -> Any:
    """``pattern`` compiled by RE2 (``search``, ``match``, ``sub`` ... as with ``re``);
    cached, so a pattern applied to every trace is compiled once.

    Raises:
        UserRegexError: RE2 cannot compile it (a syntax error, a backreference, lookaround,
            or over :data:`MAX_PROGRAM_BYTES` of program).
    """
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.max_mem = MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise UserRegexError(
            f"regular expression {pattern!r} is not supported: {why} (patterns run on RE2, "
            "in time linear in the text: no backreferences such as \\1 and no lookaround "
            "such as (?=...) or (?<=...))"
        ) from None
