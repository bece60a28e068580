"""Fixtures for the example shop agent: a global SDK tracer provider with an in-memory
exporter, the scripted model, and scoring of what the agent exported."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.examples.conversation import run_case
from tests.support.ecommerce_model import Variant, ecommerce_model
from tests.support.openai_server import Script, ScriptedOpenAI
from tracegrade.config import defaults
from tracegrade.dataset import Case, Dataset, load_dataset
from tracegrade.normalize import normalize_all
from tracegrade.otlp.codec import parse_traces_protobuf, spans_from_request
from tracegrade.scoring import RunResult, build_scorers, config_for, evaluate
from tracegrade.trace import AgentTrace

pytest.importorskip(
    "opentelemetry.instrumentation.openai_v2",
    reason="install the examples extra: pip install -e '.[examples]'",
)

REPO = Path(__file__).parents[2]
DATASET = REPO / "datasets" / "ecommerce" / "golden.yaml"


@pytest.fixture(scope="session")
def _session_exporter() -> InMemorySpanExporter:
    """An in-memory exporter on the global SDK provider (set here unless one already is)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(resource=Resource.create({"service.name": "ecommerce-agent"}))
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture
def spans(_session_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The exporter, emptied for this test."""
    _session_exporter.clear()
    yield _session_exporter
    _session_exporter.clear()


@pytest.fixture(scope="session")
def dataset() -> Dataset:
    return load_dataset(DATASET)


def scripted_model(variant: Variant = "good", **options: float) -> ScriptedOpenAI:
    """The scripted shop model on a ScriptedOpenAI server (not started)."""
    return scripted_server(ecommerce_model(variant, **options))


def scripted_server(script: Script) -> ScriptedOpenAI:
    """A ScriptedOpenAI server (not started) for ``script``."""
    return ScriptedOpenAI(script)


@pytest.fixture(scope="session")
def _model_servers() -> Iterator[dict[tuple, ScriptedOpenAI]]:
    """Started scripted-model servers by (variant, options), shared: the script is stateless."""
    servers: dict[tuple, ScriptedOpenAI] = {}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture
def model(
    monkeypatch: pytest.MonkeyPatch, _model_servers: dict[tuple, ScriptedOpenAI]
) -> Callable[..., ScriptedOpenAI]:
    """Point the agent's OpenAI client at the scripted model (a variant; see ecommerce_model)."""

    def start(variant: Variant = "good", **options: float) -> ScriptedOpenAI:
        key = (variant, *sorted(options.items()))
        if key not in _model_servers:
            _model_servers[key] = scripted_model(variant, **options).start()
        server = _model_servers[key]
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
        return server

    return start


def exported_traces(exporter: InMemorySpanExporter) -> list[AgentTrace]:
    """The finished spans as OTLP protobuf bytes (the SDK exporter's encoder), read back and
    normalised by tracegrade."""
    data = encode_spans(exporter.get_finished_spans()).SerializeToString()
    return normalize_all(spans_from_request(parse_traces_protobuf(data)))


def score_cases(
    exporter: InMemorySpanExporter, dataset: Dataset, cases: Sequence[Case]
) -> RunResult:
    """Run ``cases`` through the in-process agent (one root span each) and score the traces."""
    from examples.ecommerce.agent import answer

    for case in cases:
        run_case(case, answer)
    config = config_for(defaults(), dataset)
    subset = dataset.model_copy(update={"cases": list(cases)})
    return evaluate(
        exported_traces(exporter), subset, build_scorers(config, with_plugins=False), config
    )
