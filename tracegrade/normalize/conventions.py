"""Convention maps: which attribute of a span holds which field, as data.

Every convention tracegrade reads (GenAI semconv, OpenInference, OpenLLMetry, the Vercel AI
SDK, Google ADK, pydantic-ai, Logfire, any-agent, Agent Framework...) is one map, a YAML file
in ``tracegrade/normalize/maps/``; :mod:`.reader` reads every span through them. A team with
an in-house tracer writes a map of its own and passes it with ``--conventions FILE`` (or
``TRACEGRADE_CONVENTIONS``, or a package's ``tracegrade.conventions`` entry point naming a
file): no code. The format (every key but ``name`` optional)::

    name: acme-tracer                 # unique; shown by `inspect --explain` and lint
    about: what convention, and where it is specified
    applies:                          # the map reads a span that has any of these
      keys: [acme.kind]               #   an attribute key
      key_prefixes: ["acme."]         #   a key starting so
      scopes: [acme]                  #   an instrumentation scope name starting so
      names: ["acme."]                #   a span name starting so
    role:                             # the first rule that matches gives the span's role
      - key: acme.kind                #   llm | tool | agent | workflow | retriever
        values: {model: llm, tool: tool, agent: agent}
      - key: acme.tool                #   the key present (non-empty): this role
        role: tool
      - key_prefix: "acme.llm."       #   a key starting so: this role
        role: llm
      - name_prefix: {"Agent run:": agent}   # the span name (or template_key's value) starts so
        template_key: logfire.msg_template
    fields:                           # field: [locations], the first non-empty one wins
      model: [acme.model]
      input_messages: [acme.messages]
    roles:                            # fields read only on spans of one role
      tool: {tool_name: [acme.tool], tool_arguments: [acme.args], tool_result: [acme.result]}
    payloads:                         # attributes holding a whole payload, read by its shape
      - {key: acme.request, as: request}     # request | response | usage
    events:                           # log records / span events named so
      - names: [acme.llm.details]
        fields: {output_messages: [acme.output]}   # locations: the event's attributes
    aggregated_usage: [agent, workflow]    # usage on these roles sums their children
    empty: ["{}", "N/A"]              # values that mean "not recorded"

A location is an attribute key, or ``{key: K, as: DECODER}`` to read it otherwise than the
field's default, ``{flattened: PREFIX}`` for indexed keys (``PREFIX0.role``...), or
``{span_name: true}`` / ``{span_name: REGEX}`` (the span's name, or the regex's ``value``
group). Fields and their default decoders are :data:`FIELDS`; decoders are named in
:mod:`.decoders`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tracegrade.environment import TRACEGRADE_CONVENTIONS
from tracegrade.errors import InputError

Role = Literal["agent", "llm", "tool", "workflow", "retriever"]
ROLES: tuple[Role, ...] = ("agent", "llm", "tool", "workflow", "retriever")

FIELDS: dict[str, str] = {
    "model": "text",
    "provider": "text",
    "agent_name": "text",
    "conversation_id": "text",
    "response_id": "text",
    "finish_reasons": "finish",
    "input_tokens": "int",
    "output_tokens": "int",
    "cached_input_tokens": "int",
    "aggregated_input_tokens": "int",
    "aggregated_output_tokens": "int",
    "input_messages": "messages",
    "output_messages": "output_messages",
    "system_instructions": "system",
    "input_text": "input",
    "input_fields": "string_fields",
    "output_text": "output",
    "response_text": "text",
    "response_tool_calls": "tool_calls",
    "tool_name": "text",
    "tool_call_id": "call_id",
    "tool_arguments": "arguments",
    "tool_result": "result",
    "tool_error": "error",
    "retrieval_query": "query",
    "documents": "documents",
    "data_source": "text",
}
"""The fields a map can fill, with each one's default decoder (:mod:`.decoders`).
``response_text`` / ``response_tool_calls`` make the output message of a response recorded
field by field; ``aggregated_*_tokens`` are usage summed over a run (never added to its
calls')."""

PAYLOADS = ("request", "response", "usage", "legacy_messages", "messages_or_response")
"""What a ``payloads`` entry can be read as (:mod:`.payloads`, :mod:`.decoders`)."""

ENTRY_POINT_GROUP = "tracegrade.conventions"
"""Entry points in this group name a map file (``package.module:maps/acme.yaml``)."""
ENV_VAR = TRACEGRADE_CONVENTIONS
"""Map files to add, separated by the path separator (``os.pathsep``)."""


class _MapModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class FieldLocation(_MapModel):
    """Where a field's value is: an attribute ``key``, ``flattened`` indexed keys, or the
    span's name (``span_name: true`` or a regex with a ``value`` group)."""

    key: str | None = None
    flattened: str | None = None
    span_name: bool | str | None = None
    decoder: str | None = Field(default=None, alias="as")

    @field_validator("span_name")
    @classmethod
    def _regex(cls, value: bool | str | None) -> bool | str | None:
        if isinstance(value, str):
            pattern = re.compile(value)
            if "value" not in pattern.groupindex:
                raise ValueError("a span_name regex needs a (?P<value>...) group")
        return value


def _locations(value: Any) -> Any:
    if isinstance(value, (str, dict)):
        value = [value]
    return [{"key": v} if isinstance(v, str) else v for v in value or ()]


class Applies(_MapModel):
    keys: tuple[str, ...] = ()
    key_prefixes: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    names: tuple[str, ...] = ()


class RoleRule(_MapModel):
    """``key`` + ``values`` (the value, case-insensitive, mapped to a role), ``key`` + ``role``
    (the key present), or ``name_prefix`` (span name prefixes; ``template_key`` reads the
    name from an attribute instead)."""

    key: str | None = None
    key_prefix: str | None = None
    """With ``role``: some key starts so."""
    values: dict[str, Role | None] | None = None
    role: Role | None = None
    name_prefix: dict[str, Role] | None = None
    template_key: str | None = None
    requires_any: tuple[str, ...] = ()
    """The rule holds only when one of these keys is present too."""


class Payload(_MapModel):
    key: str
    decoder: str = Field(alias="as")
    role: Role | None = None
    """Read only on spans of this role (any role when absent)."""

    @field_validator("decoder")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in PAYLOADS:
            raise ValueError(f"unknown payload {value!r}: one of {', '.join(PAYLOADS)}")
        return value


class EventRule(_MapModel):
    names: tuple[str, ...]
    fields: dict[str, list[FieldLocation]] = Field(default_factory=dict)
    decoder: str | None = Field(default=None, alias="as")

    _normal = field_validator("fields", mode="before")(
        classmethod(lambda cls, v: {k: _locations(s) for k, s in (v or {}).items()})
    )


def _check_fields(value: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(value) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}: one of {', '.join(FIELDS)}")
    return {k: _locations(s) for k, s in value.items()}


class ConventionMap(_MapModel):
    """One convention's map (module docstring)."""

    name: str
    about: str = ""
    applies: Applies = Applies()
    role: tuple[RoleRule, ...] = ()
    fields: dict[str, list[FieldLocation]] = Field(default_factory=dict)
    roles: dict[Role, dict[str, list[FieldLocation]]] = Field(default_factory=dict)
    payloads: tuple[Payload, ...] = ()
    events: tuple[EventRule, ...] = ()
    aggregated_usage: tuple[Role, ...] = ()
    empty: tuple[Any, ...] = ()
    no_id: tuple[str, ...] = ()

    _fields = field_validator("fields", mode="before")(classmethod(lambda cls, v: _check_fields(v)))
    _roles = field_validator("roles", mode="before")(
        classmethod(lambda cls, v: {r: _check_fields(f or {}) for r, f in (v or {}).items()})
    )

    def locations(self) -> Iterable[tuple[str, FieldLocation]]:
        """Every ``(field, location)`` of the map, events' included."""
        for table in (self.fields, *self.roles.values(), *(e.fields for e in self.events)):
            for name, locations in table.items():
                for location in locations:
                    yield name, location


# --- loading -------------------------------------------------------------------------------------

BUILT_IN_ORDER = (
    "google-adk",
    "agent-framework",
    "pydantic-ai",
    "openai-agents",
    "any-agent",
    "vercel-ai",
    "crewai",
    "traceloop",
    "openinference",
    "mlflow",
    "genai-events",
    "genai",
    "genai-legacy",
)
"""Built-in maps, most specific first: a field one map fills is not overwritten by a later
one (a framework's own reading of a span before the generic conventions it also speaks)."""


def _located(error: ValidationError, source: str) -> InputError:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return InputError(f"{where}: {first['msg']}", source=source)


def parse_map(data: Any, source: str) -> ConventionMap:
    """A map from decoded YAML/JSON. Raises :class:`~tracegrade.errors.InputError` naming
    ``source`` and the bad field."""
    if not isinstance(data, Mapping):
        raise InputError("a convention map is a mapping with at least a name", source=source)
    try:
        return ConventionMap.model_validate(data)
    except ValidationError as error:
        raise _located(error, source) from None


def load_map_file(path: str | Path) -> list[ConventionMap]:
    """The maps of one YAML (or JSON) file: one map, or a list of them under ``maps``.

    Raises:
        InputError: the file cannot be read or a map is invalid (file and field named).
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506 (safe)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise InputError(f"cannot read convention map: {error}", source=str(path)) from None
    items = data.get("maps") if isinstance(data, Mapping) and "maps" in data else [data]
    if not isinstance(items, list):
        raise InputError("maps: expected a list of convention maps", source=str(path))
    return [parse_map(item, f"{path} (map {i + 1})") for i, item in enumerate(items)]


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def built_in_maps() -> tuple[ConventionMap, ...]:
    """The shipped maps in :data:`BUILT_IN_ORDER`."""
    folder = resources.files("tracegrade.normalize") / "maps"
    found: dict[str, ConventionMap] = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".yaml"):
            data = yaml.load(entry.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506
            found_map = parse_map(data, f"tracegrade/normalize/maps/{entry.name}")
            found[found_map.name] = found_map
    order = [found.pop(name) for name in BUILT_IN_ORDER if name in found]
    return (*order, *sorted(found.values(), key=lambda m: m.name))


def _entry_point_files() -> list[Path]:
    files = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        module, _, relative = entry.value.partition(":")
        files.append(Path(str(resources.files(module))) / relative)
    return files


def _env_files() -> list[Path]:
    value = os.environ.get(ENV_VAR, "")
    return [Path(p) for p in value.split(os.pathsep) if p.strip()]


@dataclass
class _Registry:
    extra: list[ConventionMap] = field(default_factory=list)


_REGISTRY = _Registry()


def add_map_files(paths: Sequence[str | Path]) -> None:
    """Read these map files before the built-in ones (``--conventions``); a later call adds
    to the earlier. They are also added to :envvar:`TRACEGRADE_CONVENTIONS`, so processes
    started from this one (``--workers``) read with them too.

    Raises:
        InputError: a file cannot be read or holds an invalid map (file and field named).
    """
    for path in paths:
        _REGISTRY.extra.extend(load_map_file(path))
    joined = os.pathsep.join(str(Path(p).resolve()) for p in paths)
    current = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = f"{joined}{os.pathsep}{current}" if current else joined
    active_maps.cache_clear()


def reset_map_files() -> None:
    """Forget maps added by :func:`add_map_files` (tests)."""
    _REGISTRY.extra.clear()
    active_maps.cache_clear()


@lru_cache(maxsize=1)
def active_maps() -> tuple[ConventionMap, ...]:
    """User maps (``--conventions``, ``TRACEGRADE_CONVENTIONS``, entry points) first, then
    the built-in ones: a team's map of its own tracer is the most specific."""
    user = list(_REGISTRY.extra)
    seen = {m.name for m in user}
    for path in [*_env_files(), *_entry_point_files()]:
        user.extend(m for m in load_map_file(path) if m.name not in seen)
    names = {m.name for m in user}
    return (*user, *(m for m in built_in_maps() if m.name not in names))
