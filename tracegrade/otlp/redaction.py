"""Secrets removed from OTLP requests and run documents before they are stored, by key and
by form.

The rules are shipped in ``config/redaction.yaml`` (``tracegrade.defaults``): ``keys``, shell
patterns matched case-insensitively against whole keys; ``values``, regular expressions for
secrets by their form; and ``detect_secrets``, plugins of detect-secrets (Yelp's maintained
secret scanner) whose patterns are applied as value rules. :class:`Redactor` applies them to a
decoded ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest`` in place:

- every string of a span (name, status message), event (name), link, resource, scope and log
  record, every attribute list and the log record body, at any depth of maps
  (``kvlist_value``) and arrays; ``bytes_value`` attributes as UTF-8 text;
- a value whose key matches becomes ``[REDACTED]`` whatever its type;
- in a string, every match of a value rule becomes ``[REDACTED]`` (its ``secret`` group only,
  when it has one), and inside JSON anywhere in the string (a prompt's messages, a tool
  call's arguments, JSON escaped inside JSON) the values of matching keys are redacted, by
  a linear scan that needs no parse and no depth limit.

:meth:`Redactor.data` applies the same to every string of a JSON-like document (run
results). :meth:`Redactor.may_apply` is the cheap part: one Aho-Corasick pass over the
lower-cased body for the keys' literal text (as keys end: before a protobuf value tag or a
JSON quote) and the value rules' anchors, plus a scan for card-length digit runs, finds
whether any rule could match at all, so ordinary traffic is not walked. Per string, the same
automaton picks the rules to try. The receiver and the importers (``Store.write``) both
redact, so nothing reaches the store by another path.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from ahocorasick_rs import BytesAhoCorasick, Implementation, MatchKind
from pydantic import BaseModel, ConfigDict, ValidationError

from tracegrade._util.user_regex import UserRegexError, compile_user_regex
from tracegrade.errors import ConfigError
from tracegrade.spans import Span, TraceData

REDACTED = "[REDACTED]"
RULES_FILE = "redaction.yaml"


class ValueRule(BaseModel):
    """A secret by its form: a regular expression, literal ``anchors`` of which every match
    contains one, compared case-insensitively (none: the prefilter searches the pattern
    itself), and an optional ``check`` of the match (``luhn``: card numbers)."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    anchors: list[str] = []
    check: Literal["luhn"] | None = None


class PluginRule(BaseModel):
    """A detect-secrets plugin whose patterns are value rules: its class name, our
    ``anchors`` for its patterns, and ``secret``: ``match`` (the whole match) or ``groups``
    (a pattern's capturing groups, where it has them)."""

    model_config = ConfigDict(extra="forbid")

    plugin: str
    anchors: list[str]
    secret: Literal["match", "groups"] = "match"


class RedactionRules(BaseModel):
    """The shape of ``config/redaction.yaml``."""

    model_config = ConfigDict(extra="forbid")

    keys: list[str] = []
    values: list[ValueRule] = []
    detect_secrets: list[PluginRule] = []


@lru_cache(maxsize=1)
def default_rules() -> RedactionRules:
    """The rules shipped in ``config/redaction.yaml``.

    Raises:
        ConfigError: the file is not valid YAML of the expected shape, or a value pattern is
            not a regular expression.
    """
    source = f"tracegrade.defaults/{RULES_FILE}"
    text = resources.files("tracegrade.defaults").joinpath(RULES_FILE).read_text("utf-8")
    try:
        rules = RedactionRules.model_validate(yaml.safe_load(text) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    for rule in rules.values:
        _compile(rule.pattern, source)
    return rules


_BOUNDARY = r"(?:\b|(?<=\\[nrt]))"
"""What ``\b`` in a value rule stands for: a word boundary, or just after a JSON escape
(``\n``, ``\r``, ``\t`` written out: in a prompt stored as JSON text, the ``n`` of ``\n``
would otherwise glue to ``sk-...`` and hide it)."""


def _compile(pattern: str, source: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern.replace(r"\b", _BOUNDARY))
    except re.error as exc:
        raise ConfigError(f"{source}: value pattern {pattern!r}: {exc}") from exc


@lru_cache(maxsize=64)
def plugin_patterns(name: str) -> tuple[Any, ...]:
    """The ``denylist`` patterns of the detect-secrets plugin class ``name`` (imported from
    the installed package; nothing is fetched), compiled by RE2 (:func:`_linear`): written
    for scanning source files a line at a time, some backtrack quadratically on a long
    string (NpmDetector's ``//.+/:_authToken=`` took 1.6 s on 160 KB of ``//``).

    Raises:
        ConfigError: no such plugin, it is not pattern-based, or RE2 cannot run a pattern.
    """
    import detect_secrets.plugins as plugins

    for module in pkgutil.iter_modules(plugins.__path__):
        found = getattr(importlib.import_module(f"{plugins.__name__}.{module.name}"), name, None)
        if found is not None:
            denylist = getattr(found, "denylist", None)
            if not denylist:
                break
            return tuple(_linear(p if isinstance(p, str) else p.pattern) for p in denylist)
    raise ConfigError(f"{RULES_FILE}: detect-secrets has no pattern-based plugin {name!r}")


def _linear(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (matching in time linear in the text: ``finditer``,
    ``span`` and ``groups`` as with ``re``; ``\\d``, ``\\s`` and ``\\w`` are ASCII).

    Raises:
        ConfigError: RE2 cannot compile it (lookaround, backreferences).
    """
    try:
        return compile_user_regex(pattern)
    except UserRegexError as exc:
        raise ConfigError(f"{RULES_FILE}: detect-secrets pattern: {exc}") from None


def luhn(digits: str) -> bool:
    """True when the digits of ``digits`` (other characters ignored) pass the Luhn check."""
    numbers = [int(c) for c in digits if c.isdigit()]
    total = 0
    for position, number in enumerate(reversed(numbers)):
        if position % 2:
            number *= 2
            number -= 9 if number > 9 else 0
        total += number
    return total % 10 == 0


@dataclass(frozen=True)
class _Rule:
    """One compiled value rule (``re``, or RE2 for detect-secrets' patterns): what to
    replace of a match (``groups``: the ``secret`` group, or every capturing group), whether
    to take the rest of the token, and a check."""

    regex: Any
    groups: tuple[int | str, ...]
    extend: bool
    check: Callable[[str], bool] | None


_TOKEN_TAIL = re.compile(r"(?:[A-Za-z0-9_+/=-]|\.(?=[A-Za-z0-9_-]))*")
"""The rest of a token a whole-match rule started (a key longer than its pattern says)."""


def _rule(regex: Any, groups: bool, check: str | None) -> _Rule:
    if "secret" in regex.groupindex:
        return _Rule(regex, ("secret",), False, None)
    if groups and regex.groups:
        return _Rule(regex, tuple(range(1, regex.groups + 1)), False, None)
    return _Rule(regex, (), check is None, luhn if check == "luhn" else None)


def _literals(words: Sequence[str], flags: int) -> re.Pattern[str] | None:
    """One regular expression matching any of ``words`` literally; None for no words."""
    if not words:
        return None
    return re.compile("|".join(re.escape(w) for w in words), flags)


def _key_needle(pattern: str) -> str:
    """The longest literal run of a shell pattern (what any matching key must contain)."""
    return max(re.split(r"[*?\[\]]", pattern), key=len).strip(".")


_SHORT_NEEDLE = 6
"""Key literals this short (``token``, ``secret``, ``cookie``) are common inside ordinary
keys and text (``gen_ai.usage.input_tokens``): the prefilter looks for them as keys end."""


def _key_literals(pattern: str) -> list[bytes]:
    """What the prefilter looks for to find a key matching ``pattern`` in a body: its longest
    literal; when that is short and ends the pattern (``*token``), as a key ends: before a
    protobuf ``AnyValue`` tag (``\x12``), a JSON quote, or the backslash of an escaped one,
    so ``token`` in ``input_tokens`` does not make every request a candidate. Few literals
    matter: past 64 the automaton is no longer vectorised (5x slower)."""
    needle = _key_needle(pattern).lower().encode()
    if not needle:
        return []
    if len(needle) > _SHORT_NEEDLE or not pattern.lower().encode().endswith(needle):
        return [needle]
    return [needle + b"\x12", needle + b'"', needle + b"\\"]


_KEY_IN_JSON = re.compile(r'(?<!\\)(\\*)"([^"\\\n]{1,200})\\*"[ \t\r\n]*:[ \t\r\n]*')
"""A key of a JSON object anywhere in a string, at any level of escaping (its quote preceded
by 0, 1, 3 ... backslashes): the escape level, the key."""
_JSON_SCALAR_END = re.compile(r'[,}\]\s\\"]|$')


def _escaped(text: str, at: int) -> int:
    """How many backslashes stand right before ``text[at]``."""
    start = at
    while start > 0 and text[start - 1] == "\\":
        start -= 1
    return at - start


def _closes(text: str, at: int, level: int) -> bool:
    """True when the quote at ``at`` delimits a string of escape ``level`` (0 plain JSON,
    1 JSON in a JSON string, 3 ...): preceded by ``level`` backslashes modulo
    ``2 * level + 2``."""
    return _escaped(text, at) % (2 * level + 2) == level


def _string_end(text: str, start: int, level: int) -> int:
    """Index of the closing quote of a string whose content starts at ``start`` (the
    text's length if it never closes)."""
    at = text.find('"', start)
    while at != -1 and not _closes(text, at, level):
        at = text.find('"', at + 1)
    return len(text) if at == -1 else at


_STRUCTURE = re.compile(r'[{}\[\]"]')


def _structure_end(text: str, start: int, level: int) -> int:
    """Index just past the object or array that starts at ``start`` (depth counted, strings
    of its escape level skipped; the text's length if it never closes)."""
    depth, at = 0, start
    while (found := _STRUCTURE.search(text, at)) is not None:
        char, at = found.group(), found.start()
        if char == '"':
            if _closes(text, at, level):
                at = _string_end(text, at + 1, level) + 1
            else:
                at += 1
            continue
        depth += 1 if char in "{[" else -1
        at += 1
        if depth == 0:
            return at
    return len(text)


class Redactor:
    """Applies key and value rules (see the module docstring); ``keys`` / ``values`` None take
    the shipped rules, an empty sequence none; a value rule given as a string is a pattern
    without anchors. The shipped detect-secrets rules come with the shipped values.

    Raises:
        ConfigError: a value pattern is not a regular expression.
    """

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        values: Sequence[ValueRule | str] | None = None,
    ):
        shipped = default_rules() if keys is None or values is None else RedactionRules()
        self.keys = tuple(p.lower() for p in (shipped.keys if keys is None else keys))
        self.values = tuple(
            ValueRule(pattern=v) if isinstance(v, str) else v
            for v in (shipped.values if values is None else values)
        )
        self.plugins = tuple(shipped.detect_secrets if values is None else ())
        self._key = (
            re.compile("|".join(fnmatch.translate(p) for p in self.keys)) if self.keys else None
        )
        for rule in self.values:
            _compile(rule.pattern, "value rule")
        needles = sorted({_key_needle(p) for p in self.keys} - {""})
        self._needles = _literals(needles, re.IGNORECASE)
        literals = {n for p in self.keys for n in _key_literals(p)}
        anchors = [a.lower() for v in self.values for a in v.anchors]
        anchors += [a.lower() for plugin in self.plugins for a in plugin.anchors]
        literals |= {a.encode() for a in anchors}
        # A literal that holds another adds nothing to "does any occur" ("proxy-authorization"
        # holds "authorization"): fewer literals keep the automaton vectorised (<= 64).
        literals = {a for a in literals if not any(b != a and b in a for b in literals)}
        self._literals = (
            # Leftmost matching lets the automaton skip ahead with its SIMD prefilter: 5.6x
            # faster than standard matching on ordinary spans (10 vs 59 us per 40 KB), and
            # whether any literal occurs is the same under either.
            BytesAhoCorasick(
                sorted(literals),
                matchkind=MatchKind.LeftmostLongest,
                implementation=Implementation.DFA,
            )
            if literals
            else None
        )
        self._longest = max(map(len, literals), default=1)
        unanchored = [v.pattern for v in self.values if not v.anchors and v.check is None]
        self._unanchored = (
            re.compile("|".join(f"(?:{p})" for p in unanchored).encode()) if unanchored else None
        )
        self._cards = any(v.check == "luhn" and not v.anchors for v in self.values)

    @cached_property
    def _rules(self) -> tuple[list[_Rule], dict[str, list[int]], list[int]]:
        """The compiled value rules (the detect-secrets plugins imported on first use), the
        rules of each lower-cased anchor, and the rules without anchors."""
        rules: list[_Rule] = []
        by_anchor: dict[str, list[int]] = {}
        always: list[int] = []

        def add(rule: _Rule, anchors: Iterable[str]) -> None:
            anchors = [a.lower() for a in anchors]
            for anchor in anchors:
                by_anchor.setdefault(anchor, []).append(len(rules))
            if not anchors:
                always.append(len(rules))
            rules.append(rule)

        for value in self.values:
            add(_rule(_compile(value.pattern, "value rule"), False, value.check), value.anchors)
        for plugin in self.plugins:
            for regex in plugin_patterns(plugin.plugin):
                add(_rule(regex, plugin.secret == "groups", None), plugin.anchors)
        return rules, by_anchor, always

    @cached_property
    def _anchors(self) -> tuple[BytesAhoCorasick | None, list[str]]:
        """An automaton over every lower-cased anchor (for one string's UTF-8 bytes: a
        string from JSON may hold a lone surrogate), and the anchors."""
        anchors = sorted(self._rules[1])
        if not anchors:
            return None, anchors
        encoded = [a.encode() for a in anchors]
        return BytesAhoCorasick(encoded, matchkind=MatchKind.Standard), anchors

    @property
    def active(self) -> bool:
        """False when there are no rules at all."""
        return bool(self.keys or self.values or self.plugins)

    def may_apply(self, body: bytes, encoding: Literal["protobuf", "json"] = "protobuf") -> bool:
        """True when ``body`` might hold something to redact: one pass of an Aho-Corasick
        automaton over the lower-cased body for every literal at once (the keys' literal
        parts, short ones as keys end, and the value rules' anchors: ~25 us per 40 KB request
        of 100 GenAI spans, vectorised while there are at most 64 literals), and a scan for
        card-number digits (a byte translation and a few searches, ~50 us: together about
        the cost of decoding the body, which is not done unless this says so). A JSON body
        with ``\\u`` escapes always might (a key can be spelled with them)."""
        if not self.active:
            return False
        if encoding == "json" and b"\\u" in body:
            return True
        if self._literals is not None and self._any_literal(body):
            return True
        if self._cards and _card_digits(body):
            return True
        return self._unanchored is not None and self._unanchored.search(body) is not None

    SCAN_WINDOW_BYTES = 2**20
    """:meth:`may_apply` lower-cases the body a window at a time (a copy of a window, not of
    a 16 MiB body)."""

    def _any_literal(self, body: bytes) -> bool:
        """True when a literal occurs in lower-cased ``body``: windows overlap by the longest
        literal less one byte, so one across a window's end is found in the next."""
        assert self._literals is not None
        overlap = self._longest - 1
        step = self.SCAN_WINDOW_BYTES
        view = memoryview(body)
        for start in range(0, max(len(body) - overlap, 1), step):
            window = view[start : start + step + overlap].tobytes().lower()
            if self._literals.find_matches_as_indexes(window):
                return True
        return False

    def matches(self, key: str) -> bool:
        """True when values under ``key`` are to be redacted."""
        return bool(self._key and self._key.match(key.lower()))

    def request(self, request: Any) -> int:
        """Redact a trace or logs request in place; returns the number of values changed."""
        count = 0
        groups = getattr(request, "resource_spans", None) or getattr(request, "resource_logs", [])
        for group in groups:
            count += self.attributes(group.resource.attributes)
            for scoped in getattr(group, "scope_spans", None) or getattr(group, "scope_logs", []):
                count += self.attributes(scoped.scope.attributes)
                for item in getattr(scoped, "spans", None) or getattr(scoped, "log_records", []):
                    count += self._item(item)
        return count

    def _item(self, item: Any) -> int:
        count = self.attributes(item.attributes)
        if hasattr(item, "name"):  # a span: its name and status message are text too
            count += self._field(item, "name") + self._field(item.status, "message")
        for event in getattr(item, "events", ()):
            count += self._field(event, "name") + self.attributes(event.attributes)
        for link in getattr(item, "links", ()):
            count += self.attributes(link.attributes)
        if hasattr(item, "body") and item.HasField("body"):
            count += self.any_value(item.body)
        return count

    def _field(self, message: Any, name: str) -> int:
        """Redact one string field of a message in place; returns 1 when it changed."""
        text = getattr(message, name)
        if not text:
            return 0
        redacted = self.text(text)
        if redacted == text:
            return 0
        setattr(message, name, redacted)
        return 1

    def attributes(self, attributes: Iterable[Any]) -> int:
        """Redact ``KeyValue`` s in place (see the module docstring); returns the count."""
        count = 0
        for kv in attributes:
            if self.matches(kv.key):
                kv.value.Clear()
                kv.value.string_value = REDACTED
                count += 1
            else:
                count += self.any_value(kv.value)
        return count

    def any_value(self, value: Any) -> int:
        """Redact inside one ``AnyValue`` in place: maps, arrays, strings, bytes (as UTF-8
        text; bytes that are not stay bytes, their text parts redacted); returns the count."""
        kind = value.WhichOneof("value")
        if kind == "string_value":
            text = self.text(value.string_value)
            if text == value.string_value:
                return 0
            value.string_value = text
            return 1
        if kind == "bytes_value":
            raw = value.bytes_value.decode("latin-1")  # every byte kept; secrets are ASCII
            text = self.text(raw)
            if text == raw:
                return 0
            value.bytes_value = text.encode("latin-1")
            return 1
        if kind == "kvlist_value":
            return self.attributes(value.kvlist_value.values)
        if kind == "array_value":
            return sum(self.any_value(v) for v in value.array_value.values)
        return 0

    def text(self, text: str) -> str:
        """``text`` with the values of matching keys redacted in any JSON it holds (wherever
        it starts, however deep or escaped) and every value-rule match replaced."""
        if self._needles is not None and self._needles.search(text):
            text = self._json_keys(text)
        return self._forms(text)

    def _json_keys(self, text: str) -> str:
        """The values of matching keys in JSON anywhere in ``text`` replaced (a string keeps
        its quotes; an object, array or scalar becomes the string ``"[REDACTED]"``)."""
        out: list[str] = []
        done = 0
        for found in _KEY_IN_JSON.finditer(text):
            if found.start() < done or not self.matches(found.group(2)):
                continue
            escape = found.group(1)
            level = len(escape)
            start = found.end()
            quote = escape + '"'
            if text.startswith(quote, start):
                end = _string_end(text, start + len(quote), level)
                out += [text[done : start + len(quote)], REDACTED]
                done = end - level if end < len(text) else end
                continue
            if text.startswith(("{", "["), start):
                end = _structure_end(text, start, level)
            else:
                scalar = _JSON_SCALAR_END.search(text, start)
                end = scalar.start() if scalar else len(text)
            if end == start:
                continue
            out += [text[done:start], quote + REDACTED + quote]
            done = end
        if not out:
            return text
        return "".join(out) + text[done:]

    def _forms(self, text: str) -> str:
        """``text`` with every match of the value rules whose anchors it holds replaced."""
        rules, by_anchor, always = self._rules
        automaton, anchors = self._anchors
        chosen = set(always)
        if automaton is not None:
            lowered = text.lower().encode("utf-8", "surrogatepass")
            for index in {i for i, _, _ in automaton.find_matches_as_indexes(lowered)}:
                chosen.update(by_anchor[anchors[index]])
        for index in sorted(chosen):
            text = _apply(rules[index], text)
        return text

    def trace(self, trace: TraceData) -> TraceData:
        """A trace read from a file (spans and log records) with every string redacted as
        :meth:`request` would have before storing it: what ``score FILE`` and ``dataset
        build`` see, so no result quotes a secret, whole or in pieces (values extracted from
        an answer). Fast path: when nothing of the trace's text meets the prefilter
        (:meth:`may_apply` over its strings and keys), the trace is returned as it is."""
        parts: list[str] = []
        for span in trace.spans:
            parts += [span.name, span.status_message]
            _texts(span.attributes, parts)
            _texts(span.resource_attributes, parts)
            for event in span.events:
                parts.append(event.name)
                _texts(event.attributes, parts)
        for record in trace.logs:
            _texts({"": record.body}, parts)
            _texts(record.attributes, parts)
        if not self.may_apply("\n".join(_uncovered(parts)).encode("utf-8", "surrogatepass")):
            return trace
        return TraceData(
            trace.trace_id,
            [self._span(span) for span in trace.spans],
            [
                dataclasses.replace(
                    r, body=self.data(r.body), attributes=self.data(dict(r.attributes))
                )
                for r in trace.logs
            ],
        )

    def _span(self, span: Span) -> Span:
        return dataclasses.replace(
            span,
            name=self.text(span.name),
            status_message=self.text(span.status_message),
            attributes=self.data(dict(span.attributes)),
            resource_attributes=self.data(dict(span.resource_attributes)),
            events=tuple(
                dataclasses.replace(
                    e, name=self.text(e.name), attributes=self.data(dict(e.attributes))
                )
                for e in span.events
            ),
        )

    def data(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, strings; a run document) with every string
        redacted and the values of matching keys replaced; other values unchanged. The
        result is a copy only where something changed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            raw = value.decode("latin-1")
            text = self.text(raw)
            return value if text == raw else text.encode("latin-1")
        if isinstance(value, list | tuple):
            return type(value)(self.data(v) for v in value)
        if isinstance(value, dict):
            return {
                k: REDACTED if isinstance(k, str) and self.matches(k) else self.data(v)
                for k, v in value.items()
            }
        return value


_LONG = 1024
"""Strings at least this long are checked for being covered by a longer one."""
_TAIL = 256
"""Characters kept of a covered string's end: a match that ends on its last character."""


def _uncovered(parts: list[str]) -> list[str]:
    """``parts`` for the prefilter without the text it repeats: each LLM span replays the
    conversation so far, so a trace's message histories are prefixes of one another (less
    their closing ``]``), and scanning every one scanned the conversation once per call. A
    long string whose all-but-last characters start a longer one is covered by it (every
    substring of it is there) but for its end, which is kept."""
    long = sorted({p for p in parts if len(p) >= _LONG}, key=len, reverse=True)
    if len(long) < 2:
        return parts
    kept: list[str] = []
    tails: list[str] = []
    for text in long:
        head = text[:-1]
        if any(other.startswith(head) for other in kept):
            tails.append(text[-_TAIL:])
        else:
            kept.append(text)
    return [p for p in parts if len(p) < _LONG] + kept + tails


def _texts(value: Any, into: list[str]) -> None:
    """Append the strings (and keys, as a JSON key ends: ``key"``) of an attribute value."""
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, bytes):
        into.append(value.decode("latin-1"))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            into.append(f'{key}"')
            _texts(item, into)
    elif isinstance(value, list | tuple):
        for item in value:
            _texts(item, into)


def _apply(rule: _Rule, text: str) -> str:
    """``text`` with ``rule`` 's matches (or their groups) replaced by :data:`REDACTED`.

    A match extended to the end of its token (:data:`_TOKEN_TAIL`) resumes the search past
    that end: a match inside the tail would be replaced with it anyway, and searching from
    each match's own end made a 200 KB token of ``AKIA`` repeated quadratic (every match
    scanned the rest of the token: 15 s)."""
    spans: list[tuple[int, int]] = []
    for found in _matches(rule, text):
        if rule.check is not None and not rule.check(found.group()):
            continue
        if not rule.groups:
            spans.append((found.start(), _extended(rule, text, found.end())))
            continue
        for group in rule.groups:
            start, end = found.span(group)
            if start < end:
                spans.append((start, end))
    if not spans:
        return text
    out, done = [], 0
    for start, end in sorted(spans):
        if start < done:
            continue
        out += [text[done:start], REDACTED]
        done = end
    return "".join(out) + text[done:]


def _matches(rule: _Rule, text: str) -> Iterator[Any]:
    """``rule`` 's matches left to right, less those that start inside the token tail an
    earlier match takes (:func:`_extended`): one pass of ``finditer`` (a search per match
    would convert the whole text again for RE2 each time), and no tail scanned twice."""
    if not rule.extend:
        yield from rule.regex.finditer(text)
        return
    done = 0
    for found in rule.regex.finditer(text):
        if found.start() < done:
            continue
        yield found
        done = _extended(rule, text, found.end())


def _extended(rule: _Rule, text: str, end: int) -> int:
    """Where a match ending at ``end`` ends once it takes the rest of its token."""
    if not rule.extend:
        return end
    tail = _TOKEN_TAIL.match(text, end)
    return tail.end() if tail else end


_DIGIT_RUN = re.compile(rb"0+")
_GROUPED = (b"0000-0000-0000-0", b"0000-000000-0000")


def _card_digits(body: bytes) -> bool:
    """True when ``body`` holds what may be a card number: 13-16 digits in a row, or digits
    grouped by spaces or dashes as cards are written (``4111 1111 1111 1111``, Amex
    ``3782 822463 10005``). Digits become ``0`` and separators ``-`` (a byte translation,
    C speed); 19-digit runs (OTLP/JSON's nanosecond timestamps) are not card numbers."""
    mapped = body.translate(_TABLE)
    if any(group in mapped for group in _GROUPED):
        return True
    at = mapped.find(b"0" * 13)
    while at != -1:
        run = _DIGIT_RUN.match(mapped, at)
        end = run.end() if run else at + 13
        if end - at <= 16 and (at == 0 or mapped[at - 1 : at] != b"0"):
            return True
        at = mapped.find(b"0" * 13, end)
    return False


_TABLE = bytes(
    ord("0") if 48 <= c <= 57 else ord("-") if c in b" -" else ord("x") for c in range(256)
)
"""Digits to ``0``, spaces and dashes to ``-``, every other byte to ``x``."""
