"""Which cases of a golden dataset a run takes: its tier, its tags, its ids."""

from __future__ import annotations

from collections.abc import Sequence

from tracegrade.dataset.cases import Case, Dataset, Tier
from tracegrade.errors import ConfigError


def select_cases(
    dataset: Dataset, tier: Tier | None, tags: Sequence[str] = (), case_ids: Sequence[str] = ()
) -> list[Case]:
    """The cases of ``tier`` (every case for None or ``full``) that carry any of ``tags``
    (comma-separated values allowed) and, when ``case_ids`` are given, only those.

    Raises:
        ConfigError: an unknown case id, or nothing selected.
    """
    cases = dataset.tier(tier)
    wanted = {t.strip() for value in tags for t in value.split(",") if t.strip()}
    if wanted:
        cases = [c for c in cases if wanted & set(c.tags)]
    if case_ids:
        known = {c.id for c in dataset.cases}
        unknown = [i for i in case_ids if i not in known]
        if unknown:
            sample = ", ".join(sorted(str(k) for k in known)[:10])
            raise ConfigError(
                f"--case {', '.join(unknown)}: no such case in {dataset.source} (ids: {sample}"
                + (", ..." if len(known) > 10 else "")
                + ")"
            )
        cases = [c for c in cases if c.id in set(case_ids)]
    if not cases:
        raise ConfigError("no case selected (check --smoke, --tags and --case)")
    return cases
