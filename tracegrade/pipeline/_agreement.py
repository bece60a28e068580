"""``tracegrade agreement``: how well each of tracegrade's verdicts agrees with people.

The conversations that carry a human label (the latest one; :mod:`tracegrade.store.review`)
or end-user feedback of known polarity (the latest; :mod:`tracegrade.store.feedback`) are read
from the store, scored now as ``tracegrade score`` scores them (reference-free, or against
``--dataset``'s cases, conversations matching no case left out), and every **rater** is
compared with both **references** (labels, feedback) by
:func:`tracegrade.scoring.agreement.rater_agreement`. Raters:

- ``overall``: the case verdict (pass / fail);
- ``judge``: the LLM judge when it ran (``--judge``, or a case rubric), passing at its
  rubric's threshold; else the latest stored judge verdict on the conversation's traces
  (:func:`tracegrade.store.verdicts.judge_verdicts`), passing at 0.7;
- ``production_rules.invented_values`` and ``production_rules.hidden_tool_errors``: each
  production rule on its own (passes when it found nothing);
- every other scorer that produced a value: passes at the run's threshold (the dataset's, else
  the config's, 0.7 by default).

Labels and feedback join conversations by trace id, so they may name any of a conversation's
traces. The disagreeing conversations are listed per rater so a person can look.

``tracegrade judge-check`` (:func:`check_judge`) is the judge's row of the same question: the
judge run on the traces of a dataset's labelled cases, or (``--from-review``) the judge rater
of :func:`agreement` against the store's labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.config import Config, load_config
from tracegrade.dataset import Dataset, Judge, load_dataset
from tracegrade.errors import ConfigError, InputError
from tracegrade.judge import calibrate
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.judge.settings import resolve_settings
from tracegrade.pipeline.datasets import open_dataset
from tracegrade.pipeline.judging import JudgeOptions, judge_cache, make_judge
from tracegrade.pipeline.outputs import write_json
from tracegrade.pipeline.reading import ErrorSink, load, load_mapping, parse_since
from tracegrade.pipeline.review import StoredConversation, conversations_of, scored
from tracegrade.scoring import config_for
from tracegrade.scoring.agreement import RaterAgreement, rater_agreement
from tracegrade.scoring.evaluation import run_threshold
from tracegrade.scoring.results import CaseResult
from tracegrade.store import review as queue_store
from tracegrade.store.feedback import Feedback, feedback_for, traces_with_feedback
from tracegrade.store.review import Label
from tracegrade.store.traces import Store
from tracegrade.store.verdicts import judge_verdicts

REFERENCES = ("labels", "feedback")
JUDGE_THRESHOLD: float = Judge.model_fields["threshold"].default
"""A stored judge verdict passes at the default rubric threshold (0.7)."""


@dataclass(frozen=True)
class AgreementOptions:
    """What ``agreement`` takes: the store, labels and feedback since ``since`` (``30m`` /
    ``7d`` / an ISO date), an optional dataset (path or loaded), the config, the judge (False:
    stored verdicts only; None: cases with a rubric; True: every conversation)."""

    db: str | None = None
    since: str | None = None
    dataset: str | Dataset | None = None
    config: str | Config | None = None
    judge: bool | None = False
    json_path: str | None = None


@dataclass(frozen=True)
class Pair:
    """One conversation rated by a rater and a reference: ``when`` is the reference's time
    (Unix s); ``reason`` the rater's; ``note`` the label's note or the feedback's comment."""

    conversation: str
    trace_ids: tuple[str, ...]
    when: float
    reference: bool
    rater: bool
    reason: str = ""
    note: str | None = None
    score: float | None = None
    """The rater's score in [0, 1], when it has one."""


@dataclass(frozen=True)
class RaterRow:
    """One rater against one reference: the statistics and the disagreeing pairs."""

    rater: str
    reference: str
    stats: RaterAgreement
    disagreements: tuple[Pair, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: rater, reference, the statistics and the disagreements."""
        return {
            "rater": self.rater,
            "reference": self.reference,
            **self.stats.to_dict(),
            "disagreements": [
                {
                    "conversation": p.conversation,
                    "trace_ids": list(p.trace_ids),
                    "human": "pass" if p.reference else "fail",
                    "tracegrade": "pass" if p.rater else "fail",
                    "reason": p.reason,
                    "note": p.note,
                }
                for p in self.disagreements
            ],
        }


@dataclass(frozen=True)
class AgreementReport:
    """Every rater against every reference; ``conversations`` read, ``labelled`` and
    ``with_feedback`` among them, ``not_scored`` (no case matched); the pass ``threshold``."""

    conversations: int
    labelled: int
    with_feedback: int
    not_scored: int
    threshold: float
    rows: tuple[RaterRow, ...]
    pairs: Mapping[tuple[str, str], tuple[Pair, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (``tracegrade.agreement/1``)."""
        return {
            "schema_version": "tracegrade.agreement/1",
            "conversations": self.conversations,
            "labelled": self.labelled,
            "with_feedback": self.with_feedback,
            "not_scored": self.not_scored,
            "threshold": self.threshold,
            "rows": [row.to_dict() for row in self.rows],
        }


def _latest_label(conversation: StoredConversation, labels: Sequence[Label]) -> Label | None:
    ids = set(conversation.trace_ids)
    found = [label for label in labels if ids & set(label.trace_ids)]
    return max(found, key=lambda label: label.created_at) if found else None


def _latest_feedback(
    conversation: StoredConversation, feedback: Mapping[str, list[Feedback]]
) -> Feedback | None:
    known = [
        f for t in conversation.trace_ids for f in feedback.get(t, []) if f.positive is not None
    ]
    return max(known, key=lambda f: (f.time_unix_nano, f.received_at)) if known else None


Verdict = tuple[bool, str, float | None]
"""A rater's (passed, reason, score) on one conversation."""


def _finding(item: Any) -> str:
    """One production-rules finding as a person reads it: an invented value's text
    (``{"kind", "text"}``), a hidden tool error's ``name: error`` (``{"name", "error"}``)."""
    if isinstance(item, Mapping):
        if "text" in item:
            return str(item["text"])
        return f"{item.get('name')}: {item.get('error')}"
    return str(item)


def verdicts_of(
    result: CaseResult, threshold: float, stored_judge: Mapping[str, Any] | None
) -> dict[str, Verdict]:
    """Rater -> its verdict on one scored conversation (see the module docstring)."""
    out: dict[str, Verdict] = {
        "overall": (result.passed, "; ".join(result.reasons[:2]) or "passed", result.score)
    }
    judge = result.details.get("judge") or {}
    if judge.get("value") is not None:
        bar = (judge.get("details") or {}).get("threshold", JUDGE_THRESHOLD)
        out["judge"] = (judge["value"] >= bar, str(judge.get("reason") or ""), judge["value"])
    elif stored_judge is not None:
        score = float(stored_judge["score"])
        out["judge"] = (score >= JUDGE_THRESHOLD, str(stored_judge.get("reason") or ""), score)
    rules = result.details.get("production_rules") or {}
    if rules.get("value") is not None:
        found = rules.get("details") or {}
        for rule, key in (("invented_values", "invented"), ("hidden_tool_errors", "hidden_errors")):
            items = found.get(key) or []
            reason = "; ".join(_finding(i) for i in items[:4]) or "nothing found"
            out[f"production_rules.{rule}"] = (not items, reason, 0.0 if items else 1.0)
    for name, value in sorted(result.scores.items()):
        if name not in ("judge", "production_rules") and value is not None:
            reason = str((result.details.get(name) or {}).get("reason") or "")
            out[name] = (value >= threshold, reason, value)
    return out


def collect_pairs(
    conversations: Sequence[StoredConversation],
    results: Mapping[str, CaseResult],
    labels: Sequence[Label],
    feedback: Mapping[str, list[Feedback]],
    stored_judge: Mapping[str, Mapping[str, Any]],
    threshold: float,
) -> dict[tuple[str, str], list[Pair]]:
    """(rater, reference) -> the pairs of every scored conversation with that reference."""
    pairs: dict[tuple[str, str], list[Pair]] = {}
    for conversation in conversations:
        result = results.get(conversation.key)
        if result is None:
            continue
        judged = [stored_judge[t] for t in conversation.trace_ids if t in stored_judge]
        raters = verdicts_of(result, threshold, judged[-1] if judged else None)
        references = _references(conversation, labels, feedback)
        for reference, (passed, when, note) in references.items():
            for rater, (rater_passed, reason, score) in raters.items():
                pair = Pair(
                    conversation.key,
                    conversation.trace_ids,
                    when,
                    passed,
                    rater_passed,
                    reason,
                    note,
                    score,
                )
                pairs.setdefault((rater, reference), []).append(pair)
    return pairs


def _references(
    conversation: StoredConversation,
    labels: Sequence[Label],
    feedback: Mapping[str, list[Feedback]],
) -> dict[str, tuple[bool, float, str | None]]:
    out: dict[str, tuple[bool, float, str | None]] = {}
    label = _latest_label(conversation, labels)
    if label is not None:
        out["labels"] = (label.verdict == "pass", label.created_at, label.note)
    found = _latest_feedback(conversation, feedback)
    if found is not None and found.positive is not None:
        out["feedback"] = (found.positive, found.received_at, found.explanation)
    return out


def _order(rater: str) -> tuple[int, str]:
    first = {"overall": 0, "judge": 1}
    return (first.get(rater, 2 if rater.startswith("production_rules") else 3), rater)


def rows_of(pairs: Mapping[tuple[str, str], Sequence[Pair]]) -> list[RaterRow]:
    """One row per (rater, reference): overall, judge, production rules, then scorers."""
    rows = []
    for rater, reference in sorted(pairs, key=lambda k: (REFERENCES.index(k[1]), _order(k[0]))):
        found = pairs[(rater, reference)]
        stats = rater_agreement([(p.reference, p.rater) for p in found])
        wrong = tuple(p for p in found if p.reference != p.rater)
        rows.append(RaterRow(rater, reference, stats, wrong))
    return rows


def agreement(options: AgreementOptions) -> AgreementReport:
    """Measure every rater against the labels and the feedback (see the module docstring);
    the report is written to ``json_path`` when given.

    Raises:
        ConfigError: a bad ``since``; no labelled conversation and no feedback to compare with.
        DatasetError: a bad dataset. StoreError: the store cannot be read.
    """
    since = parse_since(options.since)
    since_s = None if since is None else since / 1e9
    dataset = load_dataset(options.dataset) if isinstance(options.dataset, str) else options.dataset
    config = options.config if isinstance(options.config, Config) else load_config(options.config)
    config = config_for(config, dataset)
    with Store(options.db) as store:
        labels = queue_store.labels(store.db, since_s=since_s)
        recent = traces_with_feedback(store.db, since_s)
        ids = [t for label in labels for t in label.trace_ids] + list(recent)
        conversations = conversations_of(store, ids)
        all_ids = [t for c in conversations for t in c.trace_ids]
        feedback = {
            t: [f for f in found if since_s is None or f.received_at >= since_s]
            for t, found in feedback_for(store.db, all_ids).items()
        }
        stored_judge = judge_verdicts(store, all_ids)
    if not conversations:
        raise ConfigError(
            "no stored conversation has a label or end-user feedback"
            + (f" since {options.since}" if options.since else "")
            + ": label some (tracegrade review) or import labels (tracegrade review import)"
        )
    results = scored(conversations, config, dataset, options.judge)
    threshold = run_threshold(None, dataset, config)
    pairs = collect_pairs(conversations, results, labels, feedback, stored_judge, threshold)
    report = AgreementReport(
        conversations=len(conversations),
        labelled=sum(1 for c in conversations if _latest_label(c, labels) is not None),
        with_feedback=sum(1 for c in conversations if _latest_feedback(c, feedback) is not None),
        not_scored=sum(1 for c in conversations if c.key not in results),
        threshold=threshold,
        rows=tuple(rows_of(pairs)),
        pairs={k: tuple(v) for k, v in pairs.items()},
    )
    if options.json_path:
        write_json(options.json_path, report.to_dict())
    return report


def over_time(
    report: AgreementReport, bucket_s: float = 7 * 86400.0, reference: str = "labels"
) -> list[dict[str, Any]]:
    """Per rater, the agreement with ``reference`` in each ``bucket_s`` window of the
    reference's time (a label's, a feedback's): ``{"rater", "buckets": [{"start_s", "n",
    "accuracy", "kappa"}]}``, oldest window first, windows without a pair left out."""
    out = []
    for (rater, ref), found in sorted(report.pairs.items(), key=lambda kv: _order(kv[0][0])):
        if ref != reference:
            continue
        windows: dict[float, list[Pair]] = {}
        for pair in found:
            windows.setdefault(pair.when // bucket_s * bucket_s, []).append(pair)
        buckets = []
        for start, pairs in sorted(windows.items()):
            stats = rater_agreement([(p.reference, p.rater) for p in pairs])
            buckets.append(
                {"start_s": start, "n": stats.n, "accuracy": stats.accuracy, "kappa": stats.kappa}
            )
        out.append({"rater": rater, "buckets": buckets})
    return out


@dataclass(frozen=True)
class JudgeCheckOptions:
    """``judge-check``: the dataset (a path or ``store:NAME``), where its traces come from,
    the judge."""

    dataset: str | None
    files: Sequence[str] = ()
    db: str | None = None
    messages_key: str = "messages"
    judge_model: str | None = None
    judge_concurrency: int = 4
    judge_repeat: int = 1
    mapping: str | None = None
    config: str | None = None
    json_path: str | None = None


def _judge_labelled_cases(
    options: JudgeCheckOptions, on_errors: ErrorSink
) -> tuple[calibrate.Agreement, list[InputError]]:
    """Run the judge on the dataset's cases that carry a human ``label`` and measure the
    agreement (written to ``json_path`` when given); also the input errors met.

    Raises:
        ConfigError: no traces to judge; no judge credentials.
        DatasetError: a bad dataset.
    """
    if options.dataset is None:
        raise ConfigError("judge-check needs a DATASET whose cases carry labels")
    dataset = open_dataset(options.dataset, options.db)
    config = config_for(load_config(options.config), dataset)
    labelled = [c for c in dataset.cases if c.label is not None]
    judge = JudgeOptions(
        mode=True,
        model=options.judge_model,
        concurrency=options.judge_concurrency,
        repeat=options.judge_repeat,
    )
    scorer = make_judge(config, dataset, labelled, judge)
    if scorer is None:  # no labelled case: judge_check names the problem
        scorer = JudgeScorer(resolve_settings(options.judge_model), judge_all=True)
    loaded = load(options.files, options.db, options.messages_key)
    on_errors(loaded.errors)
    if not loaded.traces:
        raise ConfigError("no traces to judge")
    with judge_cache(options.db, scorer):
        found = calibrate.judge_check(loaded.traces, dataset, scorer, load_mapping(options.mapping))
    if options.json_path:
        write_json(options.json_path, found.to_dict())
    return found, loaded.errors


def check_judge(
    options: JudgeCheckOptions, from_review: bool = False, on_errors: ErrorSink = lambda e: None
) -> tuple[calibrate.Agreement, list[InputError]]:
    """``judge-check``: the judge's agreement with the labels of the dataset's cases (the
    judge run on their traces, :func:`tracegrade.judge.calibrate.judge_check`), or
    (``from_review``) with the store's labels (:func:`agreement` with the judge on every
    labelled conversation, its judge row); written to ``json_path`` when given. Also the input
    errors met.

    Raises:
        ConfigError: no dataset and not ``from_review``; no judge credentials; nothing to judge.
        DatasetError: a bad dataset.
    """
    if not from_review:
        if not options.dataset:
            raise ConfigError("give a DATASET whose cases carry labels, or --from-review")
        return _judge_labelled_cases(options, on_errors)
    report = agreement(
        AgreementOptions(
            db=options.db, dataset=options.dataset or None, config=options.config, judge=True
        )
    )
    rows = [
        calibrate.Row(
            p.conversation,
            p.trace_ids[0],
            "pass" if p.reference else "fail",
            p.score,
            "pass" if p.rater else "fail",
            p.reason,
        )
        for p in report.pairs.get(("judge", "labels"), ())
    ]
    result = calibrate.agreement(rows)
    if options.json_path:
        write_json(options.json_path, result.to_dict())
    return result, []
