"""The judge scorer: an LLM grades a case's final answer against a rubric, with the trace as
evidence.

Which traces are judged: a case with ``judge: {rubric, threshold, model}``, else the
dataset's default ``judge``; with ``judge_all`` (``tracegrade score --judge``) also every
other case and every trace scored without a dataset, using the dataset's default rubric or
the built-in ``faithfulness`` rubric (:mod:`tracegrade.judge.rubrics`).

The score is the median of ``settings.repeat`` verdicts (each repetition is its own cached
question). A score below the case's threshold (default 0.7) is a hard failure of the case,
whatever the weights; the score also joins the weighted overall score as the ``judge`` axis
(see :mod:`tracegrade.scoring.overall`), so a case whose only expectation is a rubric passes
on the judge's verdict. A judge that could not produce a valid verdict (endpoint down,
timeout, malformed or out-of-range answers after the retries) is a "judge error": the score
has no value, the case fails with that reason, and no 0 or 1 is invented. A trace with no
final answer, or with tool calls but no recorded tool result for the faithfulness rubric, is
skipped with the reason (nothing to judge).

Calls run concurrently: :meth:`JudgeScorer.prefetch` (called by
:func:`tracegrade.scoring.evaluation.evaluate` before scoring) answers from the cache in the
calling thread and sends the rest to a thread pool of ``settings.concurrency`` workers;
``__call__`` then only reads the results. Called without a prefetch, it judges on the spot.
With a :class:`~tracegrade.judge.budget.JudgeBudget` (online judging), each call starts only
while the budget allows, and the questions it refuses are skipped with its reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, field
from typing import Any

from tracegrade.dataset import Case, Judge
from tracegrade.judge.budget import BUDGET_SKIP, JudgeBudget
from tracegrade.judge.client import JudgeClient, JudgeError, JudgeUsage
from tracegrade.judge.evidence import Evidence, build_evidence, describe
from tracegrade.judge.rubrics import FAITHFULNESS, VERDICT_SCHEMA, Verdict, judge_messages, resolve
from tracegrade.judge.settings import JudgeSettings
from tracegrade.scoring.score import Score, skipped
from tracegrade.store.judge_cache import JudgeCache, cache_key
from tracegrade.trace import AgentTrace

NAME = "judge"
JUDGE_ERROR = "judge error"
"""How a judge failure reads on a case (the start of its reason and hard failure)."""

Pair = tuple[AgentTrace, Case | None]
_Key = tuple[str, str | None, str | None]
"""(trace id, case id, the rubric asked instead of the case's own)."""


def _key(trace: AgentTrace, case: Case | None, spec: Judge | None) -> _Key:
    return trace.trace_id, case.id if case else None, spec.rubric if spec else None


@dataclass(frozen=True)
class _Question:
    """One (trace, case) to judge: the rubric, the evidence and one cache key per repetition."""

    spec: Judge
    rubric: str
    model: str
    messages: list[dict[str, str]]
    evidence: Evidence
    keys: tuple[str, ...]
    service: str | None = None
    """The judged trace's ``service.name`` (what its spend is recorded under)."""


@dataclass
class _Answers:
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    usage: dict[str, JudgeUsage] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Question key -> why it was not asked (the budget's refusal)."""


class JudgeScorer:
    """The ``judge`` scorer (see the module docstring). Not thread-safe itself: call
    ``prefetch`` and ``__call__`` from one thread; it parallelises its own requests.

    ``default`` is the dataset's default rubric; ``judge_all`` judges cases without a rubric
    and traces without a case too; ``enabled=False`` (``--no-judge``) skips every case with
    that reason. ``client`` is created on first need (so credentials are only required when
    a question is not in the cache; see :meth:`needs_judge` to check them up front).
    """

    name = NAME
    evaluator_type = "llm_judge"
    """Its kind in an evaluator's identity (:mod:`tracegrade.scoring.identity`)."""

    def __init__(
        self,
        settings: JudgeSettings,
        *,
        default: Judge | None = None,
        judge_all: bool = False,
        enabled: bool = True,
        cache: JudgeCache | None = None,
        client: JudgeClient | None = None,
    ):
        self.settings = settings
        self.default = default
        self.judge_all = judge_all
        self.enabled = enabled
        self.cache = cache if cache is not None else JudgeCache()
        self._client = client
        self._answers = _Answers()
        self._scores: dict[_Key, Score] = {}
        self.budget: JudgeBudget | None = None
        """Online judging's spending limit (None: none)."""

    @property
    def judge_model(self) -> str:
        """The model asked when a case names none."""
        return self.settings.model

    # --- which traces ---------------------------------------------------------------------------

    def spec(self, case: Case | None) -> Judge | None:
        """The rubric, threshold and model that apply to ``case`` (None: not judged)."""
        if case is not None and case.judge is not None:
            return case.judge
        if case is not None and self.default is not None:
            return self.default
        if self.judge_all:
            return self.default or Judge(rubric=FAITHFULNESS)
        return None

    def needs_judge(self, cases: Sequence[Case | None]) -> bool:
        """True when judging is enabled and some of ``cases`` (None: a trace without a case)
        has a rubric; use it to check credentials before scoring starts."""
        return self.enabled and any(self.spec(case) is not None for case in cases)

    @property
    def client(self) -> JudgeClient:
        """The judge client (created on first use).

        Raises:
            ConfigError: no API key is configured.
        """
        if self._client is None:
            self._client = JudgeClient(self.settings)
        return self._client

    # --- judging --------------------------------------------------------------------------------

    def _question(
        self, trace: AgentTrace, case: Case | None, spec: Judge | None = None
    ) -> _Question | Score:
        spec = spec or self.spec(case)
        if spec is None:
            return skipped(NAME, "no judge rubric for this case")
        if not self.enabled:
            return skipped(NAME, "judge disabled (--no-judge)")
        if not (trace.final_output or "").strip():
            return skipped(NAME, "the trace records no final answer to judge")
        rubric, text = resolve(spec.rubric)
        if (
            rubric == FAITHFULNESS
            and trace.tool_calls
            and all(c.result is None for c in trace.tool_calls)
            and not any(d.content for r in trace.retrievals for d in r.documents)
            and not (case is not None and case.reference_documents)
        ):
            gap = trace.gap("tool_results")
            return skipped(
                NAME,
                "faithfulness needs tool results; " + (gap.reason if gap else "none is recorded"),
            )
        evidence = build_evidence(trace, self.settings.evidence_tokens, case)
        messages = judge_messages(text, evidence)
        model = spec.model or self.settings.model
        keys = tuple(
            cache_key(model, messages, VERDICT_SCHEMA, n) for n in range(self.settings.repeat)
        )
        service = trace.resource_attributes.get("service.name")
        return _Question(
            spec, rubric, model, messages, evidence, keys, None if service is None else str(service)
        )

    def prefetch(self, pairs: Sequence[Pair], *, spec: Judge | None = None) -> None:
        """Judge every (trace, case) pair that needs it: cached verdicts first, the rest
        concurrently (``settings.concurrency``); the scores are kept for ``__call__`` (or for
        :meth:`judged` with the same ``spec``, a rubric asked of every pair instead of each
        case's own).

        Raises:
            ConfigError: some question is not cached and no API key is configured.
        """
        questions: dict[_Key, _Question] = {}
        for trace, case in pairs:
            found = self._question(trace, case, spec)
            key = _key(trace, case, spec)
            if isinstance(found, Score):
                self._scores[key] = found
            else:
                questions[key] = found
        self._answer(list(questions.values()))
        for key, question in questions.items():
            self._scores[key] = self._score(question)

    def _answer(self, questions: list[_Question]) -> None:
        pending: dict[str, _Question] = {}
        for question in questions:
            for key in question.keys:
                if key in self._answers.verdicts or key in pending:
                    continue
                if (cached := self.cache.get(key)) is not None:
                    self._answers.verdicts[key] = Verdict.model_validate(cached)
                    self._answers.usage[key] = JudgeUsage(cached=1)
                else:
                    pending[key] = question
        if not pending:
            return
        client = self.client
        with ThreadPoolExecutor(
            max_workers=min(self.settings.concurrency, len(pending)),
            thread_name_prefix="tracegrade-judge",
        ) as pool:
            futures: dict[Future[tuple[Verdict, JudgeUsage]], str] = {}
            for key, q in pending.items():
                if self.budget is not None:  # one call at a time past the budget's check
                    while len(futures) >= self.settings.concurrency:
                        done, _ = wait(futures, return_when=FIRST_COMPLETED)
                        for future in done:
                            self._record(futures[future], pending[futures[future]], future)
                            del futures[future]
                    if refusal := self.budget.refusal():
                        self._answers.skipped[key] = refusal
                        self.budget.skip()
                        continue
                futures[
                    pool.submit(client.ask, q.messages, Verdict, VERDICT_SCHEMA, model=q.model)
                ] = key
            for future in as_completed(futures):
                self._record(futures[future], pending[futures[future]], future)

    def _record(
        self, key: str, question: _Question, future: Future[tuple[Verdict, JudgeUsage]]
    ) -> None:
        try:
            verdict, usage = future.result()
        except JudgeError as exc:
            self._answers.errors[key], self._answers.usage[key] = str(exc), exc.usage
            self._spend(exc.usage, question)
            return
        except (
            Exception
        ) as exc:  # an unexpected client failure is this case's judge error, not the run's
            self._answers.errors[key], self._answers.usage[key] = (
                f"{type(exc).__name__}: {exc}",
                JudgeUsage(),
            )
            return
        self._answers.verdicts[key], self._answers.usage[key] = verdict, usage
        self._spend(usage, question)
        self.cache.put(
            key,
            question.model,
            question.rubric,
            verdict.model_dump(),
            usage.input_tokens,
            usage.output_tokens,
        )

    def _spend(self, usage: JudgeUsage, question: _Question) -> None:
        if self.budget is not None:
            self.budget.spend(usage.cost_usd, question.service)

    def _score(self, question: _Question) -> Score:
        usage = sum((self._answers.usage.get(k, JudgeUsage()) for k in question.keys), JudgeUsage())
        details: dict[str, Any] = {
            "rubric": question.rubric,
            "threshold": question.spec.threshold,
            "model": question.model,
            "evidence": describe(question.evidence),
            "usage": usage.to_dict(),
            "error": None,
        }
        refused = [self._answers.skipped[k] for k in question.keys if k in self._answers.skipped]
        if refused:
            for key in question.keys:  # asked again next time: the budget may allow it then
                self._answers.skipped.pop(key, None)
            reason = f"judge skipped: {refused[0]}"
            return Score(NAME, None, reason, (), {**details, "skipped": BUDGET_SKIP})
        errors = [self._answers.errors[k] for k in question.keys if k in self._answers.errors]
        if errors:
            message = f"{JUDGE_ERROR}: {errors[0]}" + (
                f" ({len(errors)} of {len(question.keys)} verdicts failed)"
                if len(question.keys) > 1
                else ""
            )
            return Score(NAME, None, message, (message,), {**details, "error": errors[0]})
        verdicts = sorted((self._answers.verdicts[k] for k in question.keys), key=lambda v: v.score)
        value = statistics.median(v.score for v in verdicts)
        middle = verdicts[(len(verdicts) - 1) // 2]
        details.update(
            scores=[v.score for v in verdicts],
            rounds=[
                {"score": v.score, "reasoning": v.reasoning, "met": v.met, "missed": v.missed}
                for v in verdicts
            ],
            reasoning=middle.reasoning,
            met=middle.met,
            missed=middle.missed,
        )
        reason = f"{question.rubric} rubric: {value:.2f} — {middle.reasoning}"
        hard: tuple[str, ...] = ()
        if value < question.spec.threshold:
            missed = f" (missed: {'; '.join(middle.missed)})" if middle.missed else ""
            hard = (
                f"judge: {value:.2f} below threshold {question.spec.threshold:.2f} on the "
                f"{question.rubric} rubric{missed}",
            )
        return Score(NAME, value, reason, hard, details)

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        return self.judged(trace, case)

    def judged(self, trace: AgentTrace, case: Case | None, spec: Judge | None = None) -> Score:
        """The score of ``(trace, case)`` on ``spec`` (default: the case's own rubric), from
        :meth:`prefetch` or judged on the spot."""
        key = _key(trace, case, spec)
        if key not in self._scores:
            self.prefetch([(trace, case)], spec=spec)
        return self._scores.pop(key)  # read once: a later call re-derives it (answers memoised)


def build_judge(
    settings: JudgeSettings,
    dataset_default: Judge | None = None,
    *,
    judge_all: bool = False,
    enabled: bool = True,
    cache: JudgeCache | None = None,
) -> JudgeScorer:
    """The judge scorer of a run; ``dataset_default`` is the dataset's ``judge`` (or None).

    Raises:
        ConfigError: judging is enabled for traces without a case (``judge_all``) and no API
            key is configured (other runs check with :meth:`JudgeScorer.needs_judge` once the
            cases are known).
    """
    scorer = JudgeScorer(
        settings, default=dataset_default, judge_all=judge_all, enabled=enabled, cache=cache
    )
    if enabled and judge_all:
        settings.require_credentials()
    return scorer
