// The `openai` client with a hand-written tool loop (loop.mjs), instrumented by OpenInference
// (@arizeai/openinference-instrumentation-openai, registered for ESM with
// manuallyInstrument(OpenAI) as its docs show). There is no agent framework, so each user turn
// is wrapped in one plain span "agent turn" (no GenAI/OpenInference attributes) to make a
// turn's model calls one trace. Tools run in the driver's own code and get no spans.
import { trace } from "@opentelemetry/api";
import { OpenAIInstrumentation } from "@arizeai/openinference-instrumentation-openai";
import OpenAI from "openai";

import { API_KEY, BASE_URL, scenarios, turn } from "../fwtools.mjs";
import { agentTurn, newConversation } from "./loop.mjs";
import { setupTracing, shutdownTracing } from "./otel.mjs";

const provider = setupTracing();
const instrumentation = new OpenAIInstrumentation({ tracerProvider: provider });
instrumentation.manuallyInstrument(OpenAI);

const tracer = trace.getTracer("fw-driver");
const client = new OpenAI({ baseURL: BASE_URL, apiKey: API_KEY });

for (const scenario of scenarios()) {
  const messages = newConversation();
  for (let index = 0; index < scenario.turns.length; index++) {
    const user = scenario.turns[index].user;
    await turn(scenario, index, async (record) => {
      record.answer = await tracer.startActiveSpan("agent turn", async (span) => {
        try {
          return await agentTurn(client, messages, user, { stream: scenario.stream });
        } finally {
          span.end();
        }
      });
    });
  }
}

await shutdownTracing(provider);
