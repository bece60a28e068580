// The scenarios through the hand-written loop, one plain span "agent turn" per user turn.
import { trace } from "@opentelemetry/api";
import OpenAI from "openai";

import { API_KEY, BASE_URL, scenarios, turn } from "../fwtools.mjs";
import { agentTurn, newConversation } from "./loop.mjs";

export async function runScenarios() {
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
}
