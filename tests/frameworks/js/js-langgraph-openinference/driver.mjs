// LangGraph.js driver: the prebuilt ReAct agent (`createReactAgent`) over `ChatOpenAI`, traced by
// OpenInference's LangChain instrumentation (`@arizeai/openinference-instrumentation-langchain`),
// manually instrumenting `@langchain/core/callbacks/manager` as its README shows for ESM.
//
// Multi-turn conversations keep their state in a `MemorySaver` checkpointer under
// `configurable.thread_id` = the scenario's conversation id; tool errors go back to the model
// (`new ToolNode(tools, {handleToolErrors: true})`, also the default); the streaming scenario
// uses `agent.stream(..., {streamMode: "messages"})` with a streaming model. The twin of
// drivers/drive_langgraph.py. OpenInference records inputs/outputs by default (its TraceConfig
// hides nothing unless OPENINFERENCE_HIDE_* variables are set).
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { tool } from "@langchain/core/tools";
import { MemorySaver } from "@langchain/langgraph";
import { ToolNode, createReactAgent } from "@langchain/langgraph/prebuilt";
import { ChatOpenAI } from "@langchain/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { z } from "zod";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

// OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT; service name from OTEL_SERVICE_NAME.
const tracerProvider = new NodeTracerProvider({
  resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
tracerProvider.register();
new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

const getOrder = tool(async ({ order_id }) => callTool("get_order", { order_id }), {
  name: "get_order",
  description: toolSpec("get_order").description,
  schema: z.object({ order_id: z.string().describe("The order id, e.g. A100") }),
});

const trackShipment = tool(async ({ tracking_id }) => callTool("track_shipment", { tracking_id }), {
  name: "track_shipment",
  description: toolSpec("track_shipment").description,
  schema: z.object({ tracking_id: z.string().describe("The tracking id, e.g. TRK-A100") }),
});

function buildAgent(stream) {
  const llm = new ChatOpenAI({
    model: MODEL,
    apiKey: API_KEY,
    configuration: { baseURL: BASE_URL },
    streaming: stream,
    streamUsage: true,
  });
  const tools = new ToolNode([getOrder, trackShipment], { handleToolErrors: true });
  return createReactAgent({ llm, tools, prompt: SYSTEM_PROMPT, checkpointer: new MemorySaver() });
}

function textOf(message) {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part?.text ?? "").join("");
  return content == null ? null : String(content);
}

async function main() {
  for (const scenario of scenarios()) {
    const agent = buildAgent(scenario.stream);
    const config = { configurable: { thread_id: scenario.conversationId } };
    for (let index = 0; index < scenario.turns.length; index++) {
      const spec = scenario.turns[index];
      await turn(scenario, index, async (record) => {
        const inputs = { messages: [{ role: "user", content: spec.user }] };
        let state;
        if (scenario.stream) {
          const stream = await agent.stream(inputs, { ...config, streamMode: "messages" });
          for await (const _chunk of stream) {
            // consume the whole stream
          }
          state = (await agent.getState(config)).values;
        } else {
          state = await agent.invoke(inputs, config);
        }
        record.answer = textOf(state.messages[state.messages.length - 1]);
      });
    }
  }
  await tracerProvider.forceFlush();
  await tracerProvider.shutdown();
}

await main();
