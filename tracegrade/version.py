"""tracegrade's version (recorded in every run document and trace it writes)."""

__version__ = "0.1.0"
"""The package version, as ``pyproject.toml`` declares it (a test checks they agree)."""
