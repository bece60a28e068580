#!/usr/bin/env python3
"""Print the Nth ```bash code block of README.md (1-based), so CI runs the README's commands
exactly as written instead of a copy that can drift.

    python3 .ci/readme_command.py 1    # the main job
    python3 .ci/readme_command.py 2    # the tests
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

BLOCK = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def block(readme: str, number: int) -> str:
    """The ``number``-th (1-based) bash block of ``readme``; SystemExit naming it when absent."""
    blocks = BLOCK.findall(readme)
    if not 1 <= number <= len(blocks):
        raise SystemExit(f"README.md has {len(blocks)} bash blocks, not {number}")
    return blocks[number - 1].strip()


if __name__ == "__main__":
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    print(block(readme, int(sys.argv[1]) if len(sys.argv) > 1 else 1))
