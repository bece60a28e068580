// OpenTelemetry tracing for the driver: OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT,
// service name from OTEL_SERVICE_NAME (the env resource detector).
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

export function setupTracing() {
  const resource = defaultResource().merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  return provider;
}

export async function shutdownTracing(provider) {
  await provider.forceFlush();
  await provider.shutdown();
}
