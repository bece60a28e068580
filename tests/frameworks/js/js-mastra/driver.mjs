// Mastra driver: a Mastra `Agent` with two `createTool` tools (Mastra runs the tool loop),
// registered on a `Mastra` instance, the model through Mastra's model router as an
// OpenAI-compatible endpoint (`{id: "openai/<MODEL>", url: BASE_URL, apiKey, api: "chat"}`).
//
// Telemetry: Mastra's own tracing (`@mastra/observability` `Observability`, default
// sampling: always), exported by `@mastra/otel-exporter`'s `OtelExporter` with the
// documented generic provider `{custom: {endpoint: OTEL_EXPORTER_OTLP_ENDPOINT, protocol:
// "http/protobuf"}}` (it loads @opentelemetry/exporter-trace-otlp-proto and posts to
// `${endpoint}/v1/traces`). Inputs and outputs are recorded by default.
//
// The agent: `agent.generate(messages)` per turn, where `messages` is the conversation so far
// (earlier turns' user questions and the agent's answers, as Mastra takes a message list),
// `agent.stream(messages)` for the streaming scenario (text stream consumed, then its text).
// A tool that throws: Mastra sends the error back to the model as the tool's result.
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { z } from "zod";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

const getOrder = createTool({
  id: "get_order",
  description: toolSpec("get_order").description,
  inputSchema: z.object({ order_id: z.string().describe(toolSpec("get_order").parameters.order_id.description) }),
  execute: async ({ order_id }) => callTool("get_order", { order_id }),
});

const trackShipment = createTool({
  id: "track_shipment",
  description: toolSpec("track_shipment").description,
  inputSchema: z.object({
    tracking_id: z.string().describe(toolSpec("track_shipment").parameters.tracking_id.description),
  }),
  execute: async ({ tracking_id }) => callTool("track_shipment", { tracking_id }),
});

const shopAgent = new Agent({
  id: "shop-agent",
  name: "shop_agent",
  instructions: SYSTEM_PROMPT,
  model: { id: `openai/${MODEL}`, url: BASE_URL, apiKey: API_KEY, api: "chat" },
  tools: { get_order: getOrder, track_shipment: trackShipment },
});

const mastra = new Mastra({
  agents: { shopAgent },
  observability: new Observability({
    configs: {
      otel: {
        serviceName: process.env.OTEL_SERVICE_NAME || "fw-js-mastra",
        exporters: [
          new OtelExporter({
            provider: { custom: { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, protocol: "http/protobuf" } },
          }),
        ],
      },
    },
  }),
});

const agent = mastra.getAgent("shopAgent");

for (const scenario of scenarios()) {
  const messages = [];
  for (let index = 0; index < scenario.turns.length; index++) {
    await turn(scenario, index, async (record) => {
      messages.push({ role: "user", content: scenario.turns[index].user });
      const options = { maxSteps: 5 };
      let text;
      if (scenario.stream) {
        const result = await agent.stream(messages, options);
        for await (const _piece of result.textStream) {
          // consume the stream
        }
        text = await result.text;
      } else {
        text = (await agent.generate(messages, options)).text;
      }
      messages.push({ role: "assistant", content: text });
      record.answer = text;
    });
  }
}
await mastra.shutdown();
