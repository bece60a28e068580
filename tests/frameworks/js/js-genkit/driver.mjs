// Genkit driver: a Genkit flow calling `ai.generate` with two tools (Genkit runs the tool loop,
// `maxTurns`), the model reached through the OpenAI-compatible plugin
// (`@genkit-ai/compat-oai`, `openAICompatible({name, baseURL, apiKey})`, model
// `scripted/<MODEL>`, Chat Completions).
//
// Telemetry: Genkit's own tracer. `enableTelemetry({spanProcessors: [...]})` (genkit/tracing)
// starts Genkit's NodeSDK with our BatchSpanProcessor over an OTLP/HTTP protobuf exporter
// (it reads OTEL_EXPORTER_OTLP_ENDPOINT); Genkit writes its spans' content as `genkit:*`
// attributes (JSON input/output per action), which is the only content capture it has.
//
// The agent: flow `shopAssistant` (input {conversationId, question}) keeps each
// conversation's messages (the previous turn's `response.messages`) and calls
// `ai.generate({system, messages, prompt: question, tools, maxTurns: 5})`; streaming:
// `ai.generateStream(...)`, chunks consumed, then `await response`. A tool failure goes back to
// the model: a generate middleware (`generateMiddleware`, tool hook) turns the thrown
// error into the tool response {error: message}, so the tool's span still records the error.
import { genkit, generateMiddleware, z } from "genkit";
import { enableTelemetry, flushTracing } from "genkit/tracing";
import { openAICompatible } from "@genkit-ai/compat-oai";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

await enableTelemetry({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });

const ai = genkit({
  plugins: [openAICompatible({ name: "scripted", baseURL: BASE_URL, apiKey: API_KEY })],
});

const getOrder = ai.defineTool(
  {
    name: "get_order",
    description: toolSpec("get_order").description,
    inputSchema: z.object({ order_id: z.string().describe(toolSpec("get_order").parameters.order_id.description) }),
    outputSchema: z.string(),
  },
  async ({ order_id }) => callTool("get_order", { order_id }),
);

const trackShipment = ai.defineTool(
  {
    name: "track_shipment",
    description: toolSpec("track_shipment").description,
    inputSchema: z.object({
      tracking_id: z.string().describe(toolSpec("track_shipment").parameters.tracking_id.description),
    }),
    outputSchema: z.string(),
  },
  async ({ tracking_id }) => callTool("track_shipment", { tracking_id }),
);

// A tool error goes back to the model as the tool's response.
const toolErrorsToModel = generateMiddleware({ name: "toolErrorsToModel" }, () => ({
  tool: async (request, context, next) => {
    try {
      return await next(request, context);
    } catch (error) {
      const message = error?.cause?.message || error?.message || String(error);
      return {
        toolResponse: { name: request.toolRequest.name, ref: request.toolRequest.ref, output: { error: message } },
      };
    }
  },
}));

const conversations = new Map();

const shopAssistant = ai.defineFlow(
  {
    name: "shopAssistant",
    inputSchema: z.object({ conversationId: z.string(), question: z.string(), stream: z.boolean() }),
    outputSchema: z.string(),
  },
  async ({ conversationId, question, stream }) => {
    const options = {
      model: `scripted/${MODEL}`,
      system: SYSTEM_PROMPT,
      messages: conversations.get(conversationId) ?? [],
      prompt: question,
      tools: [getOrder, trackShipment],
      maxTurns: 5,
      use: [toolErrorsToModel()],
    };
    let response;
    if (stream) {
      const streamed = ai.generateStream(options);
      for await (const _chunk of streamed.stream) {
        // consume the stream
      }
      response = await streamed.response;
    } else {
      response = await ai.generate(options);
    }
    conversations.set(conversationId, response.messages);
    return response.text;
  },
);

for (const scenario of scenarios()) {
  for (let index = 0; index < scenario.turns.length; index++) {
    await turn(scenario, index, async (record) => {
      record.answer = await shopAssistant({
        conversationId: scenario.conversationId,
        question: scenario.turns[index].user,
        stream: scenario.stream,
      });
    });
  }
}
await flushTracing();
