"""Retrievals: each retriever convention's span read into ``AgentTrace.retrievals`` (query,
documents with id, score, content and metadata, the agent that asked, timing)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.spanfactory import BASE_NS, TraceBuilder
from tracegrade.normalize.documents import parse_document
from tracegrade.pipeline.reading import from_files
from tracegrade.trace import RetrievedDocument

DESK = "The Aurora desk lamp costs $39.99 and ships in 2 days."
FLOOR = "The Borealis floor lamp costs $149.00."


def _rag_chain(b: TraceBuilder, retriever_attrs: dict, name: str = "VectorStoreRetriever") -> str:
    """An OpenInference RAG chain: CHAIN root, RETRIEVER, LLM (LangChain's span layout)."""
    root = b.add(
        "RunnableSequence",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": "How much is the Aurora desk lamp?",
            "output.value": "It costs $39.99.",
        },
        duration_ms=100,
    )
    b.add(name, retriever_attrs, parent=root, start_ms=5, duration_ms=3)
    b.add(
        "ChatOpenAI",
        {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": f"Context: {DESK}\nQuestion: How much is"
            " the Aurora desk lamp?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "It costs $39.99.",
        },
        parent=root,
        start_ms=20,
        duration_ms=50,
    )
    return root


def test_openinference_langchain_retriever_content_and_metadata_id():
    b = TraceBuilder()
    _rag_chain(
        b,
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "Aurora desk lamp price",
            "retrieval.documents.0.document.content": DESK,
            "retrieval.documents.0.document.metadata": json.dumps({"id": "lamp-aurora"}),
            "retrieval.documents.1.document.content": FLOOR,
            "retrieval.documents.1.document.metadata": json.dumps({"source": "catalog/borealis"}),
        },
    )
    trace = b.normalize()
    (retrieval,) = trace.retrievals
    assert retrieval.query == "Aurora desk lamp price"
    assert retrieval.name == "VectorStoreRetriever"
    assert [d.id for d in retrieval.documents] == ["lamp-aurora", "catalog/borealis"]
    assert [d.content for d in retrieval.documents] == [DESK, FLOOR]
    assert retrieval.documents[0].metadata == {"id": "lamp-aurora"}
    assert retrieval.start_unix_nano == BASE_NS + 5_000_000 and retrieval.duration_ms == 3
    assert retrieval.documents_recorded and retrieval.error is None
    assert trace.user_inputs == ("How much is the Aurora desk lamp?",)  # unchanged by it


def test_openinference_llama_index_retriever_ids_and_scores():
    b = TraceBuilder()
    _rag_chain(
        b,
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "desk lamp",
            "retrieval.documents.0.document.id": "node-1",
            "retrieval.documents.0.document.score": 0.91,
            "retrieval.documents.0.document.content": DESK,
            "retrieval.documents.1.document.id": "node-2",
            "retrieval.documents.1.document.score": "0.42",
            "retrieval.documents.1.document.content": FLOOR,
        },
        name="retrieve",
    )
    docs = b.normalize().retrievals[0].documents
    assert [(d.id, d.score) for d in docs] == [("node-1", 0.91), ("node-2", 0.42)]


def test_genai_retrieval_span():
    b = TraceBuilder()
    agent = b.add(
        "invoke_agent shop",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
        duration_ms=100,
    )
    b.add(
        "retrieval products",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "products",
            "gen_ai.retrieval.query.text": "desk lamp",
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": "doc-1", "score": 0.95, "content": DESK}, {"id": "doc-2", "score": 0.5}]
            ),
        },
        parent=agent,
        start_ms=2,
        kind="CLIENT",
    )
    trace = b.normalize()
    (retrieval,) = trace.retrievals
    assert (retrieval.name, retrieval.query) == ("products", "desk lamp")
    assert retrieval.documents == (
        RetrievedDocument("doc-1", DESK, 0.95),
        RetrievedDocument("doc-2", None, 0.5),
    )
    assert (retrieval.agent, retrieval.agent_span_id) == ("shop", agent)
    assert trace.tool_calls == ()  # a retrieval is no tool call


def test_genai_retrieval_structured_documents_and_no_documents():
    b = TraceBuilder()
    b.add(
        "retrieval kb",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.documents": [{"id": "a", "score": 1.0, "content": "x"}],
        },
    )
    b.add("retrieval kb", {"gen_ai.operation.name": "retrieval"}, start_ms=5)
    first, second = b.normalize().retrievals
    assert first.documents == (RetrievedDocument("a", "x", 1.0),)
    assert second.documents == () and not second.documents_recorded


def test_openllmetry_langchain_vector_db_retrieve():
    b = TraceBuilder()
    root = b.add(
        "RunnableSequence.workflow",
        {"traceloop.span.kind": "workflow", "traceloop.entity.name": "RunnableSequence"},
        duration_ms=50,
    )
    b.add(
        "vector_db_retrieve VectorStoreRetriever",
        {
            "gen_ai.operation.name": "vector_db_retrieve",
            "gen_ai.provider.name": "langchain",
            "traceloop.span.kind": "task",
            "traceloop.entity.name": "VectorStoreRetriever",
            "traceloop.entity.input": json.dumps(
                {"query": "desk lamp", "tags": [], "metadata": {}, "kwargs": {}}
            ),
            "traceloop.entity.output": json.dumps(
                {
                    "documents": [
                        {"page_content": DESK, "metadata": {"id": "lamp-aurora"}},
                        {"page_content": FLOOR, "metadata": {"id": "lamp-borealis"}},
                    ],
                    "count": 2,
                }
            ),
        },
        parent=root,
        start_ms=1,
        kind="CLIENT",
    )
    (retrieval,) = b.normalize().retrievals
    assert retrieval.query == "desk lamp"
    assert retrieval.name == "VectorStoreRetriever"
    assert [(d.id, d.content) for d in retrieval.documents] == [
        ("lamp-aurora", DESK),
        ("lamp-borealis", FLOOR),
    ]


def test_nested_retriever_spans_are_one_retrieval():
    b = TraceBuilder()
    outer = b.add(
        "retrieve",
        {"openinference.span.kind": "RETRIEVER", "input.value": "desk lamp"},
        duration_ms=10,
    )
    b.add(
        "VectorIndexRetriever",
        {
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": DESK,
        },
        parent=outer,
        start_ms=1,
    )
    (retrieval,) = b.normalize().retrievals
    assert retrieval.query == "desk lamp" and retrieval.documents[0].content == DESK


def test_failed_retrieval_records_the_error():
    b = TraceBuilder()
    b.add(
        "VectorStoreRetriever",
        {"openinference.span.kind": "RETRIEVER", "input.value": "q"},
        error="index unavailable",
    )
    assert b.normalize().retrievals[0].error == "index unavailable"


def test_document_shapes():
    node = {"node": {"id_": "n1", "text": "t", "metadata": {"page": 2}}, "score": 0.3}
    assert parse_document(node) == RetrievedDocument("n1", "t", 0.3, {"page": 2})
    dumped = {"lc": 1, "type": "constructor", "id": ["Document"], "kwargs": {"page_content": "p"}}
    assert parse_document(dumped) == RetrievedDocument(None, "p")
    assert parse_document("plain text") == RetrievedDocument(None, "plain text")
    assert parse_document({"score": "nan"}) is None
    assert parse_document(42) is None


def test_to_dict_carries_retrievals():
    b = TraceBuilder()
    _rag_chain(
        b,
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "q",
            "retrieval.documents.0.document.content": DESK,
        },
    )
    data = b.normalize().to_dict()
    assert data["retrievals"][0]["documents"][0]["content"] == DESK


# --- recorded: LangChain RAG chain with openinference-instrumentation-langchain ---------------

RECORDING = Path(__file__).parents[1] / "data" / "frameworks" / "langchain-rag-openinference"
CATALOG = json.loads((Path(__file__).parents[1] / "frameworks" / "rag_scenarios.json").read_text())[
    "documents"
]


def test_recorded_langchain_retrievals_carry_the_catalogue():
    traces = from_files(sorted(RECORDING.glob("traces.*"))).traces
    by_input = {t.user_inputs[0]: t for t in traces}
    trace = by_input["How much does the Aurora desk lamp cost?"]
    (retrieval,) = trace.retrievals
    assert retrieval.query == "How much does the Aurora desk lamp cost?"
    assert retrieval.name == "VectorStoreRetriever"
    content = {d["id"]: d["content"] for d in CATALOG}
    assert [(d.id, d.content) for d in retrieval.documents] == [
        ("lamp-aurora", content["lamp-aurora"]),
        ("lamp-borealis", content["lamp-borealis"]),
    ]
    assert retrieval.documents[0].metadata == {"id": "lamp-aurora", "category": "lighting"}
    assert retrieval.documents[0].score is None  # LangChain's instrumentation records none
    assert trace.final_output == "The Aurora desk lamp costs $39.99 and ships in 2 days."
    assert len(trace.llm_calls) == 1 and trace.tool_calls == ()


def test_recorded_llama_index_retrievals_carry_ids_and_scores():
    recording = RECORDING.parent / "llamaindex-rag-openinference"
    logged = [
        json.loads(line)
        for line in (recording / "driver.jsonl").read_text().splitlines()
        if '"retrieval"' in line
    ]
    traces = from_files(sorted(recording.glob("traces.*"))).traces
    retrievals = {r.query: r for t in traces for r in t.retrievals}
    assert len(retrievals) == len(logged) == 3
    for entry in logged:
        found = retrievals[entry["query"]]
        assert [(d.id, d.score) for d in found.documents] == [
            (d["id"], d["score"]) for d in entry["documents"]
        ]
        assert all(d.content for d in found.documents)
