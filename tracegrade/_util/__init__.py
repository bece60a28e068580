"""Helpers that are no part of tracegrade's vocabulary, shared by several packages: untrusted
YAML and JSON parsed within bounds (:mod:`.bounded`), users' regular expressions compiled by
RE2 (:mod:`.user_regex`), uvicorn's HTTP protocol with limits (:mod:`.http_guard`), and a
package's public names imported on first use (:mod:`.lazy_import`). They import no package of
tracegrade."""
