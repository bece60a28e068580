"""Rows prepared from a decoded OTLP request (store.rows.PreparedSpans)."""

from __future__ import annotations

from tests.support.sdk import agent_turn, trace_request
from tracegrade.store.rows import PreparedSpans


def test_prepared_rows_hold_copies_of_resources_and_scopes_not_the_decoded_request():
    """A decoded sub-message keeps its whole request (every span) in memory, so the rows keep
    copies of the resource and scope: changing (or freeing) the request leaves them be."""
    request = trace_request(agent_turn, resource={"service.name": "shop"})
    prepared = PreparedSpans().add_request(request)
    ((resource, _, scopes),) = prepared.groups
    scope = scopes[0][0]
    assert resource == request.resource_spans[0].resource
    assert scope == request.resource_spans[0].scope_spans[0].scope
    as_prepared = resource.SerializeToString(), scope.SerializeToString()
    for attribute in request.resource_spans[0].resource.attributes:
        attribute.value.string_value = "changed"
    request.resource_spans[0].scope_spans[0].scope.name = "changed"
    assert (resource.SerializeToString(), scope.SerializeToString()) == as_prepared
    assert resource != request.resource_spans[0].resource
    del request
    assert {a.key for a in resource.attributes} >= {"service.name"}
