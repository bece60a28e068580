// A hand-written tool-calling agent over the `openai` client's chat completions (the same file
// in js-openai-openinference and js-openai-otel): the model is offered the two tools, every
// tool call it makes is run with callTool and its result (or error text) sent back, until it
// answers with text. The conversation is the caller's message list, kept across turns.
import { MODEL, SYSTEM_PROMPT, callTool, toolSpec } from "../fwtools.mjs";

const TOOL_NAMES = ["get_order", "track_shipment"];

export const TOOLS = TOOL_NAMES.map((name) => {
  const spec = toolSpec(name);
  return {
    type: "function",
    function: {
      name,
      description: spec.description,
      parameters: {
        type: "object",
        properties: spec.parameters,
        required: Object.keys(spec.parameters),
        additionalProperties: false,
      },
    },
  };
});

export function newConversation() {
  return [{ role: "system", content: SYSTEM_PROMPT }];
}

// One completion, non-streamed: the assistant message.
async function complete(client, messages) {
  const response = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
  return response.choices[0].message;
}

// One completion, streamed (usage included, as users commonly ask): the assistant message
// assembled from the chunks.
async function completeStreamed(client, messages) {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools: TOOLS,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = null;
  const calls = [];
  for await (const chunk of stream) {
    const delta = chunk.choices?.[0]?.delta;
    if (!delta) continue;
    if (typeof delta.content === "string") content = (content ?? "") + delta.content;
    for (const part of delta.tool_calls ?? []) {
      const call = (calls[part.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      if (part.id) call.id = part.id;
      if (part.function?.name) call.function.name += part.function.name;
      if (part.function?.arguments) call.function.arguments += part.function.arguments;
    }
  }
  const message = { role: "assistant", content };
  if (calls.length) message.tool_calls = calls.filter(Boolean);
  return message;
}

function runTool(call) {
  try {
    return callTool(call.function.name, JSON.parse(call.function.arguments || "{}"));
  } catch (exc) {
    return `Error: ${exc?.message ?? exc}`;
  }
}

// One user turn: appends the user message and everything after it to `messages`; returns the
// answer text.
export async function agentTurn(client, messages, user, { stream = false } = {}) {
  messages.push({ role: "user", content: user });
  for (let step = 0; step < 10; step++) {
    const message = stream ? await completeStreamed(client, messages) : await complete(client, messages);
    const calls = message.tool_calls ?? [];
    messages.push(
      calls.length
        ? { role: "assistant", content: message.content ?? null, tool_calls: calls }
        : { role: "assistant", content: message.content ?? "" },
    );
    if (!calls.length) return message.content;
    for (const call of calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: runTool(call) });
    }
  }
  throw new Error("no answer after 10 model calls");
}
