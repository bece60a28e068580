// The `openai` client with a hand-written tool loop (loop.mjs), instrumented by
// @opentelemetry/instrumentation-openai (OpenTelemetry JS contrib, GenAI semantic conventions).
//
// The instrumentation patches `openai` when it is loaded, through require-in-the-middle /
// import-in-the-middle; for an ES module app that needs the import-in-the-middle loader hook,
// registered here with module.register (what OpenTelemetry's ESM docs have `--import` do)
// before the instrumentation is enabled and before `openai` is imported (agent.mjs, loaded
// dynamically below). Message content is captured with
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (setup env) and comes as log
// records, exported by an OTLP LoggerProvider. Each user turn is one plain span "agent turn".
import { register } from "node:module";

register("@opentelemetry/instrumentation/hook.mjs", import.meta.url);

const { registerInstrumentations } = await import("@opentelemetry/instrumentation");
const { OpenAIInstrumentation } = await import("@opentelemetry/instrumentation-openai");
const { setupTelemetry, shutdownTelemetry } = await import("./otel.mjs");

const telemetry = setupTelemetry();
registerInstrumentations({
  instrumentations: [new OpenAIInstrumentation()],
  tracerProvider: telemetry.tracerProvider,
  loggerProvider: telemetry.loggerProvider,
});

const { runScenarios } = await import("./agent.mjs");
await runScenarios();
await shutdownTelemetry(telemetry);
