"""Agreement numbers of ``judge-check``: accuracy and Cohen's kappa (statsmodels'), the same
function ``tracegrade agreement`` uses."""

from __future__ import annotations

import pytest

from tracegrade.judge.calibrate import Row, agreement
from tracegrade.scoring.agreement import rater_agreement


def cohen_kappa(pairs):
    return rater_agreement(pairs).kappa


def test_kappa_of_a_textbook_table():
    # 50 items: both yes 20, rater A yes / B no 5, A no / B yes 10, both no 15
    # -> p_o 0.7, p_e 0.5, kappa 0.4
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_kappa_edges():
    assert cohen_kappa([]) is None
    assert cohen_kappa([(True, True)] * 4) is None  # chance agreement is 1: undefined
    assert cohen_kappa([(True, False), (False, True)]) == pytest.approx(-1.0)
    assert cohen_kappa([(True, True), (False, False)]) == pytest.approx(1.0)


def test_rows_the_judge_could_not_judge_are_left_out():
    rows = [
        Row("a", "t1", "pass", 0.9, "pass", ""),
        Row("b", "t2", "fail", 0.2, "fail", ""),
        Row("c", "t3", "fail", None, None, "judge error: timeout"),
        Row("d", None, "pass", None, None, "no trace"),
    ]
    result = agreement(rows)
    assert (result.compared, result.not_compared, result.accuracy, result.kappa) == (2, 2, 1.0, 1.0)
    assert result.to_dict()["rows"][2]["note"] == "judge error: timeout"
    assert result.to_dict()["agreement"]["both_fail"] == 1


def test_kappa_interval_of_the_textbook_table():
    # statsmodels' asymptotic standard error of this table is 0.127 (SAS: ASE 0.1270)
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    stats = rater_agreement(pairs)
    assert (stats.kappa_low, stats.kappa_high) == (
        pytest.approx(0.1511, abs=1e-4),
        pytest.approx(0.6489, abs=1e-4),
    )
    # "fail" is the positive class: the rater (second) failed 20, of which the reference 15;
    # the reference failed 25
    assert (stats.precision, stats.recall) == (pytest.approx(15 / 20), pytest.approx(15 / 25))
