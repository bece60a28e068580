"""Lazily imported public names of a package (PEP 562), so importing a package for one of its
modules does not import all of them (the command line stays fast).

A package's ``__init__`` declares its public names once::

    _EXPORTS = {"score": "tracegrade.pipeline._score", ...}
    __all__ = list(_EXPORTS)
    __getattr__, __dir__ = lazy(_EXPORTS)

and names them again under ``TYPE_CHECKING`` for type checkers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy(exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of a package whose public names are ``exports`` (name ->
    module defining it): a name's module is imported on first use."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(name)
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
