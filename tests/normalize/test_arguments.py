"""Issue 23 rule 2: a tool span's arguments are reconciled with the model's request, and a
disagreement is recorded, never silent."""

from __future__ import annotations

from tracegrade.normalize.arguments import agrees, reconcile, unwrap_arguments

REQUEST = {"order_id": "A100"}


def test_a_bare_value_for_a_one_parameter_tool_agrees_and_the_request_is_kept():
    # LangChain with OpenInference records the bare value
    assert reconcile("A100", True, REQUEST, True) == (REQUEST, True, None)


def test_an_empty_envelope_is_no_evidence():
    # Traceloop's withTool on a closure records {"args": [], "kwargs": {}}
    assert reconcile({"args": [], "kwargs": {}}, True, REQUEST, True) == (REQUEST, True, None)


def test_an_empty_request_is_no_evidence_either():
    # any-agent records LlamaIndex's requests as {}
    assert reconcile({"timezone": "UTC"}, True, {}, True) == ({"timezone": "UTC"}, True, None)


def test_a_call_envelope_with_extra_keys_is_unwrapped():
    recorded = {"args": [], "kwargs": {"order_id": "A100"}, "sanitize_inputs_outputs": True}
    assert unwrap_arguments(recorded) == REQUEST
    assert agrees(recorded, REQUEST)


def test_extra_injected_keys_agree():
    assert agrees({"order_id": "A100", "config": {"thread": 1}}, REQUEST)


def test_a_disagreement_keeps_the_request_and_says_what_each_recorded():
    arguments, recorded, mismatch = reconcile({"order_id": "B200"}, True, REQUEST, True)
    assert arguments == REQUEST and recorded
    assert mismatch is not None and '"B200"' in mismatch and '"A100"' in mismatch


def test_without_a_request_the_span_decides():
    assert reconcile({"order_id": "A100"}, True, None, False) == (REQUEST, True, None)
