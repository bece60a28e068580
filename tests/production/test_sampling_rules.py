"""Sampling rules (issue 36): the config's ``sampling:`` rules keep traces by resource or span
attribute, each at its own rate, deterministically by trace id and nested (a trace in the 1%
sample is in the 10% one: checked over 100,000 trace ids); ``score --follow`` applies them,
and ``--sample`` sets the rate of traces no rule matches."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.config import load_config
from tracegrade.errors import ConfigError
from tracegrade.pipeline.follow import Follower
from tracegrade.sampling import SamplingRule, SamplingRules, bucket, sampled
from tracegrade.scoring import build_scorers
from tracegrade.store.traces import Store

RULES = """
sampling:
  default: 1.0
  rules:
    - name: staging
      match: {deployment.environment: staging}
      rate: 0.01
    - match: {service.name: [checkout, payments]}
      rate: 0.1
    - match: {tenant.tier: free}
      rate: 0.0
"""


def _config(tmp_path: Path, text: str = RULES):
    path = tmp_path / "tracegrade.yaml"
    path.write_text(text)
    return load_config(path)


def test_rules_are_read_from_the_config(tmp_path):
    rules = _config(tmp_path).sampling
    assert [r.rate for r in rules.rules] == [0.01, 0.1, 0.0] and rules.default == 1.0
    assert rules.rules[0].label == "staging"
    assert rules.rules[1].match == {"service.name": ("checkout", "payments")}
    with pytest.raises(ConfigError, match=r"sampling\.rules\.0\.rate"):
        _config(tmp_path, "sampling:\n  rules:\n    - match: {a: b}\n      rate: 2\n")
    with pytest.raises(ConfigError, match=r"sampling\.rules\.0\.match"):
        _config(tmp_path, "sampling:\n  rules:\n    - match: {}\n      rate: 0.5\n")


def test_a_rule_matches_resource_or_span_attributes_first_rule_wins(tmp_path):
    rules = _config(tmp_path).sampling
    staging_checkout = [{"service.name": "checkout", "deployment.environment": "staging"}]
    assert rules.rate(staging_checkout) == 0.01  # the first rule that matches
    assert rules.rate([{"service.name": "payments"}, {"http.route": "/pay"}]) == 0.1
    assert rules.rate([{"service.name": "shop"}, {"tenant.tier": "free"}]) == 0.0  # a span's
    assert rules.rate([{"service.name": "shop"}]) == 1.0  # no rule: the default
    both = SamplingRule({"service.name": ("shop",), "region": ("eu",)}, 0.5)
    assert both.matches([{"service.name": "shop"}, {"region": "eu"}])  # every key, any span
    assert not both.matches([{"service.name": "shop"}])


def test_samples_are_deterministic_and_nested_over_100000_trace_ids():
    generator = random.Random(36)
    ids = [f"{generator.getrandbits(128):032x}" for _ in range(100_000)]
    rates = (0.001, 0.01, 0.1, 0.5, 1.0)
    kept = {rate: {t for t in ids if sampled(t, rate)} for rate in rates}
    for smaller, larger in zip(rates, rates[1:], strict=False):
        assert kept[smaller] <= kept[larger], (smaller, larger)  # nested
    for rate in rates:  # each sample is its rate's share, within 5 standard deviations
        spread = 5 * (100_000 * rate * (1 - rate)) ** 0.5
        assert abs(len(kept[rate]) - 100_000 * rate) <= spread + 1, rate
    rules = SamplingRules(
        (
            SamplingRule({"deployment.environment": ("staging",)}, 0.01),
            SamplingRule({"service.name": ("checkout",)}, 0.1),
        )
    )
    staging = [{"deployment.environment": "staging", "service.name": "checkout"}]
    checkout = [{"service.name": "checkout"}]
    in_staging = {t for t in ids if rules.keeps(t, staging)}
    in_checkout = {t for t in ids if rules.keeps(t, checkout)}
    assert in_staging == kept[0.01] and in_checkout == kept[0.1]
    assert in_staging <= in_checkout  # the 1% rule's traces are in the 10% rule's sample
    assert all(bucket(t) == bucket(t) for t in ids[:100])  # the same on every call


def _traces(count: int, resource: dict[str, str], span: dict[str, str] | None = None):
    return [
        trace_request(lambda t, i=i: agent_turn(t, f"q{i}", "ok", span or {}), resource)
        for i in range(count)
    ]


def _ids(requests) -> list[str]:
    return [r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in requests]


def test_score_follow_keeps_each_trace_by_its_rule(tmp_path):
    config = _config(tmp_path)
    staging = _traces(60, {"service.name": "shop", "deployment.environment": "staging"})
    checkout = _traces(60, {"service.name": "checkout"})
    free = _traces(10, {"service.name": "shop"}, {"tenant.tier": "free"})
    other = _traces(10, {"service.name": "shop"})
    db = str(tmp_path / "s.db")
    with Store(db) as store:
        store.write(staging + checkout + free + other)
        follower = Follower(db, None, build_scorers(config), config, quiet_s=0.0, since=0.0)
        scored: set[str] = set()
        while batch := follower.poll(store):
            scored |= {r.trace_id for r, _ in batch if r.trace_id}
        assert store.db.execute("SELECT COUNT(*) FROM score_queue").fetchone()[0] == 0
    expected = {t for t in _ids(staging) if sampled(t, 0.01)}
    expected |= {t for t in _ids(checkout) if sampled(t, 0.1)}
    expected |= set(_ids(other))  # no rule: the default (1.0); the free tier: never
    assert scored == expected


def test_sample_sets_the_rate_of_traces_no_rule_matches(tmp_path):
    config = _config(tmp_path)
    other = _traces(40, {"service.name": "shop"})
    checkout = _traces(20, {"service.name": "checkout"})
    db = str(tmp_path / "d.db")
    with Store(db) as store:
        store.write(other + checkout)
        follower = Follower(
            db, None, build_scorers(config), config, quiet_s=0.0, since=0.0, sample=0.5
        )
        scored = {r.trace_id for r, _ in follower.poll(store)}
    expected = {t for t in _ids(other) if sampled(t, 0.5)}
    expected |= {t for t in _ids(checkout) if sampled(t, 0.1)}
    assert scored == expected and 0 < len(scored) < 60
