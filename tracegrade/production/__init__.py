"""Production scoring behind ``tracegrade collect``: windowed aggregates of what
``score --follow`` workers scored (:mod:`.windows`) and the alerts their thresholds raise
(:mod:`.alert`)."""
