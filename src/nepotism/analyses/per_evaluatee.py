"""The per-evaluatee tables of papers 004 and 003, and judge accuracy on the harmful cases.

Both read the judge's own-answer comparisons the suite builds (`nepotism.analyses.suite._self_rows`:
``judge, condition, instance_id, related`` (the judge's own model), ``other`` (the evaluatee its
answer met), ``outcome_related`` (+1 own preferred, 0 tie, -1 the other) and, when the comparisons
carry it, ``excluded_reason``):

- `spr_records`: ``self-preference-ratio`` per (judge, condition) against each evaluatee
  (``generator`` = the evaluatee, variant ``averaging = "one evaluatee"``: one cell of paper 004
  Tables 1, 3 and 5) and the mean of those (``averaging = "per-evaluatee"``: the tables' "Average"
  column, the y value of Fig. 2), for the opponent population the caller chose (``opponents``).
- `harmful_accuracy_records`: ``judge-accuracy`` on the harmful cases only — the judge's own answer
  wrong and the evaluatee's right (paper 003 Fig. 5; under a perturbation's condition Figs. 8, 12
  and 14) — per (judge, condition), pooled and averaged per evaluatee, and per evaluatee (003
  Table 4), variant ``examples = "harmful (own wrong, other right)"``. It needs the rows'
  ``own_ok`` / ``other_ok`` (1 correct, 0 wrong, NaN ungraded); a comparison whose grades could make
  it harmful but are missing is counted as ungraded, never dropped silently.

What this module leaves out: building the comparisons and the grades (`nepotism.analyses.suite`),
and the verdicts' aggregation over presentation orders (`nepotism.analyses.comparisons`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from nepotism.analyses.comparisons import with_reasons
from nepotism.metrics import reference
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.pairwise import self_preference_ratio
from nepotism.results import new_record

__all__ = ["HARMFUL", "harmful_accuracy_records", "spr_records"]

#: The variant value naming paper 003's harmful cases (the judge's own answer wrong, the other right).
HARMFUL = "harmful (own wrong, other right)"


def _record(
    metric: str, judge: object, condition: object, estimate: Estimate, *, generator: str | None = None, variant: dict[str, str]
) -> dict[str, Any]:
    return new_record(metric, judge, condition, estimate, generator=generator, scope="self", variant=variant)


def _reasons(estimate: Estimate, part: pd.DataFrame) -> Estimate:
    return with_reasons(estimate, part["excluded_reason"]) if "excluded_reason" in part else estimate


def spr_records(rows: pd.DataFrame, opponents: str, bootstrap: Bootstrap) -> list[dict[str, Any]]:
    """SPR per evaluatee and its mean over evaluatees, per (judge, condition) (004 Tables 1/3/5)."""
    records: list[dict[str, Any]] = []
    if rows.empty:
        return records
    for (judge, condition), g in rows.groupby(["judge", "condition"], sort=True):
        outcome, ids = g["outcome_related"].to_numpy(dtype=float), g["instance_id"].to_numpy()
        others = g["other"].astype(str).to_numpy()
        est = self_preference_ratio(outcome, ids, evaluatee=others, averaging="per-evaluatee", bootstrap=bootstrap)
        own = sorted(map(str, set(g["related"])))  # who was compared and with whom, as the audit's SPR says
        records.append(
            {
                **_record(
                    "self-preference-ratio",
                    judge,
                    condition,
                    _reasons(est, g),
                    variant={"opponents": opponents, "averaging": "per-evaluatee"},
                ),
                "generators": own,
                "opponent_models": sorted(set(others))[:20],
            }
        )
        for evaluatee, part in g.groupby("other", sort=True):
            est = self_preference_ratio(
                part["outcome_related"].to_numpy(dtype=float), part["instance_id"].to_numpy(), bootstrap=bootstrap
            )
            records.append(
                {
                    **_record(
                        "self-preference-ratio",
                        judge,
                        condition,
                        _reasons(est, part),
                        generator=str(evaluatee),
                        variant={"opponents": opponents, "averaging": "one evaluatee", "evaluatee": str(evaluatee)},
                    ),
                    "generators": own,
                    "opponent_models": [str(evaluatee)],
                }
            )
    return records


def harmful_accuracy_records(rows: pd.DataFrame, opponents: str, bootstrap: Bootstrap) -> list[dict[str, Any]]:
    """judge-accuracy on the harmful cases per (judge, condition) and per evaluatee (003 Fig. 5, Table 4).

    ``rows`` carry ``own_ok`` and ``other_ok``; a row known not to be harmful (own answer right, or
    the other wrong) is not part of the population; a row that could be harmful but lacks a grade
    is kept, and `nepotism.metrics.reference.judge_accuracy` counts it as ungraded."""
    records: list[dict[str, Any]] = []
    if rows.empty:
        return records
    own, other = rows["own_ok"].to_numpy(dtype=float), rows["other_ok"].to_numpy(dtype=float)
    rows = rows[~((own == 1) | (other == 0))]
    base = {"opponents": opponents, "examples": HARMFUL}
    for (judge, condition), g in rows.groupby(["judge", "condition"], sort=True):
        for averaging in ("per-evaluatee", "pooled"):
            est = _accuracy(g, averaging, bootstrap)
            records.append(_record("judge-accuracy", judge, condition, est, variant={"averaging": averaging, **base}))
        for evaluatee, part in g.groupby("other", sort=True):
            est = _accuracy(part, "pooled", bootstrap)
            records.append(
                _record(
                    "judge-accuracy",
                    judge,
                    condition,
                    est,
                    generator=str(evaluatee),
                    variant={"averaging": "one evaluatee", **base, "evaluatee": str(evaluatee)},
                )
            )
    return records


def _accuracy(part: pd.DataFrame, averaging: str, bootstrap: Bootstrap) -> Estimate:
    est = reference.judge_accuracy(
        part["outcome_related"].to_numpy(dtype=float),
        part["own_ok"].to_numpy(dtype=float),
        part["other_ok"].to_numpy(dtype=float),
        part["other"].astype(str).to_numpy(),
        part["instance_id"].to_numpy(),
        averaging=averaging,
        bootstrap=bootstrap,
    )
    return _reasons(est, part)
