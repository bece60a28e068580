// What every JavaScript framework driver shares (Node built-ins only); the twin of fwtools.py.
//
// A driver runs scenarios() in order with its framework; for each turn it calls
// `await turn(scenario, index, async (record) => { ...; record.answer = answer; })` around the
// framework call (the recorder maps traces to turns by these times). The framework's tools call
// callTool(name, args), which performs the tool from scenarios.json, logs the execution and
// throws a ToolFailure for the scripted errors.
//
// Environment (set by record.py): FW_SCENARIOS, FW_LOG, FW_MODEL, FW_MODE, OPENAI_BASE_URL,
// OPENAI_API_KEY, OTEL_EXPORTER_OTLP_ENDPOINT (OTLP/HTTP protobuf), OTEL_SERVICE_NAME.
import { appendFileSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const SPEC = JSON.parse(
  readFileSync(process.env.FW_SCENARIOS || join(HERE, "..", "scenarios.json"), "utf8"),
);
export const MODEL = process.env.FW_MODEL || "gpt-4o-mini";
export const BASE_URL = process.env.OPENAI_BASE_URL || "http://127.0.0.1:9/v1";
export const API_KEY = process.env.OPENAI_API_KEY || "sk-test";
export const SYSTEM_PROMPT = SPEC.system_prompt;
export const MODE = process.env.FW_MODE || "";

export class ToolFailure extends Error {}

// Nanoseconds since the epoch, as a Number (precision to ~256 ns is plenty here).
export function nowNs() {
  return Number(process.hrtime.bigint() - START_HR) + START_NS;
}
const START_HR = process.hrtime.bigint();
const START_NS = Date.now() * 1e6;

export function log(event, fields = {}) {
  const path = process.env.FW_LOG;
  if (!path) return;
  appendFileSync(path, JSON.stringify({ event, t_ns: nowNs(), ...fields }) + "\n");
}

export function toolSpec(name) {
  return SPEC.tools[name];
}

// Perform tool `name`; returns the result as a JSON string, throws ToolFailure for a scripted error.
export function callTool(name, args) {
  const spec = SPEC.tools[name];
  const key = args ? Object.values(args)[0] : undefined;
  if (key in spec.errors) {
    const message = spec.errors[key];
    log("tool", { name, arguments: args, error: message });
    throw new ToolFailure(message);
  }
  if (!(key in spec.results)) {
    const message = `unknown ${name} input ${JSON.stringify(key)}`;
    log("tool", { name, arguments: args, error: message });
    throw new Error(message);
  }
  const result = JSON.stringify(spec.results[key]);
  log("tool", { name, arguments: args, result });
  return result;
}

export function scenarios() {
  const only = (process.env.FW_ONLY || "").split(",").filter(Boolean);
  return SPEC.scenarios
    .filter((s) => only.length === 0 || only.includes(s.id))
    .map((s) => ({ ...s, stream: Boolean(s.stream), conversationId: `conv-${s.id}` }));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Log the start and end of one user turn around `body(record)`; a framework error is logged,
// not re-thrown, so the next scenario still runs.
export async function turn(scenario, index, body) {
  const record = { scenario: scenario.id, turn: index, user: scenario.turns[index].user, answer: null, notes: {} };
  log("turn_start", { scenario: scenario.id, turn: index, user: record.user, stream: scenario.stream });
  let error = null;
  try {
    await body(record);
  } catch (exc) {
    error = `${exc?.name || "Error"}: ${exc?.message || exc}`;
  }
  await sleep(50);
  log("turn_end", {
    scenario: scenario.id,
    turn: index,
    answer: record.answer == null ? null : String(record.answer),
    error,
    notes: record.notes,
  });
}
