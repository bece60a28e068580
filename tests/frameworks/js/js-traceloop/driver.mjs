// Traceloop (OpenLLMetry-JS) driver: a hand-written tool loop on the `openai` client, wrapped in
// the SDK's `withWorkflow` / `withAgent` / `withTool`, the client traced by the SDK's bundled
// OpenAI instrumentation (`instrumentModules: { openAI: OpenAI }`, needed under ESM).
//
// `traceloop.initialize({ baseUrl })`: the SDK's own OTLP/HTTP protobuf exporter posts to
// `${baseUrl}/v1/traces` (here the capture endpoint); `disableBatch: true` exports each span as
// it ends. Content tracing is the SDK default (`traceContent` / TRACELOOP_TRACE_CONTENT, true).
// The conversation id goes in the workflow's `conversationId` (the SDK then sets
// `gen_ai.conversation.id` on every span under it).
//
// Written the way a user would: the workflow gets the question as an argument, the agent and
// `get_order` wrap closures (`withTool({name}, async () => callTool(...))`, so the SDK sees no
// arguments), `track_shipment` is a named function given its arguments object. A tool error is
// caught by the loop and sent back to the model as the tool message. Streaming: `stream: true`
// with `stream_options.include_usage`, tool-call deltas assembled by index.
import * as traceloop from "@traceloop/node-server-sdk";
import OpenAI from "openai";

import { API_KEY, BASE_URL, MODEL, SYSTEM_PROMPT, callTool, scenarios, toolSpec, turn } from "../fwtools.mjs";

traceloop.initialize({
  appName: process.env.OTEL_SERVICE_NAME || "fw-js-traceloop",
  baseUrl: process.env.OTEL_EXPORTER_OTLP_ENDPOINT,
  disableBatch: true,
  instrumentModules: { openAI: OpenAI },
  silenceInitializationMessage: true,
});

const client = new OpenAI({ baseURL: BASE_URL, apiKey: API_KEY });

function functionTool(name, param) {
  const spec = toolSpec(name);
  return {
    type: "function",
    function: {
      name,
      description: spec.description,
      parameters: { type: "object", properties: spec.parameters, required: [param] },
    },
  };
}

const TOOLS = [functionTool("get_order", "order_id"), functionTool("track_shipment", "tracking_id")];

async function trackShipment({ tracking_id }) {
  return callTool("track_shipment", { tracking_id });
}

async function runTool(name, args) {
  if (name === "get_order") {
    return traceloop.withTool({ name: "get_order" }, async () => callTool("get_order", { order_id: args.order_id }));
  }
  if (name === "track_shipment") {
    return traceloop.withTool({ name: "track_shipment" }, trackShipment, args);
  }
  throw new Error(`unknown tool ${name}`);
}

async function complete(messages, stream) {
  const request = { model: MODEL, messages, tools: TOOLS };
  if (!stream) {
    const response = await client.chat.completions.create(request);
    return response.choices[0].message;
  }
  const chunks = await client.chat.completions.create({
    ...request,
    stream: true,
    stream_options: { include_usage: true },
  });
  const message = { role: "assistant", content: "", tool_calls: [] };
  for await (const chunk of chunks) {
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    if (delta.content) message.content += delta.content;
    for (const part of delta.tool_calls ?? []) {
      const call = (message.tool_calls[part.index] ??= {
        id: "",
        type: "function",
        function: { name: "", arguments: "" },
      });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
    }
  }
  if (message.tool_calls.length === 0) delete message.tool_calls;
  return message;
}

// The agent loop: call the model, run the tools it asks for, until it answers (at most 5 rounds).
async function runAgent(messages, stream) {
  for (let step = 0; step < 5; step++) {
    const message = await complete(messages, stream);
    messages.push(message);
    if (!message.tool_calls?.length) return message.content;
    for (const call of message.tool_calls) {
      let content;
      try {
        content = await runTool(call.function.name, JSON.parse(call.function.arguments || "{}"));
      } catch (error) {
        content = `Error: ${error.message}`;
      }
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  throw new Error("too many tool rounds");
}

async function main() {
  for (const scenario of scenarios()) {
    const messages = [{ role: "system", content: SYSTEM_PROMPT }];
    for (let index = 0; index < scenario.turns.length; index++) {
      const spec = scenario.turns[index];
      await turn(scenario, index, async (record) => {
        record.answer = await traceloop.withWorkflow(
          { name: "shop_assistant", conversationId: scenario.conversationId },
          async (question) => {
            messages.push({ role: "user", content: question });
            return traceloop.withAgent({ name: "shop_agent" }, async () => runAgent(messages, scenario.stream));
          },
          spec.user,
        );
      });
    }
  }
  await traceloop.forceFlush();
}

await main();
