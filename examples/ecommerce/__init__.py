"""An example shop assistant that tracegrade evaluates from its traces.

A small agent in the shape of the design documents' e-commerce agents (nitin27may/
e-commerce-agents): product discovery and order management tools (:mod:`.tools`) over a seeded
SQLite shop (:mod:`.seed`), a Chat Completions tool loop with the official ``openai`` client
(:mod:`.agent`), instrumented the standard way (:mod:`.telemetry`: openai-v2 instrumentation
for LLM calls, GenAI-semconv ``invoke_agent`` and ``execute_tool`` spans).

Entry points:

- in-process: ``examples.ecommerce.agent:answer`` (a message or a message list -> the reply);
- command line: ``python -m examples.ecommerce "message"`` (:mod:`.__main__`);
- HTTP service: ``python -m examples.ecommerce.serve --port N`` (:mod:`.serve`).

Its golden dataset is ``datasets/ecommerce/golden.yaml``. Needs the ``examples`` extra
(``pip install -e '.[examples]'``) and runs from the repository root.
"""
