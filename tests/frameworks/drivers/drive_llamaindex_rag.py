"""LlamaIndex RAG driver: a query engine over a ``VectorStoreIndex`` (in-memory).

The documents of ``rag_scenarios.json`` become ``TextNode`` s (id = the document's id) in a
``VectorStoreIndex`` with a deterministic keyword embedding (a ``BaseEmbedding`` over
:func:`fwtools.keyword_vector`; no model download) and a whitespace tokenizer (LlamaIndex's
default tokenizer would download tiktoken's encoding); ``index.as_query_engine()`` answers
with ``llama_index.llms.openai.OpenAI`` against the scripted model. Instrumented with
openinference-instrumentation-llama-index (``FW_MODE=openinference``). The retrieved nodes
(``response.source_nodes``) are logged for the ground truth.
"""

from __future__ import annotations

import fwtools
from fwtools import (
    MODE,
    MODEL,
    SYSTEM_PROMPT,
    documents,
    keyword_vector,
    log_retrieval,
    scenarios,
    setup_otel,
    shutdown,
    top_k,
    turn,
)


def instrument(tracer_provider) -> None:
    if MODE != "openinference":
        raise SystemExit(f"unknown FW_MODE {MODE!r}")
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)


def build_engine():
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode
    from llama_index.llms.openai import OpenAI

    class KeywordEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return keyword_vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return keyword_vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return keyword_vector(text)

    Settings.tokenizer = str.split
    Settings.embed_model = KeywordEmbedding(model_name="keyword")
    Settings.llm = OpenAI(
        model=MODEL,
        api_base=fwtools.BASE_URL,
        api_key=fwtools.API_KEY,
        system_prompt=SYSTEM_PROMPT,
    )
    nodes = [
        TextNode(id_=d["id"], text=d["content"], metadata=dict(d["metadata"])) for d in documents()
    ]
    index = VectorStoreIndex(nodes)
    return index.as_query_engine(similarity_top_k=top_k())


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    engine = build_engine()
    for scenario in scenarios():
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                response = engine.query(spec["user"])
                log_retrieval(
                    spec["user"],
                    [{"id": n.node.node_id, "score": n.score} for n in response.source_nodes],
                )
                record.answer = str(response)
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
