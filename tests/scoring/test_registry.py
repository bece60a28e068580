"""The scorer registry: built-ins, entry-point plugins and ``--scorer module:name`` references."""

from __future__ import annotations

import sys
import textwrap
import uuid
from importlib.metadata import EntryPoint

import pytest

from tests.support.traces import make_case, make_dataset, make_trace, tool
from tracegrade.errors import ConfigError
from tracegrade.scoring import build_scorers, evaluate, registry
from tracegrade.scoring.registry import (
    ENTRY_POINT_GROUP,
    FunctionScorer,
    builtin_names,
    builtins,
    load_reference,
    plugins,
)
from tracegrade.scoring.score import Score

BUILTIN = [
    "budgets",
    "completeness",
    "context_preserved",
    "errors",
    "faithfulness",
    "groundedness",
    "hallucination",
    "tool_arguments",
    "tool_correctness",
    "value_grounding",
]

PLUGIN_SOURCE = '''
from tracegrade.scoring.score import Score


class Politeness:
    """A plugin class taking the config."""

    def __init__(self, config):
        self.name = "politeness"
        self.threshold = config.threshold

    def __call__(self, trace, case):
        polite = "please" in (trace.final_output or "").lower()
        return Score(self.name, 1.0 if polite else 0.0, f"threshold seen: {self.threshold}")


class NoArgs:
    name = "no_args"

    def __call__(self, trace, case):
        return Score(self.name, 0.25, "constant")


def length_ok(trace, case):
    return 0.5


def has_answer(trace, case):
    return trace.final_output is not None


def full_score(trace, case):
    return Score("full_score", 0.75, "from a Score", ("custom hard failure",))


def nothing(trace, case):
    return None


def renamed(trace, case):
    return 1
renamed.scorer_name = "brevity"


def make_scorer(config):
    return Politeness(config)


def bad_factory(config):
    return 42


NOT_CALLABLE = 3


class NeedsTwo:
    def __init__(self, config, other):
        pass
'''


@pytest.fixture
def plugin_module(tmp_path, monkeypatch, request):
    """A module with scorer plugins, importable under a unique name."""
    name = f"tg_plugins_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(lambda: sys.modules.pop(name, None))
    return name


def entry_points_returning(*entries):
    def fake(*, group):
        assert group == ENTRY_POINT_GROUP
        return list(entries)

    return fake


# --- built-ins ------------------------------------------------------------------------------------


def test_builtin_names_include_every_shipped_scorer_sorted():
    names = builtin_names()
    assert set(BUILTIN) <= set(names) and names == sorted(names)


def test_builtins_returns_every_scorer_by_default(config):
    assert [s.name for s in builtins(config)] == builtin_names()


def test_builtins_returns_only_the_named_scorers(config):
    assert [s.name for s in builtins(config, ["completeness", "budgets"])] == [
        "completeness",
        "budgets",
    ]


def test_unknown_builtin_name_is_an_error_listing_the_valid_names(config):
    with pytest.raises(ConfigError) as info:
        builtins(config, ["groundedness", "politness"])
    message = str(info.value)
    assert "politness" in message
    assert all(name in message for name in builtin_names())


# --- references (--scorer module:name) ------------------------------------------------------------


def test_reference_to_a_class_taking_config_is_constructed_with_the_config(config, plugin_module):
    scorer = load_reference(f"{plugin_module}:Politeness", config)
    score = scorer(make_trace(final_output="Please wait."), None)
    assert (
        scorer.name == "politeness"
        and score.value == 1.0
        and score.reason == f"threshold seen: {config.threshold}"
    )


def test_reference_to_a_class_without_arguments_is_constructed(config, plugin_module):
    assert load_reference(f"{plugin_module}:NoArgs", config)(make_trace(), None).value == 0.25


def test_reference_to_a_factory_taking_config_is_called_with_the_config(config, plugin_module):
    assert load_reference(f"{plugin_module}:make_scorer", config).name == "politeness"


def test_plain_function_returning_a_float_is_wrapped(config, plugin_module):
    scorer = load_reference(f"{plugin_module}:length_ok", config)
    assert isinstance(scorer, FunctionScorer) and scorer.name == "length_ok"
    assert scorer(make_trace(), None).value == 0.5


def test_plain_function_returning_a_bool_scores_one_or_zero(config, plugin_module):
    scorer = load_reference(f"{plugin_module}:has_answer", config)
    assert scorer(make_trace(final_output="x"), None).value == 1.0
    assert scorer(make_trace(final_output=None), None).value == 0.0


def test_plain_function_returning_a_score_is_passed_through(config, plugin_module):
    score = load_reference(f"{plugin_module}:full_score", config)(make_trace(), None)
    assert score == Score("full_score", 0.75, "from a Score", ("custom hard failure",))


def test_plain_function_returning_none_did_not_run(config, plugin_module):
    assert load_reference(f"{plugin_module}:nothing", config)(make_trace(), None).value is None


def test_function_scorer_name_comes_from_scorer_name(config, plugin_module):
    assert load_reference(f"{plugin_module}:renamed", config).name == "brevity"


def test_reference_without_a_colon_is_an_error(config):
    with pytest.raises(ConfigError, match="expected module:name"):
        load_reference("just_a_module", config)


def test_reference_to_a_missing_module_is_an_error(config):
    with pytest.raises(ConfigError, match="cannot import"):
        load_reference("tg_no_such_module_xyz:scorer", config)


def test_reference_to_a_missing_attribute_is_an_error(config, plugin_module):
    with pytest.raises(ConfigError, match="has no attribute 'missing'"):
        load_reference(f"{plugin_module}:missing", config)


def test_reference_to_something_not_callable_is_an_error(config, plugin_module):
    with pytest.raises(ConfigError, match="not callable"):
        load_reference(f"{plugin_module}:NOT_CALLABLE", config)


def test_factory_that_returns_no_scorer_is_an_error(config, plugin_module):
    with pytest.raises(ConfigError, match="did not return a scorer"):
        load_reference(f"{plugin_module}:bad_factory", config)


def test_class_that_cannot_be_constructed_is_an_error(config, plugin_module):
    with pytest.raises(ConfigError, match="cannot construct"):
        load_reference(f"{plugin_module}:NeedsTwo", config)


# --- entry points ---------------------------------------------------------------------------------


def test_entry_point_plugins_are_loaded(config, plugin_module, monkeypatch):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("politeness", f"{plugin_module}:Politeness", ENTRY_POINT_GROUP),
            EntryPoint("length", f"{plugin_module}:length_ok", ENTRY_POINT_GROUP),
        ),
    )
    assert [s.name for s in plugins(config)] == ["politeness", "length"]


def test_entry_point_function_is_named_after_the_entry_point(config, plugin_module, monkeypatch):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("conciseness", f"{plugin_module}:length_ok", ENTRY_POINT_GROUP)
        ),
    )
    [scorer] = plugins(config)
    assert scorer.name == "conciseness"


def test_broken_entry_point_is_a_warning_not_a_crash(config, plugin_module, monkeypatch):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("broken", "tg_no_such_module_xyz:scorer", ENTRY_POINT_GROUP),
            EntryPoint("politeness", f"{plugin_module}:Politeness", ENTRY_POINT_GROUP),
        ),
    )
    with pytest.warns(UserWarning, match="scorer plugin 'broken'.*skipped"):
        loaded = plugins(config)
    assert [s.name for s in loaded] == ["politeness"]


def test_entry_point_whose_factory_fails_is_a_warning(config, plugin_module, monkeypatch):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("bad", f"{plugin_module}:bad_factory", ENTRY_POINT_GROUP)
        ),
    )
    with pytest.warns(UserWarning, match="'bad'"):
        assert plugins(config) == []


def test_build_scorers_adds_plugins_and_references_after_the_builtins(
    config, plugin_module, monkeypatch
):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("length", f"{plugin_module}:length_ok", ENTRY_POINT_GROUP)
        ),
    )
    names = [s.name for s in build_scorers(config, [f"{plugin_module}:NoArgs"], names=["errors"])]
    assert names == ["errors", "length", "no_args"]


def test_build_scorers_without_plugins_skips_entry_points(config, plugin_module, monkeypatch):
    monkeypatch.setattr(
        registry,
        "entry_points",
        entry_points_returning(
            EntryPoint("length", f"{plugin_module}:length_ok", ENTRY_POINT_GROUP)
        ),
    )
    assert [s.name for s in build_scorers(config, names=["errors"], with_plugins=False)] == [
        "errors"
    ]


def test_plugin_score_appears_in_results_and_its_hard_failure_fails_the_case(config, plugin_module):
    scorers = build_scorers(
        config, [f"{plugin_module}:full_score"], names=["groundedness"], with_plugins=False
    )
    case = make_case(id="c", criteria={"grounded": True})
    [result] = evaluate(
        [make_trace(tool_calls=[tool("lookup", result="ok")])], make_dataset(case), scorers, config
    ).results
    assert result.score == 1.0 and result.scores["full_score"] == 0.75
    assert "custom hard failure" in result.hard_failures and not result.passed
