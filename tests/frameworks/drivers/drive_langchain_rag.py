"""LangChain RAG driver: a retrieval chain (LCEL) over an in-memory vector store.

The documents of ``rag_scenarios.json`` are indexed in ``InMemoryVectorStore`` with a
deterministic keyword embedding (:func:`fwtools.keyword_vector`; no model download); the
chain is the one LangChain's RAG tutorials build: ``{"context": retriever | format_docs,
"question": RunnablePassthrough()} | prompt | ChatOpenAI | StrOutputParser()``, the context in
the human message. Each document keeps its id in its metadata (``{"id": ...}``), as
applications do. Modes (``FW_MODE``): ``openinference`` (openinference-instrumentation-
langchain) or ``openllmetry`` (opentelemetry-instrumentation-langchain, Traceloop's). What the
retriever returned is logged for the ground truth by a callback handler of the driver's own.
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
    if MODE == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
    elif MODE == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=tracer_provider)
    else:
        raise SystemExit(f"unknown FW_MODE {MODE!r}")


def build_chain():
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_openai import ChatOpenAI

    class KeywordEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [keyword_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return keyword_vector(text)

    class TruthLog(BaseCallbackHandler):
        """Logs each retrieval's query and documents (the ground truth, not telemetry)."""

        def __init__(self) -> None:
            self.queries: dict = {}

        def on_retriever_start(self, serialized, query, *, run_id, **kwargs) -> None:
            self.queries[run_id] = query

        def on_retriever_end(self, found, *, run_id, **kwargs) -> None:
            log_retrieval(
                self.queries.pop(run_id, ""), [{"id": d.metadata.get("id")} for d in found]
            )

    store = InMemoryVectorStore(embedding=KeywordEmbeddings())
    store.add_documents(
        [
            Document(page_content=d["content"], metadata={"id": d["id"], **d["metadata"]})
            for d in documents()
        ],
        ids=[d["id"] for d in documents()],
    )
    retriever = store.as_retriever(search_kwargs={"k": top_k()})

    def format_docs(found: list) -> str:
        return "\n\n".join(d.page_content for d in found)

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", SYSTEM_PROMPT),
            ("human", "Context:\n{context}\n\nQuestion: {question}"),
        ]
    )
    model = ChatOpenAI(model=MODEL, base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | model
        | StrOutputParser()
    )
    return chain, TruthLog()


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    chain, truth_log = build_chain()
    for scenario in scenarios():
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                record.answer = chain.invoke(spec["user"], {"callbacks": [truth_log]})
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
