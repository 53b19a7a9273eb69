"""Recorded tables + registry → `matched-bias` records (a judge against unrelated judges, same items).

For every comparison a judge J made on item x between a candidate R related to J by a scope (self,
family, student, teacher: `Registry.related`) and a candidate O with ``relation(J, O) = UNRELATED``,
J's value for R is set against the mean value of the *reference judges* — every other judge K with
``relation(K, R) = relation(K, O) = UNRELATED`` — on the same item, pair and condition:

- pairwise: value = preference for R after aggregating both orders (paper 004 Eq. 1): 1, ½, 0;
- pointwise: value = score(R) − score(O) by the same judge (leniency cancels);
- rubric: value = met-rate(R) − met-rate(O) on the item's rubrics.

Replicates are averaged. Subsets, when a truth table is given: ``harmful`` keeps comparisons whose
truth says R is worse, ``legitimate`` those where R is better (truth from a ``preference-ref``,
else a ``correctness-ref``'s ``correct`` — or ``score`` when there is no ``correct`` — else a
``rubric-ref``'s met-rate). With a truth table the equal-sensitivity assumption is checked on J's
*neutral* comparisons (both candidates unrelated to J): scope ``neutral``, variant
``check: sensitivity`` (`nepotism.metrics.matched.sensitivity_gap`).

Names the registry does not know are never treated as unrelated: such comparisons and judges are
simply not used. Items with no reference judge are excluded and counted; a judge with no reference
judge at all gets a NaN value with a note. This module reads no files; see `docs/matched-bias.md`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nepotism.analyses.comparisons import Comparisons, build_comparisons, text_values
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.matched import matched_bias, sensitivity_gap
from nepotism.results import new_record

__all__ = [
    "SCOPES",
    "SUBSETS",
    "MatchedOptions",
    "MatchedRows",
    "matched_records",
    "matched_rows",
    "pair_values",
    "response_values",
    "run_matched",
    "truth_codes",
]

SCOPES = ("self", "family", "student", "teacher")
SUBSETS = ("all", "harmful", "legitimate")
_PAIR = ["condition", "instance_id", "model_x", "model_y"]


@dataclass(frozen=True)
class MatchedRows:
    """`matched_rows` output: the rows, and for each (condition, model_x, model_y) the judges that may
    serve as references on it and gave a value."""

    frame: pd.DataFrame
    pair_judges: dict


@dataclass(frozen=True)
class MatchedOptions:
    bootstrap: Bootstrap = Bootstrap()
    scopes: tuple[str, ...] = SCOPES


# ------------------------------------------------------------------------------- per-pair values
def _defaults(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    if "condition" not in frame:
        frame["condition"] = "default"
    if "replicate" not in frame:
        frame["replicate"] = 0
    return frame


def _response_pairs(per_response: pd.DataFrame) -> pd.DataFrame:
    """(judge, condition, instance, model, value) → one row per unordered pair with value(x) − value(y)."""
    key = ["judge", "condition", "instance_id"]
    merged = per_response.merge(per_response, on=key, suffixes=("_x", "_y"))
    merged = merged[merged["model_x"] < merged["model_y"]]
    return pd.DataFrame(
        {
            "judge": merged["judge"],
            "condition": merged["condition"],
            "instance_id": merged["instance_id"],
            "model_x": merged["model_x"],
            "model_y": merged["model_y"],
            "value": merged["value_x"] - merged["value_y"],
        }
    )


def pair_values(frame: pd.DataFrame, kind: str, *, rule: str = "consistent") -> tuple[pd.DataFrame, float]:
    """One row per (judge, condition, instance, unordered pair x < y) with the judge's value for x.

    Returns (frame, centre): the value of y is ``2·centre − value`` (centre ½ for pairwise
    preferences, 0 for pointwise and rubric differences). NaN = no usable verdict.
    """
    if kind == "pairwise":
        comp = frame.frame if isinstance(frame, Comparisons) else build_comparisons(_defaults(frame), rule=rule).frame
        values = {column: comp[column] for column in ["judge"] + _PAIR}  # no copy of the whole frame
        values["value"] = (comp["outcome"] + 1.0) / 2.0
        centre = 0.5
        if comp["replicate"].nunique() <= 1:  # one comparison per (judge, condition, instance, pair): no mean to take
            return pd.DataFrame(
                {column: pd.Series(_text(values[column]), dtype=object) for column in ["judge"] + _PAIR}
                | {"value": values["value"].to_numpy(dtype=float)}
            ), centre
    elif kind in ("pointwise", "rubric"):
        values = _response_pairs(response_values(frame, kind))
        centre = 0.0
    else:
        raise ValueError(f"matched-bias has no design for {kind!r} tables")
    values = pd.DataFrame(
        {column: pd.Series(_text(values[column]), dtype=object) for column in ["judge"] + _PAIR}
        | {"value": values["value"].to_numpy(dtype=float)}
    )  # text stays objects (no Arrow copy)
    out = values.groupby(["judge"] + _PAIR, sort=False)["value"].mean().reset_index()  # mean over replicates
    return out.astype({column: object for column in ["judge"] + _PAIR}), centre


def response_values(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per (judge, condition, instance, model) of a pointwise or rubric table with the
    judge's value of that answer, replicates averaged: its score (pointwise) or the share of its
    parsed rubrics met (rubric). NaN = no usable verdict. `pair_values` differences these."""
    if kind not in ("pointwise", "rubric"):
        raise ValueError(f"response values are scores or met-rates, not {kind!r} verdicts")
    frame = _defaults(frame)
    if kind == "pointwise":
        raw = pd.to_numeric(frame["score"], errors="coerce")
    else:
        raw = frame["met"].map({True: 1.0, False: 0.0}).astype(float)
    responses = pd.DataFrame(
        {
            "judge": frame["judge"].astype(str),
            "condition": frame["condition"].astype(str),
            "instance_id": frame["instance_id"].astype(str),
            "model": frame["model"].astype(str),
            "value": raw.to_numpy(dtype=float),
        }
    )
    return (
        responses.groupby(["judge", "condition", "instance_id", "model"], sort=False, observed=True)["value"].mean().reset_index()
    )


def _text(column: pd.Series) -> np.ndarray:
    return text_values(column).copy()


def truth_codes(references: dict | None) -> pd.DataFrame | None:
    """(instance_id, model_x, model_y, truth): +1 when x is truly better, −1 worse, 0 equal; None without truth.
    A pair with several human labels gets one row: the side more of its labels prefer (0 when even)."""
    refs = references or {}
    pref = refs.get("preference-ref")
    if pref is not None and len(pref):
        a, b = pref["model_a"].astype(str).to_numpy(), pref["model_b"].astype(str).to_numpy()
        winner = pref["winner"].astype(str).to_numpy()
        code_a = np.where(winner == a, 1.0, np.where(winner == b, -1.0, 0.0))
        first = a < b
        codes = pd.DataFrame(
            {
                "instance_id": pref["instance_id"].astype(str).to_numpy(),
                "model_x": np.where(first, a, b),
                "model_y": np.where(first, b, a),
                "truth": np.where(first, code_a, -code_a),
            }
        )
        # several labels of one pair: the side more labels prefer (ties and equal counts: 0), one row per pair
        return (
            codes.groupby(["instance_id", "model_x", "model_y"], sort=False, as_index=False)["truth"]
            .mean()
            .assign(truth=lambda f: np.sign(f["truth"]))
        )
    per_model = None
    corr = refs.get("correctness-ref")
    if corr is not None and len(corr):
        column = "correct" if "correct" in corr and corr["correct"].notna().any() else "score"
        value = corr[column].map(lambda v: np.nan if v is None else float(v))
        per_model = pd.DataFrame(
            {
                "instance_id": corr["instance_id"].astype(str),
                "model": corr["model"].astype(str),
                "value": value.to_numpy(dtype=float),
            }
        )
    elif refs.get("rubric-ref") is not None and len(refs["rubric-ref"]):
        rub = refs["rubric-ref"]
        per_model = pd.DataFrame(
            {
                "instance_id": rub["instance_id"].astype(str),
                "model": rub["model"].astype(str),
                "value": rub["met"].map(lambda v: np.nan if v is None else float(v)).astype(float),
            }
        )
        per_model = per_model.groupby(["instance_id", "model"], sort=False)["value"].mean().reset_index()
    if per_model is None:
        return None
    merged = per_model.merge(per_model, on="instance_id", suffixes=("_x", "_y"))
    merged = merged[merged["model_x"] < merged["model_y"]]
    return pd.DataFrame(
        {
            "instance_id": merged["instance_id"],
            "model_x": merged["model_x"],
            "model_y": merged["model_y"],
            "truth": np.sign(merged["value_x"] - merged["value_y"]),
        }
    )


def matched_rows(
    values: pd.DataFrame, registry, *, centre: float, truth: pd.DataFrame | None = None, scopes=SCOPES, neutral: bool = True
) -> MatchedRows:
    """Rows of the estimator: one per (judge, scope, comparison), oriented to the related candidate.

    Columns: ``judge, condition, scope, instance_id, related, other, judge_value, reference_value``
    (NaN when no reference judge gave a value), ``n_reference`` (judges averaged), ``truth`` (+1 R
    better, −1 worse, 0 equal, NaN unknown). Scope ``neutral`` rows (both candidates unrelated to
    the judge) are oriented to model_x, for the sensitivity check; ``neutral=False`` leaves them
    out (without a truth table no record reads them).
    """
    triples = values[["judge", "model_x", "model_y"]].drop_duplicates()
    eligible = {}
    orient = {scope: {} for scope in (*scopes, "neutral")}
    for judge, x, y in triples.itertuples(index=False):
        eligible[(judge, x, y)] = registry.is_unrelated(judge, x) and registry.is_unrelated(judge, y)
        for scope in scopes:
            code = 0.0
            if registry.scope(judge, x) == scope and registry.is_unrelated(judge, y):
                code = 1.0
            elif registry.scope(judge, y) == scope and registry.is_unrelated(judge, x):
                code = -1.0
            orient[scope][(judge, x, y)] = code
        orient["neutral"][(judge, x, y)] = 1.0 if eligible[(judge, x, y)] else 0.0
    # each row's (judge, x, y) as the number of its first appearance: look-ups once per triple, not per row
    triple = values.groupby(["judge", "model_x", "model_y"], sort=False).ngroup().to_numpy()
    keys = list(triples.itertuples(index=False, name=None))
    is_eligible = np.array([eligible[k] for k in keys], dtype=bool)[triple]
    value = values["value"].to_numpy(dtype=float)
    own = is_eligible & ~np.isnan(value)  # rows a reference mean may use (the judge's own, taken out below)
    # every row's (condition, instance, x, y) coded once: the reference sums are looked up by code, not joined
    pair = values.groupby(_PAIR, sort=False).ngroup().to_numpy()
    sums = pd.Series(value[own]).groupby(pair[own], sort=False).agg(["sum", "count"])
    ref_sum_of, ref_n_of = np.zeros(int(pair.max()) + 1 if pair.size else 0), np.zeros(int(pair.max()) + 1 if pair.size else 0)
    ref_sum_of[sums.index.to_numpy()] = sums["sum"].to_numpy()
    ref_n_of[sums.index.to_numpy()] = sums["count"].to_numpy()
    pair_judges = values[own].groupby(["condition", "model_x", "model_y"], sort=False)["judge"].agg(lambda s: frozenset(s))
    text = {column: values[column].to_numpy(dtype=object) for column in ["judge", *_PAIR]}
    parts = []
    for scope, table in orient.items():
        if scope == "neutral" and not neutral:
            continue
        code = np.array([table[k] for k in keys], dtype=float)[triple]
        rows = np.flatnonzero(code != 0)
        if not rows.size:
            continue
        mine = own[rows]
        ref_sum = ref_sum_of[pair[rows]] - np.where(mine, value[rows], 0.0)
        ref_n = ref_n_of[pair[rows]] - mine
        with np.errstate(invalid="ignore", divide="ignore"):
            ref_mean = np.where(ref_n > 0, ref_sum / np.maximum(ref_n, 1), np.nan)
        flip = code[rows] < 0
        judge_value = value[rows]
        x, y = text["model_x"][rows], text["model_y"][rows]
        names = lambda values: pd.Series(values, dtype=object)  # noqa: E731 - names stay objects (no Arrow copy)
        parts.append(
            pd.DataFrame(
                {
                    "judge": names(text["judge"][rows]),
                    "condition": names(text["condition"][rows]),
                    "scope": scope,
                    "instance_id": names(text["instance_id"][rows]),
                    "related": names(np.where(flip, y, x)),
                    "other": names(np.where(flip, x, y)),
                    "judge_value": np.where(flip, 2 * centre - judge_value, judge_value),
                    "reference_value": np.where(flip, 2 * centre - ref_mean, ref_mean),
                    "n_reference": ref_n.astype(int),
                    "flip": flip,
                    "model_x": names(x),
                    "model_y": names(y),
                }
            )
        )
    columns = [
        "judge",
        "condition",
        "scope",
        "instance_id",
        "related",
        "other",
        "judge_value",
        "reference_value",
        "n_reference",
        "truth",
    ]
    if not parts:
        return MatchedRows(pd.DataFrame(columns=columns + ["model_x", "model_y"]), pair_judges.to_dict())
    rows = pd.concat(parts, ignore_index=True)
    del parts
    if truth is not None:
        rows = rows.merge(truth, on=["instance_id", "model_x", "model_y"], how="left")
        rows["truth"] = np.where(rows["flip"], -rows["truth"], rows["truth"])
    else:
        rows["truth"] = np.nan
    return MatchedRows(rows[columns + ["model_x", "model_y"]], pair_judges.to_dict())


# ------------------------------------------------------------------------------- records
def _reference_judges(group: pd.DataFrame, pair_judges: dict, judge: str) -> list[str]:
    found: set[str] = set()
    used = group[group["reference_value"].notna()]
    for key in used[["condition", "model_x", "model_y"]].drop_duplicates().itertuples(index=False):
        found |= pair_judges.get(tuple(key), frozenset())
    found.discard(judge)
    return sorted(found)


def matched_records(matched: MatchedRows, *, kind: str, options: MatchedOptions | None = None) -> list[dict]:
    """`matched-bias` records per (judge, condition, scope, subset) from `matched_rows`."""
    options = options or MatchedOptions()
    rows, pair_judges = matched.frame, matched.pair_judges
    if rows.empty:
        return []
    has_truth = rows["truth"].notna().any()
    records = []
    for (judge, condition, scope), group in rows.groupby(["judge", "condition", "scope"], sort=True):
        if scope == "neutral":
            if not has_truth:
                continue
            est = sensitivity_gap(
                group["judge_value"].to_numpy(),
                group["reference_value"].to_numpy(),
                group["truth"].to_numpy(),
                group["instance_id"].to_numpy(),
                bootstrap=options.bootstrap,
            )
            records.append(_record(judge, condition, scope, est, group, pair_judges, {"kind": kind, "check": "sensitivity"}))
            continue
        for subset in SUBSETS if has_truth else ("all",):
            sub = group if subset == "all" else group[group["truth"] == (-1.0 if subset == "harmful" else 1.0)]
            est = matched_bias(
                sub["judge_value"].to_numpy(),
                sub["reference_value"].to_numpy(),
                sub["instance_id"].to_numpy(),
                bootstrap=options.bootstrap,
            )
            records.append(_record(judge, condition, scope, est, sub, pair_judges, {"kind": kind, "subset": subset}))
    return records


def _record(judge, condition, scope, est, group, pair_judges, variant) -> dict:
    references = _reference_judges(group, pair_judges, judge)
    with_ref = group.loc[group["reference_value"].notna() & group["judge_value"].notna(), "instance_id"]
    items = group["instance_id"].unique()
    n_items_excluded = int(items.size - with_ref.nunique())
    note = est.note
    if not references and len(group):
        note = "no judge is unrelated to both candidates of these comparisons: no reference, no value"
    record = new_record(
        "matched-bias",
        judge,
        condition,
        est,
        scope=scope,
        variant=variant,
        related_models=sorted(group["related"].unique()),
        reference_judges=references,
        n_reference_judges=len(references),
        n_items=int(with_ref.nunique()),
        n_items_excluded=n_items_excluded,
    )
    record["note"] = note
    return record


def run_matched(
    frame: pd.DataFrame,
    kind: str,
    registry,
    *,
    references: dict | None = None,
    options: MatchedOptions | None = None,
    rule: str = "consistent",
) -> list[dict]:
    """`matched-bias` records for a recorded ``pairwise``, ``pointwise`` or ``rubric`` table."""
    options = options or MatchedOptions()
    values, centre = pair_values(frame, kind, rule=rule)
    truth = truth_codes(references)
    rows = matched_rows(values, registry, centre=centre, truth=truth, scopes=options.scopes, neutral=truth is not None)
    return matched_records(rows, kind=kind, options=options)
