"""Default configuration files (pricing, field aliases, scoring weights), shipped inside the
package as ``tracegrade.defaults``; see :mod:`tracegrade.config`."""
