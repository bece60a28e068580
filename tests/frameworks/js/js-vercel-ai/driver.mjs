// Vercel AI SDK driver: generateText / streamText with tools and a multi-step loop, traced by the
// AI SDK's OpenTelemetry integration (@ai-sdk/otel) on an OTel NodeTracerProvider (SDK 2.x).
//
// AI SDK 7 (current): OpenTelemetry moved out of `ai` into `@ai-sdk/otel`, registered once with
// `registerTelemetry(new OpenTelemetry())`; telemetry is then on for every call (opt-out), inputs
// and outputs recorded by default. `experimental_telemetry` was renamed `telemetry` and lost its
// `metadata` field: per-call data goes in `runtimeContext`, whose keys reach the spans only when
// listed in `telemetry.includeRuntimeContext` and the integration has `runtimeContext: true`
// (attributes `ai.settings.context.*`). FW_MODE `legacy` registers `LegacyOpenTelemetry` instead
// (the AI SDK <= 6 `ai.generateText` / `ai.toolCall` span shapes).
//
// Model: `createOpenAI({baseURL, apiKey}).chat(MODEL)` (Chat Completions). Tools: `tool({description,
// inputSchema: z.object(...), execute})`; a tool that throws becomes a `tool-error` result sent
// back to the model. Multi-step: `stopWhen: isStepCount(5)` (`stepCountIs` is its deprecated
// alias). Two turns: the first turn's `result.responseMessages` are passed back as history.
import { createOpenAI } from "@ai-sdk/openai";
import { LegacyOpenTelemetry, OpenTelemetry } from "@ai-sdk/otel";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, isStepCount, registerTelemetry, streamText, tool } from "ai";
import { z } from "zod";

import { API_KEY, BASE_URL, MODE, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

// OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT; service name from OTEL_SERVICE_NAME.
const tracerProvider = new NodeTracerProvider({
  resource: defaultResource().merge(detectResources({ detectors: [envDetector] })),
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
});
tracerProvider.register();

registerTelemetry(
  MODE === "legacy" ? new LegacyOpenTelemetry() : new OpenTelemetry({ runtimeContext: true }),
);

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
          instructions: SYSTEM_PROMPT,
          messages,
          tools,
          stopWhen: isStepCount(5),
          runtimeContext: { conversationId: scenario.conversationId },
          telemetry: {
            isEnabled: true,
            functionId: "shop-assistant",
            includeRuntimeContext: { conversationId: true },
          },
        };
        let text, responseMessages;
        if (scenario.stream) {
          const result = streamText(options);
          for await (const _part of result.stream) {
            // consume the whole stream
          }
          text = await result.text;
          responseMessages = await result.responseMessages;
        } else {
          const result = await generateText(options);
          text = result.text;
          responseMessages = result.responseMessages;
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
