"""Sphinx configuration of tracegrade's docs: Markdown pages (MyST), the Python API from the
docstrings (autodoc, which reads their Sphinx roles as they are), the file schemas from the
pydantic models (autodoc-pydantic) and the command reference from the click commands
(sphinx-click). Built by ``.ci/run`` with warnings as errors:

    .venv/bin/sphinx-build -W --keep-going -b html docs out/docs
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from tracegrade.version import __version__  # noqa: E402

project = "tracegrade"
author = "tracegrade contributors"
copyright = "tracegrade contributors, Apache-2.0"
version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
    "sphinxcontrib.autodoc_pydantic",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "_generated"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"tracegrade {__version__}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

autodoc_pydantic_model_show_json = False
autodoc_pydantic_model_show_config_summary = False
autodoc_pydantic_model_show_validator_summary = False
autodoc_pydantic_model_show_validator_members = False
autodoc_pydantic_model_show_field_summary = False
autodoc_pydantic_field_list_validators = False
autodoc_pydantic_model_member_order = "bysource"


def _write_json_schemas(app: object) -> None:
    """The JSON Schemas the reference pages include, from the models themselves."""
    import json

    from tracegrade import run_document, trace

    out = Path(__file__).parent / "_generated"
    out.mkdir(exist_ok=True)
    for name, schema in (
        ("agent-trace", trace.json_schema()),
        ("run-document", run_document.json_schema()),
    ):
        text = json.dumps(schema, indent=2, sort_keys=True) + "\n"
        path = out / f"{name}.schema.json"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def setup(app: object) -> None:
    app.connect("builder-inited", _write_json_schemas)  # type: ignore[attr-defined]
