"""Issue 37: Langfuse, Jaeger and Tempo cannot run here, so their clients are tested against
answers recorded in the shapes their API documentation publishes (``make_recordings.py``),
replayed strictly: the pulls page, resume where the last one ended, skip traces already
stored, wait out a rate limit, and what they store reads exactly as the traces themselves."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import tracegrade.pipeline.pull as pull_module
from tests.sources import cassette, scenarios
from tracegrade.cli import cli, pull_options
from tracegrade.pipeline.pull import pull
from tracegrade.pipeline.reading import from_files, from_store
from tracegrade.sources.langfuse import trace_hex_id
from tracegrade.store.pulls import last_pull
from tracegrade.store.traces import Store

FRAMEWORKS = Path(__file__).parents[1] / "data" / "frameworks"
RECORDED_FROM = {
    "jaeger": FRAMEWORKS / "strands-latest" / "traces.binpb.gz",
    "tempo": FRAMEWORKS / "langgraph-openinference" / "traces.binpb.gz",
}


@pytest.fixture(autouse=True)
def _langfuse_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in scenarios.LANGFUSE_ENV.items():
        monkeypatch.setenv(name, value)


def _replay(
    name: str, db: Path, *, every_answer: bool = True
) -> tuple[cassette.Cassette, list, list[float]]:
    recorded = cassette.load(name)
    results, waits = scenarios.run(name, httpx.MockTransport(recorded.handler), str(db))
    assert recorded.unknown == [], "a request the recording does not hold"
    if every_answer:
        assert len(recorded.used) == len(recorded.interactions), "a recorded answer went unasked"
    return recorded, results, waits


def _documents(traces: list) -> list[str]:
    return sorted(json.dumps(t.to_dict(), sort_keys=True) for t in traces)


@pytest.mark.parametrize("name", ["jaeger", "tempo"])
def test_otlp_backends_read_exactly_as_the_recording(name: str, tmp_path: Path) -> None:
    """Every trace pulled (in pages, then resumed) reads as the same trace read from the file
    the answers were recorded from: tool calls, results, answer, tokens, times, attributes."""
    _, results, _ = _replay(name, tmp_path / "store.db")
    with Store(tmp_path / "store.db") as store:
        pulled = from_store(store).traces
    assert _documents(pulled) == _documents(from_files([RECORDED_FROM[name]]).traces)
    assert len(pulled) == 8
    assert sum(len(r.new) for r in results) == 8


def test_jaeger_pages_by_window_and_resumes(tmp_path: Path) -> None:
    """The first pull pages newest first (2 a page) through its window; the second resumes at
    the newest trace start of the first (found again, not fetched again); a pull by trace id
    finds a stored trace stored and a missing one missing."""
    recorded, (first, second, by_id), _ = _replay("jaeger", tmp_path / "store.db")
    assert (len(first.new), len(first.known), first.resumed_from) == (4, 0, None)
    starts = [t.start_unix_nano for t in from_files([RECORDED_FROM["jaeger"]]).traces]
    newest_first = sorted(starts)[3]
    assert second.resumed_from == newest_first
    assert (len(second.new), len(second.known)) == (4, 1)
    assert (by_id.new, by_id.known) == ([], ["a1dff493d5162afce746cdcfcd2c4518"])
    searches = [json.loads(k) for k in recorded.served if json.loads(k)[1] == "/api/v3/traces"]
    assert {dict(k[2])["query.num_traces"] for k in searches} == {"2"}
    assert len(searches) >= 3  # pages


def test_tempo_splits_a_full_window(tmp_path: Path) -> None:
    """A search answering ``limit`` traces is asked again in halves until no answer is full."""
    recorded, (first, second), _ = _replay("tempo", tmp_path / "store.db")
    assert (len(first.new), len(second.new), len(second.known)) == (3, 5, 3)
    windows = [dict(json.loads(k)[2]) for k in recorded.served if "/api/search" in k]
    assert len(windows) > 3
    assert all(w["limit"] == "6" for w in windows)
    with Store(tmp_path / "store.db") as store:
        key = "tempo http://backend.invalid langgraph-agent "
        assert last_pull(store, key).until_unix_nano == max(
            t.start_unix_nano for t in from_files([RECORDED_FROM["tempo"]]).traces
        )


def test_langfuse_observations_read_as_genai_spans(tmp_path: Path) -> None:
    """Langfuse's generations and tools become GenAI semconv spans read exactly: the tool calls
    with their arguments and results, the answer, the tokens, the session."""
    _, (first, second, by_id), waits = _replay("langfuse", tmp_path / "store.db")
    assert waits == [2.0]  # the recorded 429's Retry-After
    assert (len(first.new), len(second.known), len(by_id.new)) == (2, 1, 1)
    with Store(tmp_path / "store.db") as store:
        traces = {t.trace_id: t for t in from_store(store).traces}
    assert set(traces) == {t["id"] for t in scenarios.langfuse_traces()[:2]} | {
        trace_hex_id("lf-legacy-7d3c2a10")
    }
    for trace in traces.values():
        assert list(trace.user_inputs) == ["What's the weather in Seattle and San Francisco today?"]
        assert trace.final_output.startswith("Today, the weather in Seattle is 50 degrees")
        assert [(c.name, c.arguments, c.result, c.call_id) for c in trace.tool_calls] == [
            (
                "get_current_weather",
                {"location": "Seattle, WA"},
                "50 degrees and raining",
                "call_JpNb8OiAkbIbHzDggfpdDHpi",
            ),
            (
                "get_current_weather",
                {"location": "San Francisco, CA"},
                "70 degrees and sunny",
                "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
            ),
        ]
        assert [(c.input_tokens, c.output_tokens) for c in trace.llm_calls] == [(75, 51), (99, 25)]
        assert list(trace.llm_calls[0].tool_call_ids) == [c.call_id for c in trace.tool_calls]
        assert trace.conversation_id and trace.conversation_id.startswith("session-")
        assert not trace.gaps


def test_langfuse_pull_twice_adds_nothing(tmp_path: Path) -> None:
    """Ids that are not hex become stable ids: pulling the same traces again adds no span."""
    db = tmp_path / "store.db"
    _replay("langfuse", db)
    recorded, results, _ = _replay("langfuse", db, every_answer=False)
    assert not any("/api/public/traces/" in key for key in recorded.served)  # none fetched
    assert sum(len(r.new) for r in results) == 0
    assert sum(r.spans for r in results) == 0


def test_a_pull_reports_progress_page_by_page(tmp_path: Path) -> None:
    """The progress callback (the CLI prints it on stderr on long pulls) hears of every page:
    running counts of traces found and stored, and requests sent."""
    recorded = cassette.load("jaeger")
    first = scenarios.PULLS["jaeger"][0]
    options = dataclasses.replace(first, db=str(tmp_path / "store.db"))
    source = scenarios.source_with("jaeger", httpx.MockTransport(recorded.handler), [])
    seen: list[tuple[int, int, int]] = []
    pull(
        options,
        source=source,
        progress=lambda p: seen.append((len(p.trace_ids), len(p.new), p.requests)),
    )
    assert len(seen) >= 2
    assert seen == sorted(seen) and seen[-1][:2] == (4, 4)
    assert 2 <= seen[-1][2] <= len(recorded.served)  # the last, empty window comes after


def test_import_from_prints_progress_and_what_it_pulled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tracegrade import --from``: a running count on stderr while it pulls (every
    ``PROGRESS_EVERY_S``, here 0), then one line: found, new, already stored, spans."""
    recorded = cassette.load("jaeger")
    source = scenarios.source_with("jaeger", httpx.MockTransport(recorded.handler), [])
    monkeypatch.setattr(pull_module, "open_source", lambda name, url: source)
    monkeypatch.setattr(pull_options, "PROGRESS_EVERY_S", 0.0)
    first = scenarios.PULLS["jaeger"][0]
    args = [
        "import",
        "--from",
        "jaeger",
        "--project",
        "strands-agent",
        "--db",
        str(tmp_path / "s.db"),
    ]
    args += ["--since", str(first.since), "--until", str(first.until), "--page-size", "2"]
    monkeypatch.setattr("tracegrade.pipeline.pull.PullOptions.page_size", 2, raising=False)
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "pulling from jaeger: " in result.stderr
    assert "pulled 4 trace(s) from jaeger at http://backend.invalid: 4 new" in result.stdout
