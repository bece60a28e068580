"""``judge-check``: the LLM judge against human labels, as a view of ``tracegrade agreement``:
the labels of a dataset's cases (:func:`tracegrade.pipeline.judging.check_judge`), or with
``from_review`` the store's labels (:func:`tracegrade.pipeline._agreement.agreement` with the
judge on every labelled conversation, its judge row). Both measure with
:func:`tracegrade.scoring.agreement.rater_agreement`."""

from __future__ import annotations

from tracegrade.errors import ConfigError, InputError
from tracegrade.judge.calibrate import Agreement, Row, agreement
from tracegrade.pipeline._agreement import AgreementOptions
from tracegrade.pipeline._agreement import agreement as measure
from tracegrade.pipeline.judging import JudgeCheckOptions, check_judge
from tracegrade.pipeline.outputs import write_json
from tracegrade.pipeline.reading import ErrorSink


def check(
    options: JudgeCheckOptions, from_review: bool = False, on_errors: ErrorSink = lambda e: None
) -> tuple[Agreement, list[InputError]]:
    """The judge's agreement with the dataset's labels, or (``from_review``) with the store's.

    Raises:
        ConfigError: no dataset and not ``from_review``; no judge credentials; nothing to judge.
        DatasetError: a bad dataset.
    """
    if not from_review:
        if not options.dataset:
            raise ConfigError("give a DATASET whose cases carry labels, or --from-review")
        return check_judge(options, on_errors)
    report = measure(
        AgreementOptions(
            db=options.db, dataset=options.dataset or None, config=options.config, judge=True
        )
    )
    rows = [
        Row(
            p.conversation,
            p.trace_ids[0],
            "pass" if p.reference else "fail",
            p.score,
            "pass" if p.rater else "fail",
            p.reason,
        )
        for p in report.pairs.get(("judge", "labels"), ())
    ]
    result = agreement(rows)
    if options.json_path:
        write_json(options.json_path, result.to_dict())
    return result, []
