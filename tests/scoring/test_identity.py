"""Evaluator identity (issue 36): the same scorers, dataset, config and tracegrade version give
the same id; a new dataset version, a changed config or another scorer version gives another;
sampling rules (which traces, not how) and where a file was read from do not count."""

from __future__ import annotations

import dataclasses
import sys
import textwrap

from tracegrade.config import load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.judge.settings import JudgeSettings
from tracegrade.sampling import SamplingRule, SamplingRules
from tracegrade.scoring import build_scorers
from tracegrade.scoring.identity import (
    Evaluator,
    evaluator_of,
    result_id,
    scorer_identity,
    scorer_version,
)
from tracegrade.scoring.registry import load_reference
from tracegrade.version import __version__

DATASET = Dataset(name="shop", cases=[Case(id="c1", input="find shoes")])


def test_the_same_evaluator_has_the_same_id_and_a_new_dataset_version_another():
    config = load_config(None)
    scorers = build_scorers(config)
    first = evaluator_of(scorers, DATASET, config)
    assert first == evaluator_of(build_scorers(config), DATASET.model_copy(), config)
    assert first.id == evaluator_of(scorers, DATASET, config).id and first.id.startswith("ev-")
    edited = DATASET.model_copy(update={"cases": [Case(id="c1", input="find boots")]})
    second = evaluator_of(scorers, edited, config)
    assert second.dataset_fingerprint != first.dataset_fingerprint and second.id != first.id
    moved = DATASET.model_copy(update={"source": "/elsewhere/shop.yaml", "digest": "x"})
    assert evaluator_of(scorers, moved, config).id == first.id  # same cases, same version
    assert {s.version for s in first.scorers} == {__version__}
    assert first.tracegrade_version == __version__
    assert Evaluator.from_dict(first.to_dict()) == first


def test_config_changes_count_and_sampling_rules_do_not():
    config = load_config(None)
    scorers = build_scorers(config)
    base = evaluator_of(scorers, None, config)
    sampled = dataclasses.replace(
        config, sampling=SamplingRules((SamplingRule({"service.name": ("shop",)}, 0.1),), 0.5)
    )
    assert evaluator_of(scorers, None, sampled).id == base.id
    elsewhere = dataclasses.replace(config, files=(*config.files, "/elsewhere/tracegrade.yaml"))
    assert evaluator_of(scorers, None, elsewhere).id == base.id  # where it was read from
    stricter = dataclasses.replace(config, threshold=0.9)
    assert evaluator_of(scorers, None, stricter).config_fingerprint != base.config_fingerprint
    assert evaluator_of(scorers, None, config, {"threshold": 0.9}).id != base.id


def test_scorer_versions_and_kinds(tmp_path, monkeypatch):
    module = tmp_path / "my_scorers.py"
    module.write_text("def politeness(trace, case):\n    return 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    local = load_reference("my_scorers:politeness", load_config(None))
    first = scorer_version(local)
    assert first.startswith("sha256:")
    module.write_text(textwrap.dedent("def politeness(trace, case):\n    return 0.5\n"))
    sys.modules.pop("my_scorers")
    from tracegrade.scoring import identity

    identity._module_version.cache_clear()
    edited = scorer_version(load_reference("my_scorers:politeness", load_config(None)))
    assert edited.startswith("sha256:") and edited != first  # an edited scorer: a new version

    class Versioned:
        name = "custom"
        version = "2.1"

        def __call__(self, trace, case):  # pragma: no cover (never called)
            return None

    assert scorer_version(Versioned()) == "2.1"
    judge = scorer_identity(JudgeScorer(JudgeSettings(model="gpt-4o-mini")))
    assert (judge.name, judge.type, judge.model) == ("judge", "llm_judge", "gpt-4o-mini")


def test_a_result_keeps_its_identity_across_versions_and_scopes_differ():
    one = result_id("ev-1", "t" * 32, "c1")
    assert one == result_id("ev-1", "t" * 32, "c1") and len(one) == 32
    assert one != result_id("ev-2", "t" * 32, "c1")
    assert one != result_id("ev-1", "t" * 32, "c1", "run-1")
