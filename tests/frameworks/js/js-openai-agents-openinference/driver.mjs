// OpenAI Agents SDK (JS) driver, traced by OpenInference's Agents SDK trace processor.
//
// The processor (@arizeai/openinference-instrumentation-openai-agents) is registered with
// `manuallyInstrument(agents)` (ESM), in its default exclusive mode: it replaces the SDK's
// own processors, so the default OpenAI tracing exporter is gone and nothing is sent to
// OpenAI's tracing backend. Tracing itself stays enabled (setTracingDisabled(true) would stop
// the SDK from making spans at all, for every processor).
//
// The model is the scripted server via setDefaultOpenAIClient + setOpenAIAPI('chat_completions').
// A conversation keeps its history in a MemorySession whose sessionId is the conversation id,
// and the Runner gets the conversation id as its trace groupId. Tool errors use the SDK
// default (a tool's errorFunction): the model is sent a fixed error message and the run goes
// on. Streaming: run(..., {stream: true}) and the stream consumed to the end.
import * as agents from "@openai/agents";
import { Agent, MemorySession, Runner, getGlobalTraceProvider, setDefaultOpenAIClient, setOpenAIAPI, tool } from "@openai/agents";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import OpenAI from "openai";
import { z } from "zod";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";
import { setupTracing, shutdownTracing } from "./otel.mjs";

const provider = setupTracing();
new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);

setDefaultOpenAIClient(new OpenAI({ baseURL: BASE_URL, apiKey: API_KEY }));
setOpenAIAPI("chat_completions");

const getOrder = tool({
  name: "get_order",
  description: toolSpec("get_order").description,
  parameters: z.object({ order_id: z.string().describe(toolSpec("get_order").parameters.order_id.description) }),
  execute: async ({ order_id }) => callTool("get_order", { order_id }),
});

const trackShipment = tool({
  name: "track_shipment",
  description: toolSpec("track_shipment").description,
  parameters: z.object({
    tracking_id: z.string().describe(toolSpec("track_shipment").parameters.tracking_id.description),
  }),
  execute: async ({ tracking_id }) => callTool("track_shipment", { tracking_id }),
});

const agent = new Agent({
  name: "Shop assistant",
  instructions: SYSTEM_PROMPT,
  model: MODEL,
  tools: [getOrder, trackShipment],
});

for (const scenario of scenarios()) {
  const runner = new Runner({ groupId: scenario.conversationId });
  const session = new MemorySession({ sessionId: scenario.conversationId });
  for (let index = 0; index < scenario.turns.length; index++) {
    const user = scenario.turns[index].user;
    await turn(scenario, index, async (record) => {
      if (scenario.stream) {
        const result = await runner.run(agent, user, { session, stream: true });
        for await (const _event of result) {
          // consume every stream event
        }
        await result.completed;
        record.answer = result.finalOutput;
      } else {
        const result = await runner.run(agent, user, { session });
        record.answer = result.finalOutput;
      }
    });
  }
}

await getGlobalTraceProvider().forceFlush();
await shutdownTracing(provider);
