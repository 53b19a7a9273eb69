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

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from nepotism.analyses.comparisons import Comparisons, build_comparisons
from nepotism.metrics import Estimate
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.matched import matched_bias, sensitivity_gap
from nepotism.models import Registry
from nepotism.results import new_record
from nepotism.tables import first_rows, group_codes, name_codes, text_values

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
class _Coded:
    """A table whose key columns are integer codes into sorted names: ``names[space][code]`` is the
    name, and a code's order is its name's order (so sorting, grouping and ``x < y`` read the same on
    codes as on names). ``model_x`` and ``model_y`` share the ``model`` names. The key columns are
    factorised once and every later step groups integers; `decoded` gives the names back."""

    frame: pd.DataFrame
    names: dict[str, np.ndarray]

    def space(self, column: str) -> str:
        return "model" if column in ("model_x", "model_y") else column

    def decoded(self, columns: list[str] | None = None) -> pd.DataFrame:
        out = {}
        for column in columns or list(self.frame.columns):
            values = self.frame[column]
            names = self.names.get(self.space(column))
            out[column] = (
                pd.Series(names[values.to_numpy()], dtype=object) if names is not None else values.reset_index(drop=True)
            )
        return pd.DataFrame(out)


def _key_codes(frame: pd.DataFrame) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The key columns of a table of pairs (judge, condition, instance_id, model_x, model_y) as codes,
    and the names per space (`_Coded`): model_x and model_y share the model names."""
    columns: dict[str, np.ndarray] = {}
    names: dict[str, np.ndarray] = {}
    for space, spaced in (
        ("judge", ["judge"]),
        ("condition", ["condition"]),
        ("instance_id", ["instance_id"]),
        ("model", ["model_x", "model_y"]),
    ):
        codes, names[space] = name_codes(*(frame[column] for column in spaced))
        columns |= dict(zip(spaced, codes))
    return columns, names


def _coded(values: pd.DataFrame) -> _Coded:
    """A `pair_values` frame (names) as a `_Coded` one."""
    columns, names = _key_codes(values)
    return _Coded(pd.DataFrame(columns | {"value": values["value"].to_numpy(dtype=float)}), names)


@dataclass(frozen=True)
class MatchedRows:
    """`matched_rows` output: the rows, and for each (condition, model_x, model_y) the judges that may
    serve as references on it and gave a value. Kept as codes (`_Coded`); ``frame`` and
    ``pair_judges`` give the names."""

    coded: _Coded
    coded_pair_judges: dict[tuple[int, int, int], frozenset[int]]  # (condition, model_x, model_y) codes → judge codes

    @cached_property
    def frame(self) -> pd.DataFrame:
        return self.coded.decoded()

    @cached_property
    def pair_judges(self) -> dict[tuple[str, str, str], frozenset[str]]:
        names = self.coded.names
        return {
            (names["condition"][c], names["model"][x], names["model"][y]): frozenset(names["judge"][j] for j in judges)
            for (c, x, y), judges in self.coded_pair_judges.items()
        }


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


def _pairwise_coded(frame: pd.DataFrame, rule: str) -> _Coded:
    """One row per (judge, condition, instance, pair x < y) of a pairwise table, as codes: the
    preference for x after both orders (1, ½, 0), replicates averaged; rows in order of first appearance."""
    comp = frame.frame if isinstance(frame, Comparisons) else build_comparisons(_defaults(frame), rule=rule).frame
    columns, names = _key_codes(comp)
    value = ((comp["outcome"] + 1.0) / 2.0).to_numpy(dtype=float)
    if comp["replicate"].nunique() > 1:  # several comparisons per (judge, condition, instance, pair): their mean
        group = group_codes(*columns.values())
        first = first_rows(group)
        columns = {column: codes[first] for column, codes in columns.items()}
        value = pd.Series(value).groupby(group, sort=True).mean().to_numpy(dtype=float)
    return _Coded(pd.DataFrame(columns | {"value": value}), names)


def _coded_values(frame: pd.DataFrame, kind: str, *, rule: str = "consistent") -> tuple[_Coded, float]:
    """`pair_values` as codes: the pairs of a pointwise or rubric table are formed on codes and never
    turned into names (3.96M pairs of the 7.2M-verdict rubric benchmark)."""
    if kind == "pairwise":
        return _pairwise_coded(frame, rule), 0.5
    if kind not in ("pointwise", "rubric"):
        raise ValueError(f"matched-bias has no design for {kind!r} tables")
    responses = _coded_responses(frame, kind)
    per = responses.frame
    # each (judge, condition, instance)'s responses against each other: value(x) − value(y), x < y by name
    keyed = pd.DataFrame(
        {
            "key": group_codes(per["judge"].to_numpy(), per["condition"].to_numpy(), per["instance_id"].to_numpy()),
            "row": np.arange(len(per)),
        }
    )
    merged = keyed.merge(keyed, on="key", suffixes=("_x", "_y"))
    left, right = merged["row_x"].to_numpy(), merged["row_y"].to_numpy()
    model = per["model"].to_numpy()
    keep = model[left] < model[right]
    left, right = left[keep], right[keep]
    value = per["value"].to_numpy(dtype=float)
    pairs = pd.DataFrame(
        {
            "judge": per["judge"].to_numpy()[left],
            "condition": per["condition"].to_numpy()[left],
            "instance_id": per["instance_id"].to_numpy()[left],
            "model_x": model[left],
            "model_y": model[right],
            "value": value[left] - value[right],
        }
    )
    return _Coded(pairs, responses.names), 0.0


def pair_values(frame: pd.DataFrame, kind: str, *, rule: str = "consistent") -> tuple[pd.DataFrame, float]:
    """One row per (judge, condition, instance, unordered pair x < y) with the judge's value for x.

    Returns (frame, centre): the value of y is ``2·centre − value`` (centre ½ for pairwise
    preferences, 0 for pointwise and rubric differences). NaN = no usable verdict.
    """
    coded, centre = _coded_values(frame, kind, rule=rule)
    return coded.decoded(), centre


def _coded_responses(frame: pd.DataFrame, kind: str) -> _Coded:
    """`response_values` as codes (columns judge, condition, instance_id, model, value)."""
    if kind not in ("pointwise", "rubric"):
        raise ValueError(f"response values are scores or met-rates, not {kind!r} verdicts")
    if kind == "pointwise":
        raw = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    else:
        raw = frame["met"].map({True: 1.0, False: 0.0}).astype(float).to_numpy(dtype=float)
    codes: dict[str, np.ndarray] = {}
    names: dict[str, np.ndarray] = {}
    for space in ("judge", "condition", "instance_id", "model"):
        if space == "condition" and "condition" not in frame:
            codes[space], names[space] = np.zeros(len(frame), dtype=np.int64), np.array(["default"], dtype=object)
            continue
        (codes[space],), names[space] = name_codes(frame[space])
    # one response per (judge, condition, instance, model), replicates and rubrics averaged, in order of first appearance
    response = group_codes(*(codes[space] for space in ("judge", "condition", "instance_id", "model")))
    mean = pd.Series(raw).groupby(response, sort=True).mean().to_numpy(dtype=float)
    first = first_rows(response)
    out = pd.DataFrame({space: codes[space][first] for space in codes} | {"value": mean})
    return _Coded(out, names)


def response_values(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """One row per (judge, condition, instance, model) of a pointwise or rubric table with the
    judge's value of that answer, replicates averaged: its score (pointwise) or the share of its
    parsed rubrics met (rubric). NaN = no usable verdict. `pair_values` differences these."""
    return _coded_responses(frame, kind).decoded()


def truth_codes(references: Mapping[str, pd.DataFrame] | None) -> pd.DataFrame | None:
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
    values: pd.DataFrame,
    registry: Registry,
    *,
    centre: float,
    truth: pd.DataFrame | None = None,
    scopes: tuple[str, ...] = SCOPES,
    neutral: bool = True,
) -> MatchedRows:
    """Rows of the estimator: one per (judge, scope, comparison), oriented to the related candidate.

    Columns: ``judge, condition, scope, instance_id, related, other, judge_value, reference_value``
    (NaN when no reference judge gave a value), ``n_reference`` (judges averaged), ``truth`` (+1 R
    better, −1 worse, 0 equal, NaN unknown). Scope ``neutral`` rows (both candidates unrelated to
    the judge) are oriented to model_x, for the sensitivity check; ``neutral=False`` leaves them
    out (without a truth table no record reads them). ``values`` is a `pair_values` frame.
    """
    coded = values if isinstance(values, _Coded) else _coded(values)
    frame, names = coded.frame, coded.names
    judge_code, x_code, y_code = (frame[column].to_numpy() for column in ("judge", "model_x", "model_y"))
    # each row's (judge, x, y) numbered by first appearance: the registry is asked once per triple, not per row
    triple = group_codes(judge_code, x_code, y_code)
    first = first_rows(triple)
    keys = [
        (names["judge"][j], names["model"][x], names["model"][y])
        for j, x, y in zip(judge_code[first], x_code[first], y_code[first])
    ]
    eligible = np.array([registry.is_unrelated(j, x) and registry.is_unrelated(j, y) for j, x, y in keys], dtype=bool)
    orient = {}
    for scope in scopes:
        orient[scope] = np.array(
            [
                1.0
                if registry.scope(j, x) == scope and registry.is_unrelated(j, y)
                else -1.0
                if registry.scope(j, y) == scope and registry.is_unrelated(j, x)
                else 0.0
                for j, x, y in keys
            ]
        )
    orient["neutral"] = eligible.astype(float)
    is_eligible = eligible[triple]
    value = frame["value"].to_numpy(dtype=float)
    own = is_eligible & ~np.isnan(value)  # rows a reference mean may use (the judge's own, taken out below)
    # every row's (condition, instance, x, y) numbered once: the reference sums are looked up by number, not joined
    condition_code, instance_code = frame["condition"].to_numpy(), frame["instance_id"].to_numpy()
    pair = group_codes(condition_code, instance_code, x_code, y_code)
    sums = pd.Series(value[own]).groupby(pair[own], sort=False).agg(["sum", "count"])
    ref_sum_of, ref_n_of = np.zeros(int(pair.max()) + 1 if pair.size else 0), np.zeros(int(pair.max()) + 1 if pair.size else 0)
    ref_sum_of[sums.index.to_numpy()] = sums["sum"].to_numpy()
    ref_n_of[sums.index.to_numpy()] = sums["count"].to_numpy()
    pair_judges = (
        pd.DataFrame({"c": condition_code[own], "x": x_code[own], "y": y_code[own], "j": judge_code[own]})
        .groupby(["c", "x", "y"], sort=False)["j"]
        .agg(lambda s: frozenset(s.tolist()))
    )
    parts = []
    for scope, table in orient.items():
        if scope == "neutral" and not neutral:
            continue
        code = table[triple]
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
        x, y = x_code[rows], y_code[rows]
        parts.append(
            pd.DataFrame(
                {
                    "judge": judge_code[rows],
                    "condition": condition_code[rows],
                    "scope": scope,
                    "instance_id": instance_code[rows],
                    "related": np.where(flip, y, x),
                    "other": np.where(flip, x, y),
                    "judge_value": np.where(flip, 2 * centre - judge_value, judge_value),
                    "reference_value": np.where(flip, 2 * centre - ref_mean, ref_mean),
                    "n_reference": ref_n.astype(int),
                    "flip": flip,
                    "model_x": x,
                    "model_y": y,
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
    names = {**names, "related": names["model"], "other": names["model"]}
    if not parts:
        empty = pd.DataFrame(
            {
                column: np.array([], dtype=np.int64)
                for column in ["judge", "condition", "instance_id", "related", "other", "model_x", "model_y"]
            }
        )
        empty = empty.assign(
            scope=pd.Series([], dtype=object),
            judge_value=np.array([]),
            reference_value=np.array([]),
            n_reference=np.array([], dtype=int),
            truth=np.array([]),
        )
        return MatchedRows(_Coded(empty[columns + ["model_x", "model_y"]], names), pair_judges.to_dict())
    rows = pd.concat(parts, ignore_index=True)
    del parts
    if truth is not None:
        rows["truth"] = _truth_of(rows, truth, names)
    else:
        rows["truth"] = np.nan
    return MatchedRows(_Coded(rows[columns + ["model_x", "model_y"]], names), pair_judges.to_dict())


def _truth_of(rows: pd.DataFrame, truth: pd.DataFrame, names: dict[str, np.ndarray]) -> np.ndarray:
    """Each row's truth (+1 when its related candidate is truly better), from a `truth_codes` table."""
    if not len(truth):
        return np.full(len(rows), np.nan)
    coded = pd.DataFrame(
        {
            "instance_id": pd.Index(names["instance_id"]).get_indexer(text_values(truth["instance_id"])),
            "model_x": pd.Index(names["model"]).get_indexer(text_values(truth["model_x"])),
            "model_y": pd.Index(names["model"]).get_indexer(text_values(truth["model_y"])),
            "truth": truth["truth"].to_numpy(dtype=float),
        }
    )
    coded = coded[(coded[["instance_id", "model_x", "model_y"]] >= 0).all(axis=1)]  # names these rows never use
    found = rows[["instance_id", "model_x", "model_y"]].merge(
        coded, on=["instance_id", "model_x", "model_y"], how="left", validate="many_to_one"
    )["truth"]
    oriented: np.ndarray = np.where(rows["flip"].to_numpy(), -found.to_numpy(dtype=float), found.to_numpy(dtype=float))
    return oriented


# ------------------------------------------------------------------------------- records
def _reference_judges(group: pd.DataFrame, pair_judges: dict[tuple[int, int, int], frozenset[int]], judge: int) -> list[int]:
    """The judges (codes) whose values entered this group's reference means: the judges of each
    (condition, x, y) the group's rows with a reference value come from, the judge itself left out."""
    found: set[int] = set()
    used = group["reference_value"].notna().to_numpy()
    key = pd.DataFrame(
        {column: group[column].to_numpy()[used] for column in ("condition", "model_x", "model_y")}
    ).drop_duplicates()
    for c, x, y in key.itertuples(index=False, name=None):
        found |= pair_judges.get((c, x, y), frozenset())
    found.discard(judge)
    return sorted(found)


def matched_records(matched: MatchedRows, *, kind: str, options: MatchedOptions | None = None) -> list[dict[str, Any]]:
    """`matched-bias` records per (judge, condition, scope, subset) from `matched_rows`."""
    options = options or MatchedOptions()
    rows, names, pair_judges = matched.coded.frame, matched.coded.names, matched.coded_pair_judges
    if rows.empty:
        return []
    has_truth = rows["truth"].notna().any()
    records: list[dict[str, Any]] = []
    # codes sort as their names do: the groups come in the order the names would give
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
            records.append(
                _record(judge, condition, scope, est, group, pair_judges, names, {"kind": kind, "check": "sensitivity"})
            )
            continue
        for subset in SUBSETS if has_truth else ("all",):
            sub = group if subset == "all" else group[group["truth"] == (-1.0 if subset == "harmful" else 1.0)]
            est = matched_bias(
                sub["judge_value"].to_numpy(),
                sub["reference_value"].to_numpy(),
                sub["instance_id"].to_numpy(),
                bootstrap=options.bootstrap,
            )
            records.append(_record(judge, condition, scope, est, sub, pair_judges, names, {"kind": kind, "subset": subset}))
    return records


def _record(
    judge: int,
    condition: int,
    scope: str,
    est: Estimate,
    group: pd.DataFrame,
    pair_judges: dict[tuple[int, int, int], frozenset[int]],
    names: dict[str, np.ndarray],
    variant: dict[str, str],
) -> dict[str, Any]:
    references = sorted(names["judge"][_reference_judges(group, pair_judges, judge)].tolist())
    usable = (group["reference_value"].notna() & group["judge_value"].notna()).to_numpy()
    instance = group["instance_id"].to_numpy()
    n_items = int(np.unique(instance[usable]).size)
    n_items_excluded = int(np.unique(instance).size - n_items)
    note = est.note
    if not references and len(group):
        note = "no judge is unrelated to both candidates of these comparisons: no reference, no value"
    record = new_record(
        "matched-bias",
        str(names["judge"][judge]),
        str(names["condition"][condition]),
        est,
        scope=scope,
        variant=variant,
        related_models=sorted(names["model"][np.unique(group["related"].to_numpy())].tolist()),
        reference_judges=references,
        n_reference_judges=len(references),
        n_items=n_items,
        n_items_excluded=n_items_excluded,
    )
    record["note"] = note
    return record


def run_matched(
    frame: pd.DataFrame,
    kind: str,
    registry: Registry,
    *,
    references: Mapping[str, pd.DataFrame] | None = None,
    options: MatchedOptions | None = None,
    rule: str = "consistent",
) -> list[dict[str, Any]]:
    """`matched-bias` records for a recorded ``pairwise``, ``pointwise`` or ``rubric`` table."""
    options = options or MatchedOptions()
    values, centre = _coded_values(frame, kind, rule=rule)
    truth = truth_codes(references)
    rows = matched_rows(values, registry, centre=centre, truth=truth, scopes=options.scopes, neutral=truth is not None)
    return matched_records(rows, kind=kind, options=options)
