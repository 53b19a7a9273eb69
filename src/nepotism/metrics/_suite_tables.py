"""The rubric and pointwise parts of the metric suite, on integer codes (paper 002's metrics).

`rubric_records`: rubric verdicts + a ``rubric-ref`` (and optionally ``rubric-items`` for points)
→ mra, rubric- and instance-level overestimation-rate, hspp-ratio, mipa (SR), score-delta (count
and points weighting), ranking-difference against the reference. `pointwise_records`: direct-
assessment scores → the pointwise self-preference-ratio; with a ``correctness-ref`` (its ``score``
where given, else ``correct`` as 1/0) the same instance-level metrics (mipa paradigm DA) and
score-delta on the raw scale. Each (judge, condition) is one `RecordBatch` (one ``W @ S``).

No pandas group-by or merge on the verdict rows: columns become integer codes once, references are
looked up by code. Left out: pairwise tables (`nepotism.analyses.suite`), file reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nepotism.metrics._batch import RecordBatch
from nepotism.metrics._common import Relations, Row
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics._codes import as_float, codes, lookup, recode
from nepotism.tables import name_codes
from nepotism.metrics._suite_scores import (
    instance_level,
    outcome_level,
    pointwise_preference,
    ranking,
    rubric_level,
    score_delta,
)

if TYPE_CHECKING:
    from nepotism.models import Registry

#: One judge's scored cube: (instance codes, generator codes, scores (n_instances, n_generators)).
_Cube = tuple[np.ndarray, np.ndarray, np.ndarray]

__all__ = ["groups", "local_codes", "pointwise_records", "rubric_records"]


def groups(frame: pd.DataFrame) -> Iterator[tuple[str, str, np.ndarray]]:
    """Yield (judge, condition, row indices) per (judge, condition), sorted by name."""
    j, j_labels = codes(frame["judge"])
    c, c_labels = codes(frame["condition"]) if "condition" in frame else (np.zeros(len(frame), np.int64), np.array(["default"]))
    combined = j * max(c_labels.size, 1) + c
    order = np.argsort(combined, kind="stable")
    sorted_keys = combined[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if order.size else np.array([], int)
    ends = np.r_[starts[1:], order.size]
    found = [
        (
            str(j_labels[sorted_keys[s] // max(c_labels.size, 1)]),
            str(c_labels[sorted_keys[s] % max(c_labels.size, 1)]),
            order[s:e],
        )
        for s, e in zip(starts, ends)
    ]
    yield from sorted(found, key=lambda t: (t[0], t[1]))


def local_codes(global_codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the codes present to 0..k−1 (keeping order); returns (local codes, present global codes)."""
    present = np.zeros(size, dtype=bool)
    present[global_codes] = True
    remap = np.cumsum(present) - 1
    return remap[global_codes], np.flatnonzero(present)


def _cell_mean(cell: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    ok = np.isfinite(values)
    count = np.bincount(cell, ok, size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(cell, np.where(ok, values, 0.0), size) / count


def _relations(registry: Registry, judge: str, names: Iterable[object]) -> Relations:
    """Per generator name: the registry relation's name (the label its records carry) and, under
    ``("scope", name)``, the one scope rule's answer (`nepotism.models.Registry.scope`)."""
    out: Relations = {}
    for n in names:
        out[str(n)] = registry.relation(judge, str(n)).name
        out[("scope", str(n))] = registry.scope(judge, str(n))
    return out


def rubric_records(
    frame: pd.DataFrame,
    registry: Registry,
    refs: Mapping[str, pd.DataFrame],
    boot: Bootstrap,
    *,
    leaderboard: Mapping[str, float] | None = None,
) -> list[Row]:
    """Rubric metrics per (judge, condition); per setup too when the table has a ``setup`` column.

    Single-rubric and all-rubrics verdicts (paper 002 §2) are never pooled: each setup is its own
    set of records, tagged ``variant.setup``.
    """
    if "setup" not in frame:
        return _rubric_records(frame, registry, refs, boot, leaderboard=leaderboard)
    records = []
    for setup, part in frame.groupby("setup", sort=True):
        for record in _rubric_records(part.reset_index(drop=True), registry, refs, boot, leaderboard=leaderboard):
            record["variant"] = {**record["variant"], "setup": setup}
            records.append(record)
    return records


def _rubric_records(
    frame: pd.DataFrame,
    registry: Registry,
    refs: Mapping[str, pd.DataFrame],
    boot: Bootstrap,
    *,
    leaderboard: Mapping[str, float] | None = None,
) -> list[Row]:
    ref = refs.get("rubric-ref")
    if ref is None or frame.empty:
        return []
    ic, i_labels = codes(frame["instance_id"])
    mc, m_labels = codes(frame["model"])
    rc, r_labels = codes(frame["rubric_id"])
    sizes = [i_labels.size, m_labels.size, r_labels.size]
    met_ref = lookup(
        [recode(ref["instance_id"], i_labels), recode(ref["model"], m_labels), recode(ref["rubric_id"], r_labels)],
        as_float(ref["met"]),
        sizes,
        [ic, mc, rc],
    )
    met = as_float(frame["met"])
    points = None
    items = refs.get("rubric-items")
    if items is not None:
        points = lookup(
            [recode(items["instance_id"], i_labels), recode(items["rubric_id"], r_labels)],
            items["points"].to_numpy(dtype=float),
            sizes[::2],
            [ic, rc],
        )
    records = []
    for judge, condition, rows in groups(frame):
        has_ref = np.isfinite(met_ref[rows])
        no_ref = int((~has_ref).sum())
        rows = rows[has_ref]
        if rows.size == 0:
            continue
        li, inst = local_codes(ic[rows], i_labels.size)
        lg, gens = local_codes(mc[rows], m_labels.size)
        names = m_labels[gens]
        relation = _relations(registry, judge, names)
        n_i, n_g = inst.size, gens.size
        batch = RecordBatch({"judge": judge, "condition": condition}, n_i, boot)
        m, mr = met[rows], met_ref[rows]
        rubric_level(batch, li, lg, m, mr, n_i, names, relation)
        cell = li * n_g + lg
        ok = np.isfinite(m)
        s_j = _cell_mean(cell, np.where(ok, m, np.nan), n_i * n_g).reshape(n_i, n_g)
        s_r = _cell_mean(cell, np.where(ok, mr, np.nan), n_i * n_g).reshape(n_i, n_g)
        instance_level(batch, s_j, s_r, names, relation, paradigm="SR", delta_label="count")
        if points is not None:
            p = points[rows]
            use = ok & np.isfinite(p)
            norm = np.bincount(cell, np.where(use & (p > 0), p, 0.0), n_i * n_g)
            with np.errstate(invalid="ignore", divide="ignore"):
                pj = np.clip(np.bincount(cell, np.where(use, p * m, 0.0), n_i * n_g) / norm, 0, 1)
                pr = np.clip(np.bincount(cell, np.where(use, p * mr, 0.0), n_i * n_g) / norm, 0, 1)
            pj[norm == 0] = np.nan
            pr[norm == 0] = np.nan
            score_delta(batch, pj.reshape(n_i, n_g), pr.reshape(n_i, n_g), names, relation, weighting="points")
        ranking(batch, s_j, s_r, names, relation, against="rubric-ref")
        if leaderboard:
            ranking(batch, s_j, None, names, relation, against="leaderboard", leaderboard=leaderboard)
        out = batch.records()
        if no_ref:
            for r in out:
                if r["metric"] == "mra":
                    r["excluded"] = {**r["excluded"], "no reference verdict": no_ref}
                    r["n_excluded"] += no_ref
        records += out
    return records


def pointwise_scores(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Codes and float scores of a pointwise frame: (instance codes, labels, model codes, labels, scores)."""
    ic, i_labels = codes(frame["instance_id"])
    mc, m_labels = codes(frame["model"])
    return ic, i_labels, mc, m_labels, as_float(frame["score"])


def _reference_scores(ref: pd.DataFrame) -> np.ndarray:
    score = as_float(ref["score"]) if "score" in ref else np.full(len(ref), np.nan)
    if "correct" in ref:
        score = np.where(np.isfinite(score), score, as_float(ref["correct"]))
    return score


def pointwise_records(
    frame: pd.DataFrame,
    registry: Registry,
    refs: Mapping[str, pd.DataFrame],
    boot: Bootstrap,
    *,
    leaderboard: Mapping[str, float] | None = None,
    rank_against: str | None = None,
) -> list[Row]:
    if frame.empty:
        return []
    ic, i_labels, mc, m_labels, score = pointwise_scores(frame)
    ref = refs.get("correctness-ref")
    ref_score = None
    if ref is not None:
        ref_score = lookup(
            [recode(ref["instance_id"], i_labels), recode(ref["model"], m_labels)],
            _reference_scores(ref),
            [i_labels.size, m_labels.size],
            [ic, mc],
        )
    cubes = {}
    records = []
    for judge, condition, rows in groups(frame):
        li, inst = local_codes(ic[rows], i_labels.size)
        lg, gens = local_codes(mc[rows], m_labels.size)
        names = m_labels[gens]
        relation = _relations(registry, judge, names)
        n_i, n_g = inst.size, gens.size
        cell = li * n_g + lg
        s_j = _cell_mean(cell, score[rows], n_i * n_g).reshape(n_i, n_g)  # replicates averaged
        cubes[(judge, condition)] = (inst, gens, s_j)
        batch = RecordBatch({"judge": judge, "condition": condition}, n_i, boot)
        pointwise_preference(batch, s_j, names, relation)
        if ref_score is not None:
            s_r = _cell_mean(cell, ref_score[rows], n_i * n_g).reshape(n_i, n_g)
            instance_level(batch, s_j, s_r, names, relation, paradigm="DA", delta_label="raw scale")
            ranking(batch, s_j, s_r, names, relation, against="correctness-ref")
        if leaderboard:
            ranking(batch, s_j, None, names, relation, against="leaderboard", leaderboard=leaderboard)
        records += batch.records()
    if rank_against:
        records += _against_judge(cubes, rank_against, m_labels, registry, boot)
    return records


def _against_judge(
    cubes: Mapping[tuple[str, str], _Cube], other: str, m_labels: np.ndarray, registry: Registry, boot: Bootstrap
) -> list[Row]:
    """ranking-difference of each judge's leaderboard against judge ``other``'s, on shared instances."""
    records = []
    theirs = {c: v for (j, c), v in cubes.items() if j == other}
    for (judge, condition), (inst, gens, s_j) in sorted(cubes.items()):
        if judge == other or condition not in theirs:
            continue
        o_inst, o_gens, o_s = theirs[condition]
        shared_i, a_i, b_i = np.intersect1d(inst, o_inst, return_indices=True)
        shared_g, a_g, b_g = np.intersect1d(gens, o_gens, return_indices=True)
        if shared_i.size == 0 or shared_g.size < 2:
            continue
        names = m_labels[shared_g]
        batch = RecordBatch({"judge": judge, "condition": condition}, shared_i.size, boot)
        ranking(
            batch,
            s_j[np.ix_(a_i, a_g)],
            o_s[np.ix_(b_i, b_g)],
            names,
            _relations(registry, judge, names),
            against=f"judge {other}",
        )
        records += batch.records()
    return records


def _outcome_cube(inst: np.ndarray, gx: np.ndarray, gy: np.ndarray, outcome: np.ndarray, n_i: int, n_g: int) -> np.ndarray:
    """(n_i, n_g, n_g) outcome codes of G against G′ from comparisons (x's outcome; replicates averaged, then signed)."""
    total = np.zeros((n_i, n_g, n_g))
    count = np.zeros((n_i, n_g, n_g))
    ok = np.isfinite(outcome)
    for a, b, sign in ((gx, gy, 1.0), (gy, gx, -1.0)):
        np.add.at(total, (inst[ok], a[ok], b[ok]), sign * outcome[ok])
        np.add.at(count, (inst[ok], a[ok], b[ok]), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.sign(total / count), np.nan)


def pairwise_rank_records(
    comp: pd.DataFrame,
    registry: Registry,
    boot: Bootstrap,
    *,
    preference: pd.DataFrame | None = None,
    leaderboard: Mapping[str, float] | None = None,
    rank_against: str | None = None,
) -> list[Row]:
    """ranking-difference from aggregated comparisons (``model_x < model_y``, ``outcome`` for x).

    The judge's leaderboard scores a generator by its win score (win 1, tie ½, loss 0), averaged
    per instance then over instances. References: the humans of a ``preference-ref`` on the same
    comparisons (000 §5.4), a fixed ``leaderboard``, or another judge (``rank_against``).
    """
    if comp.empty:
        return []
    (ic,), i_labels = name_codes(comp["instance_id"])
    (xc, yc), m_labels = name_codes(comp["model_x"], comp["model_y"])
    outcome = comp["outcome"].to_numpy(dtype=float)
    human = np.full(len(comp), np.nan)
    if preference is not None:
        p = preference
        pa, pb = p["model_a"].astype(str).to_numpy(), p["model_b"].astype(str).to_numpy()
        w = p["winner"].astype(str).to_numpy()
        code_a = np.where(w == pa, 1.0, np.where(w == pb, -1.0, 0.0))
        first = pa < pb
        px, py = np.where(first, pa, pb), np.where(first, pb, pa)
        sizes = [i_labels.size, m_labels.size, m_labels.size]
        human = lookup(
            [recode(p["instance_id"].astype(str), i_labels), recode(pd.Series(px), m_labels), recode(pd.Series(py), m_labels)],
            np.where(first, code_a, -code_a),
            sizes,
            [ic, xc, yc],
        )
    cubes = {}
    records = []
    for judge, condition, rows in groups(comp):
        inst_all = np.r_[ic[rows], ic[rows]]
        gen_all = np.r_[xc[rows], yc[rows]]
        li, inst = local_codes(inst_all, i_labels.size)
        lg, gens = local_codes(gen_all, m_labels.size)
        n_i, n_g = inst.size, gens.size
        cell = li * n_g + lg
        o = outcome[rows]
        s_j = _cell_mean(cell, np.r_[(o + 1) / 2, (1 - o) / 2], n_i * n_g).reshape(n_i, n_g)
        cubes[(judge, condition)] = (inst, gens, s_j)
        names = m_labels[gens]
        relation = _relations(registry, judge, names)
        batch = RecordBatch({"judge": judge, "condition": condition}, n_i, boot)
        if preference is not None:
            h = human[rows]
            both = np.isfinite(o) & np.isfinite(h)
            judged = _cell_mean(
                cell, np.r_[np.where(both, (o + 1) / 2, np.nan), np.where(both, (1 - o) / 2, np.nan)], n_i * n_g
            ).reshape(n_i, n_g)
            humans = _cell_mean(
                cell, np.r_[np.where(both, (h + 1) / 2, np.nan), np.where(both, (1 - h) / 2, np.nan)], n_i * n_g
            ).reshape(n_i, n_g)
            ranking(batch, judged, humans, names, relation, against="preference-ref")
            n_rows = rows.size
            w_j = _outcome_cube(li[:n_rows], lg[:n_rows], lg[n_rows:], np.where(both, o, np.nan), n_i, n_g)
            w_r = _outcome_cube(li[:n_rows], lg[:n_rows], lg[n_rows:], np.where(both, h, np.nan), n_i, n_g)
            outcome_level(batch, w_j, w_r, names, relation, paradigm="PWC", mipa=False)
        if leaderboard:
            ranking(batch, s_j, None, names, relation, against="leaderboard", leaderboard=leaderboard)
        records += batch.records()
    if rank_against:
        records += _against_judge(cubes, rank_against, m_labels, registry, boot)
    return records
