#!/bin/sh
# The test agent as an opaque command: only OpenTelemetry (OTEL_RESOURCE_ATTRIBUTES, the OTLP
# endpoint) links what it does to a tracegrade case. $TRACEGRADE_TEST_PYTHON is the interpreter.
repo=$(cd "$(dirname "$0")/../.." && pwd)
PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" exec "${TRACEGRADE_TEST_PYTHON:-python3}" -m tests.runner.shop_agent "$@"
