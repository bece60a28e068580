"""The OpenTelemetry Collector configurations shipped under deploy/ parse as YAML with the
keys the Collector (contrib distribution) expects: the top-level sections, known component
types and their settings, tail-sampling policies, the loadbalancing exporter's routing and
resolver, the evaluations config's separate receiver for tracegrade's exports, and pipelines
that only name defined components."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).parents[2]
CONFIGS = sorted((REPO / "deploy" / "collector").glob("*.yaml"))

SECTIONS = {"receivers", "processors", "exporters", "extensions", "connectors", "service"}
SETTINGS = {
    ("receivers", "otlp"): {"protocols"},
    ("processors", "memory_limiter"): {
        "check_interval",
        "limit_mib",
        "spike_limit_mib",
        "limit_percentage",
        "spike_limit_percentage",
    },
    ("processors", "tail_sampling"): {
        "decision_wait",
        "num_traces",
        "expected_new_traces_per_sec",
        "policies",
        "decision_cache",
    },
    ("processors", "batch"): {"timeout", "send_batch_size", "send_batch_max_size"},
    ("processors", "probabilistic_sampler"): {
        "mode",
        "sampling_percentage",
        "hash_seed",
        "fail_closed",
        "sampling_precision",
        "attribute_source",
        "from_attribute",
        "sampling_priority",
    },
    ("exporters", "otlp"): {
        "endpoint",
        "tls",
        "headers",
        "retry_on_failure",
        "sending_queue",
        "compression",
        "timeout",
        "balancer_name",
        "auth",
    },
    ("exporters", "otlphttp"): {
        "endpoint",
        "traces_endpoint",
        "logs_endpoint",
        "metrics_endpoint",
        "tls",
        "headers",
        "retry_on_failure",
        "sending_queue",
        "compression",
        "timeout",
        "encoding",
        "auth",
    },
    ("exporters", "loadbalancing"): {"routing_key", "protocol", "resolver", "timeout"},
}
POLICY_TYPES = {
    "always_sample",
    "latency",
    "numeric_attribute",
    "probabilistic",
    "status_code",
    "string_attribute",
    "rate_limiting",
    "span_count",
    "trace_state",
    "boolean_attribute",
    "ottl_condition",
    "and",
    "composite",
    "drop",
}
ROUTING_KEYS = {"traceID", "service", "resource", "metric", "streamID", "attributes"}
RESOLVERS = {"static", "dns", "k8s", "aws_cloud_map"}


def _type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


@pytest.fixture(params=CONFIGS, ids=lambda p: p.name)
def config(request) -> dict:
    return yaml.safe_load(request.param.read_text())


def test_the_three_configurations_are_shipped():
    assert {p.name for p in CONFIGS} == {
        "tail-sampling.yaml",
        "loadbalancing.yaml",
        "evaluations.yaml",
    }


def test_sections_and_component_settings_are_the_collectors(config):
    assert set(config) <= SECTIONS and {"receivers", "exporters", "service"} <= set(config)
    for section in ("receivers", "processors", "exporters"):
        for component_id, settings in (config.get(section) or {}).items():
            known = SETTINGS.get((section, _type(component_id)))
            assert known is not None, f"unknown {section[:-1]} type {component_id!r}"
            assert set(settings or {}) <= known, (component_id, set(settings) - known)
    for settings in config["receivers"].values():
        assert set(settings["protocols"]) <= {"grpc", "http"}
        assert all("endpoint" in p for p in settings["protocols"].values())


def test_pipelines_name_only_defined_components(config):
    pipelines = config["service"]["pipelines"]
    assert set(config["service"]) <= {"pipelines", "extensions", "telemetry"}
    assert {"traces", "logs"} <= {_type(p) for p in pipelines}  # GenAI events are logs
    for name, pipeline in pipelines.items():
        assert _type(name) in {"traces", "metrics", "logs"}
        assert set(pipeline) <= {"receivers", "processors", "exporters"}
        assert pipeline["receivers"] and pipeline["exporters"]
        for section in ("receivers", "processors", "exporters"):
            for component_id in pipeline.get(section, []):
                assert component_id in (config.get(section) or {}), (name, component_id)


def test_environment_references_use_the_collectors_syntax(config):
    text = yaml.safe_dump(config)
    assert not re.search(r"\$(?!\{env:)[{A-Za-z]", text)


def test_tail_sampling_keeps_errors_slow_traces_and_a_sample():
    config = yaml.safe_load((REPO / "deploy/collector/tail-sampling.yaml").read_text())
    sampling = config["processors"]["tail_sampling"]
    assert re.fullmatch(r"\d+s", sampling["decision_wait"])
    for policy in sampling["policies"]:
        assert set(policy) == {"name", "type", policy["type"]} and policy["type"] in POLICY_TYPES
    assert [p["type"] for p in sampling["policies"]] == ["status_code", "latency"]
    pipelines = config["service"]["pipelines"]
    assert "tail_sampling" in pipelines["traces/outliers"]["processors"]
    assert "probabilistic_sampler" in pipelines["traces/sample"]["processors"]
    assert all(p["exporters"] == ["otlp/tracegrade"] for p in pipelines.values())
    assert "Bearer ${env:TRACEGRADE_TOKEN}" in str(config["exporters"]["otlp/tracegrade"])


def test_log_records_follow_the_sampled_traces():
    """Log records (GenAI content) pass only for the traces the 10% sample keeps: the same
    sampler, mode and percentage by trace id in the logs pipeline as in the traces one; none
    bypasses it (issue: content of unsampled conversations was stored)."""
    config = yaml.safe_load((REPO / "deploy/collector/tail-sampling.yaml").read_text())
    processors = config["processors"]
    traces, logs = processors["probabilistic_sampler"], processors["probabilistic_sampler/logs"]
    assert traces["mode"] == logs["mode"] == "proportional"
    assert traces["sampling_percentage"] == logs["sampling_percentage"]
    assert logs["attribute_source"] == "traceID" and logs["fail_closed"] is True
    (name,) = [n for n in config["service"]["pipelines"] if _type(n) == "logs"]
    assert "probabilistic_sampler/logs" in config["service"]["pipelines"][name]["processors"]


def test_loadbalancing_routes_by_trace_id_to_several_receivers():
    config = yaml.safe_load((REPO / "deploy/collector/loadbalancing.yaml").read_text())
    exporter = config["exporters"]["loadbalancing"]
    assert exporter["routing_key"] == "traceID" and exporter["routing_key"] in ROUTING_KEYS
    assert set(exporter["protocol"]) == {"otlp"}
    assert len(exporter["resolver"]) == 1 and set(exporter["resolver"]) <= RESOLVERS
    hosts = exporter["resolver"]["static"]["hostnames"]
    assert len(hosts) >= 2 and all(re.fullmatch(r"[\w.-]+:\d+", h) for h in hosts)
    assert all(p["exporters"] == ["loadbalancing"] for p in config["service"]["pipelines"].values())


def _endpoints(config: dict) -> list[str]:
    return [p["endpoint"] for r in config["receivers"].values() for p in r["protocols"].values()]


def test_evaluations_reach_the_backend_beside_the_traces_and_never_loop_back():
    config = yaml.safe_load((REPO / "deploy/collector/evaluations.yaml").read_text())
    pipelines = config["service"]["pipelines"]
    backend, tracegrade = "otlphttp/backend", "otlp/tracegrade"
    assert len(set(_endpoints(config))) == len(_endpoints(config)) == 4  # no port twice
    for name in ("traces", "logs"):  # the agents' telemetry: to the backend and to tracegrade
        assert pipelines[name]["receivers"] == ["otlp"]
        assert set(pipelines[name]["exporters"]) == {backend, tracegrade}
    from_tracegrade = [p for p in pipelines.values() if "otlp/tracegrade" in p["receivers"]]
    assert {_type(n) for n, p in pipelines.items() if p in from_tracegrade} == {"logs", "metrics"}
    for pipeline in from_tracegrade:  # evaluation records and figures: to the backend only
        assert pipeline["receivers"] == ["otlp/tracegrade"] and pipeline["exporters"] == [backend]
    exporter = config["exporters"][backend]
    assert exporter["endpoint"] == "${env:BACKEND_OTLP_ENDPOINT}"
    assert "${env:BACKEND_AUTHORIZATION}" in str(exporter["headers"])
    assert "Bearer ${env:TRACEGRADE_TOKEN}" in str(config["exporters"][tracegrade])


def test_the_docs_point_at_the_shipped_files():
    page = (REPO / "docs" / "guides" / "receiving-otlp.md").read_text()
    assert all(f"deploy/collector/{p.name}" in page for p in CONFIGS)
