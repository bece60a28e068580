"""DSPy driver: ``dspy.ReAct``, a text-ReAct agent (the model writes each tool call in its reply
text as DSPy fields ``next_thought`` / ``next_tool_name`` / ``next_tool_args``; no
``tool_calls``), then ReAct's ``extract`` step writes the answer field.

Telemetry: ``openinference-instrumentation-dspy`` (module, predictor, adapter, LM and tool
spans) and, as Phoenix's DSPy guide adds for token counts, ``openinference-instrumentation-
litellm`` on the LiteLLM calls DSPy's ``dspy.LM`` makes. Content capture: OpenInference's
default. Each turn runs inside ``using_session(conversation_id)``.

Model: ``dspy.LM("openai/<model>", api_base, api_key, cache=False)`` (LiteLLM's OpenAI
provider, chat completions; DSPy's response cache off so every call reaches the model). The
signature ``question, history: dspy.History -> answer`` carries the system prompt as its
instructions; a conversation's second turn passes the first turn's question and answer as
``history``. A tool that raises becomes ReAct's observation ``Execution error in <tool>: ...``
(its default). Streaming: ``dspy.streamify(react, stream_listeners=[StreamListener("answer")])``
consumed to the final ``Prediction``.
"""

# no `from __future__ import annotations`: DSPy reads the signature fields' annotations as types

import asyncio

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def instrument(tracer_provider) -> None:
    from openinference.instrumentation.dspy import DSPyInstrumentor
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    DSPyInstrumentor().instrument(tracer_provider=tracer_provider)
    LiteLLMInstrumentor().instrument(tracer_provider=tracer_provider)


def build_agent():
    import dspy

    def get_order(order_id: str) -> str:
        """Look up an order by its id (e.g. A100)."""
        return call_tool("get_order", {"order_id": order_id})

    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id (e.g. TRK-A100)."""
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    class ShopAssistant(dspy.Signature):
        __doc__ = SYSTEM_PROMPT

        question: str = dspy.InputField()
        history: dspy.History = dspy.InputField()
        answer: str = dspy.OutputField()

    lm = dspy.LM(f"openai/{MODEL}", api_base=fwtools.BASE_URL, api_key=fwtools.API_KEY, cache=False)
    dspy.configure(lm=lm)
    return dspy.ReAct(ShopAssistant, tools=[get_order, track_shipment], max_iters=6)


async def stream_answer(react, question: str, history) -> str:
    import dspy
    from dspy.streaming import StreamListener

    streaming = dspy.streamify(
        react, stream_listeners=[StreamListener(signature_field_name="answer")]
    )
    answer = None
    async for chunk in streaming(question=question, history=history):
        if isinstance(chunk, dspy.Prediction):
            answer = chunk.answer
    return answer


def main() -> None:
    import dspy
    from openinference.instrumentation import using_session

    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    react = build_agent()
    for scenario in scenarios():
        history = dspy.History(messages=[])
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, using_session(scenario.conversation_id):
                if scenario.stream:
                    record.answer = asyncio.run(stream_answer(react, spec["user"], history))
                else:
                    record.answer = react(question=spec["user"], history=history).answer
            history = dspy.History(
                messages=[*history.messages, {"question": spec["user"], "answer": record.answer}]
            )
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
