"""What every benchmark script's ``main`` does with its figures.

Each script parses its own arguments, runs, and hands the result here: printed as indented
JSON with ``--json`` (for the README figures and the smoke tests), else as its table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def report(result: T, as_json: bool, table: Callable[[T], None]) -> int:
    """Print ``result`` (JSON-serialisable) as indented JSON when ``as_json``, else with
    ``table``; returns 0, the script's exit code."""
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        table(result)
    return 0
