"""A rubric reference from a jury of judges and the judges' meta-evaluation against it (paper 002).

Paper 002 has no ground truth for HealthBench's rubric items: the reference is a plain majority vote
of a jury, the largest judge of each family (§2.4), every juror voting on every answer (its footnote
5 notes that every family is then represented in the reference). `jury_reference` builds that
reference from a ``rubric`` table with `nepotism.grading.jury.rubric_jury` (the one vote function,
`nepotism.votes`); ``exclude_related=True`` is the project's variant in which a juror does not vote
on answers of models related to it (the registry's scope rule), so that a judge is not measured
against its own family's votes. `meta_evaluation` then scores every judge of the table against
the reference (`nepotism.metrics.meta_eval.rubric_verdict_scores`: precision, recall and F1 of
"met", cluster bootstrap over prompts), on all rubric items and, with the rubric items' points,
on the positive and the negative ones apart (paper 002 App. C; §4 slices by polarity). A judge
that sits on the jury is scored against a reference it voted in: its records say so (``in_jury``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from nepotism.grading.jury import JuryResult, rubric_jury
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.meta_eval import rubric_verdict_scores
from nepotism.tables import name_codes, text_values
from nepotism.votes import decide

__all__ = ["jurors_of", "jury_reference", "meta_evaluation", "one_verdict", "polarity_masks", "reference_frame", "verdict_slices"]

_KEY = ["instance_id", "model", "rubric_id"]
_METRIC_IDS = {"precision": "rubric-precision", "recall": "rubric-recall", "f1": "rubric-f1"}


def jury_reference(
    judgments: pd.DataFrame,
    jury: Sequence[str],
    *,
    related: Callable[[str, str], bool] | None = None,
    exclude_related: bool = False,
) -> JuryResult:
    """The jury's majority per (instance, model, rubric item); ``ValueError`` naming a juror with no verdict."""
    judges = set(judgments["judge"].astype(str))
    missing = [j for j in jury if j not in judges]
    if missing:
        raise ValueError(f"no rubric verdict of jury member(s) {', '.join(missing)} in the table")
    votes = judgments[judgments["judge"].astype(str).isin(list(jury))]
    return rubric_jury(votes, exclude_related=exclude_related, related=related)


def reference_frame(result: JuryResult) -> pd.DataFrame:
    """The ``rubric-ref`` table of a jury: its decided items (instance_id, model, rubric_id, met) and
    who voted on each (``jurors``, an extra column a reference table may carry)."""
    return result.decided[_KEY + ["met", "jurors"]].reset_index(drop=True)


def jurors_of(reference: pd.DataFrame) -> set[str]:
    """The judges named in a reference's ``jurors`` column (none when it has no such column)."""
    if "jurors" not in reference:
        return set()
    return {j for cell in reference["jurors"].dropna().astype(str) for j in cell.split(",") if j}


def polarity_masks(joined: pd.DataFrame, items: pd.DataFrame | None) -> dict[str, np.ndarray]:
    """Row masks of ``joined`` (rows with ``instance_id`` and ``rubric_id``) by the polarity of their
    rubric item: ``all``, and with the ``items`` table (points per item) ``positive`` (points > 0,
    a criterion to meet) and ``negative`` (points < 0, one to avoid; paper 002's split)."""
    polarity = {"all": np.ones(len(joined), bool)}
    if items is not None:
        points = items.assign(instance_id=items["instance_id"].astype(str), rubric_id=items["rubric_id"].astype(str))
        points = points.set_index(["instance_id", "rubric_id"])["points"]
        p = points.reindex(pd.MultiIndex.from_frame(joined[["instance_id", "rubric_id"]])).to_numpy(dtype=float)
        polarity.update({"positive": p > 0, "negative": p < 0})
    return polarity


def one_verdict(judgments: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One verdict per judge and item: the majority of its verdicts (replicates), by `nepotism.votes.decide`;
    a split, or no parsed verdict, is NaN. Rows come sorted by ``keys`` (as text), the keys as objects."""
    met = judgments["met"]
    valid = met.notna().to_numpy()
    yes = np.zeros(len(judgments), dtype=np.int64)
    yes[valid] = met[valid].astype(bool).to_numpy()
    no = valid.astype(np.int64) - yes
    # each key coded into its sorted names (a code's order is its name's order): the verdicts are
    # sorted and summed on integers — a group-by of 7.2M rows on five text keys took 25 s
    coded = [name_codes(judgments[key]) for key in keys]
    order = np.lexsort([codes for (codes,), _ in reversed(coded)]) if keys else np.arange(len(judgments))
    ranked = [codes[order] for (codes,), _ in coded]
    same = np.zeros(order.size, dtype=bool)  # a row with the keys of the row before it
    same[1:] = True
    for codes in ranked:
        same[1:] &= codes[1:] == codes[:-1]
    starts = np.flatnonzero(~same)
    counts = (
        np.column_stack([np.add.reduceat(no[order], starts), np.add.reduceat(yes[order], starts)])
        if starts.size
        else np.zeros((0, 2), dtype=np.int64)
    )
    choice = decide(counts)
    out = pd.DataFrame(
        {key: pd.Series(names[codes[starts]], dtype=object) for key, codes, (_, names) in zip(keys, ranked, coded)}
    )
    return out.assign(met=np.where(choice < 0, np.nan, choice.astype(float)))


def verdict_slices(
    judgments: pd.DataFrame, truth: pd.DataFrame, *, items: pd.DataFrame | None, how: str
) -> Iterator[tuple[str, Any, dict[str, Any], str, pd.DataFrame]]:
    """Each judge's verdicts (`one_verdict`, pooled over replicates) joined with ``truth``'s ``met``
    (as 1.0 / 0.0 / NaN in a ``truth`` column; ``how`` = "left" keeps verdicts without one, "inner"
    pairs each verdict with every truth row, e.g. every annotator's label), sliced per judge,
    condition, setup and item polarity (`polarity_masks`): ``(judge, condition or None, {"setup": s}
    or {}, polarity, rows)``. The meta-evaluation and the balanced F1 against people's labels read
    their verdicts this one way."""
    groups = [c for c in ("condition", "setup") if c in judgments]
    own = one_verdict(judgments, ["judge"] + groups + _KEY)
    marks = truth.assign(**{k: pd.Series(text_values(truth[k]), index=truth.index, dtype=object) for k in _KEY})
    marks = marks.assign(truth=marks["met"].map(lambda v: np.nan if v is None or v != v else float(bool(v))))
    joined = own.merge(marks[_KEY + ["truth"]], on=_KEY, how=how)
    polarity = polarity_masks(joined, items)
    for key, g in joined.groupby(["judge"] + groups, sort=True):
        judge, *rest = key
        where = dict(zip(groups, rest))
        setup = {"setup": where["setup"]} if "setup" in where else {}
        for name, member in polarity.items():
            yield judge, where.get("condition"), setup, name, g[member[g.index]]


def meta_evaluation(
    judgments: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    items: pd.DataFrame | None = None,
    jury: Sequence[str] = (),
    reference_name: str = "jury",
    bootstrap: Bootstrap | None = None,
) -> list[dict[str, Any]]:
    """``rubric-precision``, ``rubric-recall`` and ``rubric-f1`` records per judge × condition × polarity.

    A judge's verdicts are pooled over replicates, not over conditions or setups (each its own
    records: ``condition``, ``variant.setup``). ``in_jury``: the judge is one of ``jury`` or named
    in the reference's ``jurors`` column.
    """
    members = set(jury) | jurors_of(reference)
    records = []
    for judge, condition, setup, name, g in verdict_slices(judgments, reference, items=items, how="left"):
        scores = rubric_verdict_scores(
            g["met"].to_numpy(float), g["truth"].to_numpy(float), g["instance_id"].to_numpy(), bootstrap=bootstrap
        )
        for stat, est in scores.items():
            rec = {
                "metric": _METRIC_IDS[stat],
                "judge": judge,
                "generator": None,
                "condition": condition,
                "pair": None,
                "scope": None,
                "variant": {"polarity": name, "reference": reference_name} | setup,
                "in_jury": judge in members,
            }
            rec.update(est.as_dict())
            records.append(rec)
    return records
