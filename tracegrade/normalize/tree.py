"""The span tree of one trace, over :class:`~tracegrade.normalize.view.SpanView` s.

Answers the structural questions the assembler asks: which span is the root, which agent a
span runs under, which agent/workflow spans form the top of the run, and which LLM spans
merely wrap another LLM span (a framework span around the client instrumentation's span).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from tracegrade.normalize.view import SpanView

_AGENTISH = ("agent", "workflow")


@dataclass
class SpanTree:
    """Views indexed by span id, with parent links restricted to spans present in the trace."""

    views: list[SpanView]
    by_id: dict[str, SpanView] = field(default_factory=dict)
    children: dict[str, list[SpanView]] = field(default_factory=dict)
    _lineages: dict[int, tuple[SpanView, ...]] = field(default_factory=dict, repr=False)
    """Ancestors by ``id(view)``: views are not hashable, and all live as long as the tree."""

    def __post_init__(self) -> None:
        unique: list[SpanView] = []
        for view in self.views:
            if view.span.span_id not in self.by_id:
                self.by_id[view.span.span_id] = view
                unique.append(view)
        self.views = sorted(unique, key=lambda v: (v.span.start_unix_nano, v.span.end_unix_nano))
        for view in self.views:
            parent = self.parent(view)
            if parent is not None:
                self.children.setdefault(parent.span.span_id, []).append(view)

    def parent(self, view: SpanView) -> SpanView | None:
        """The parent view, or None for a root (parent absent from the trace)."""
        parent_id = view.span.parent_span_id
        return self.by_id.get(parent_id) if parent_id else None

    def ancestors(self, view: SpanView) -> Iterator[SpanView]:
        """Parent, grandparent, ... up to the root (stops on a cycle)."""
        return iter(self.lineage(view))

    def lineage(self, view: SpanView) -> tuple[SpanView, ...]:
        """:meth:`ancestors` as a tuple, worked out once per view (the assembler asks often)."""
        found = self._lineages.get(id(view))
        if found is None:
            chain = []
            seen = {view.span.span_id}
            current = self.parent(view)
            while current is not None and current.span.span_id not in seen:
                seen.add(current.span.span_id)
                chain.append(current)
                current = self.parent(current)
            found = self._lineages[id(view)] = tuple(chain)
        return found

    @property
    def roots(self) -> list[SpanView]:
        """Spans without a parent in the trace, earliest first."""
        return [v for v in self.views if self.parent(v) is None]

    @property
    def root(self) -> SpanView | None:
        """The main root: the earliest root, the longest one on a tie."""
        roots = self.roots
        if not roots:
            return None
        return min(roots, key=lambda v: (v.span.start_unix_nano, -v.span.end_unix_nano))

    def agent_of(self, view: SpanView) -> SpanView | None:
        """The nearest enclosing agent span (role ``agent``), if any."""
        for ancestor in self.lineage(view):
            if ancestor.role == "agent":
                return ancestor
        return None

    def top_agents(self) -> list[SpanView]:
        """The outermost chain of agent/workflow spans: from the root down, while each level
        has exactly one agent-ish span enclosing the rest; outermost first."""
        chain: list[SpanView] = []
        level: Sequence[SpanView] = self.roots
        while True:
            agentish = [v for v in level if v.role in _AGENTISH]
            if len(agentish) == 1:
                chain.append(agentish[0])
                level = self.children.get(agentish[0].span.span_id, [])
            elif not agentish and len(level) == 1:
                level = self.children.get(level[0].span.span_id, [])
            else:
                return chain

    def in_scope_of(self, view: SpanView, agent: SpanView | None) -> bool:
        """True when ``view``'s nearest agent is ``agent`` (or it has none and agent is None)."""
        nearest = self.agent_of(view)
        return nearest is agent or (nearest is None and agent is None)

    def llm_wrappers(self) -> set[str]:
        """Span ids of LLM spans that enclose another LLM span (the inner one is the call)."""
        wrappers: set[str] = set()
        for view in self.views:
            if view.role == "llm":
                wrappers.update(a.span.span_id for a in self.lineage(view) if a.role == "llm")
        return wrappers
