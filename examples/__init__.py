"""Example agents that tracegrade evaluates from their OpenTelemetry traces (not part of the
installed ``tracegrade`` package; run them from the repository root)."""
