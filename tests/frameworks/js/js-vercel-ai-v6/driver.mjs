// Vercel AI SDK 6 driver (the release line before 7, still maintained and the most deployed):
// generateText / streamText with tools and a multi-step loop, traced by the SDK's built-in
// OpenTelemetry spans (`ai.generateText`, `ai.generateText.doGenerate`, `ai.toolCall`, ...) on an
// OTel NodeTracerProvider (SDK 2.x). The same scenarios as js-vercel-ai (AI SDK 7).
//
// Telemetry per call: `experimental_telemetry: { isEnabled: true, functionId, metadata }` (off by
// default in AI SDK 6; inputs and outputs recorded once enabled); the conversation id goes in
// `metadata` (attributes `ai.telemetry.metadata.*`). Model: `createOpenAI({baseURL, apiKey})
// .chat(MODEL)` (Chat Completions). Tools: `tool({description, inputSchema: z.object(...),
// execute})`; a tool that throws becomes a `tool-error` result sent back to the model.
// Multi-step: `stopWhen: stepCountIs(5)`. Two turns: the first turn's `response.messages` are
// passed back as history.
import { createOpenAI } from "@ai-sdk/openai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

// OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT; service name from OTEL_SERVICE_NAME.
const tracerProvider = new NodeTracerProvider({
  resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
tracerProvider.register();

const openai = createOpenAI({ baseURL: BASE_URL, apiKey: API_KEY });
const model = openai.chat(MODEL);

const tools = {
  get_order: tool({
    description: toolSpec("get_order").description,
    inputSchema: z.object({ order_id: z.string().describe("The order id, e.g. A100") }),
    execute: async ({ order_id }) => callTool("get_order", { order_id }),
  }),
  track_shipment: tool({
    description: toolSpec("track_shipment").description,
    inputSchema: z.object({ tracking_id: z.string().describe("The tracking id, e.g. TRK-A100") }),
    execute: async ({ tracking_id }) => callTool("track_shipment", { tracking_id }),
  }),
};

async function main() {
  for (const scenario of scenarios()) {
    const history = [];
    for (let index = 0; index < scenario.turns.length; index++) {
      const spec = scenario.turns[index];
      await turn(scenario, index, async (record) => {
        const messages = [...history, { role: "user", content: spec.user }];
        const options = {
          model,
          system: SYSTEM_PROMPT,
          messages,
          tools,
          stopWhen: stepCountIs(5),
          experimental_telemetry: {
            isEnabled: true,
            functionId: "shop-assistant",
            metadata: { conversationId: scenario.conversationId },
          },
        };
        let text, responseMessages;
        if (scenario.stream) {
          const result = streamText(options);
          for await (const _part of result.fullStream) {
            // consume the whole stream
          }
          text = await result.text;
          responseMessages = (await result.response).messages;
        } else {
          const result = await generateText(options);
          text = result.text;
          responseMessages = result.response.messages;
        }
        history.push({ role: "user", content: spec.user }, ...responseMessages);
        record.answer = text;
      });
    }
  }
  await tracerProvider.forceFlush();
  await tracerProvider.shutdown();
}

await main();
