"""Recognition and perplexity parts of the metric suite (papers 000 §5.5, 001 §5, 003).

- `recognition_records`: ``recognition`` tables ("did you write this?") and ``recognition-pairwise``
  tables ("which of the two did you write?") → recognition-accuracy per (judge, condition), with
  the truth taken from the registry (the answer is the judge's own, or its student's / family's
  for ``target="student"`` / ``"family"``); pairwise questions also per evaluatee and, with a
  ``correctness-ref``, on paper 003's harmful cases (own answer wrong, the other right).
- `association_records`: recognition answers joined with the judge's aggregated pairwise verdicts
  on the same (instance, pair) → recognition-preference-association (003), on all own-vs-other
  comparisons and, with a ``correctness-ref``, on the harmful ones (own answer wrong, other right).
- `perplexity_records`: pairwise rows with ``perplexity_a``/``perplexity_b`` (or a ``perplexity``
  table of scorer × response, which also fills those columns from the judge's own scores) →
  perplexity-win-rate (001 §5) for the judge and, with a ``preference-ref``, the humans, over one
  row per comparison (both presentation orders together, oriented once by the dataset's response A:
  `_oriented_pairs`) binned by PPL(A) − PPL(B); groups ``all``, ``self`` (the judge's own answer in
  the pair, re-oriented as response A, 001 Fig. 4) and ``other``; log-perplexity-gap and mean-log-perplexity of own vs other responses (Fig. 5),
  from the ``perplexity`` table when there is one (every response the judge scored), else from
  the pairwise rows.
Left out: asking judges for recognition answers (the live engine) and file reading.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nepotism.metrics._codes import as_float
from nepotism.metrics._common import Row
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.recognition import recognition_accuracy, recognition_preference_association
from nepotism.metrics.reference import log_perplexity_gap, mean_log_perplexity, perplexity_win_rate
from nepotism.results import new_record

if TYPE_CHECKING:
    from nepotism.models import Registry

#: What `perplexity_records` bins: the paper's difference of perplexities (default) or of their logs.
DIFFERENCES = {"perplexity": "perplexity of A − of B", "log": "log perplexity of A − of B"}

__all__ = [
    "DIFFERENCES",
    "HARMFUL",
    "TARGETS",
    "association_records",
    "perplexity_records",
    "recognition_records",
    "recognition_rows",
]

#: Which scopes (`nepotism.models.Registry.scope`, the one rule) count as the recognition target.
TARGETS = {"self": frozenset({"self"}), "student": frozenset({"student"}), "family": frozenset({"self", "family"})}


def _is_target(registry: Registry, judges: np.ndarray, models: np.ndarray, target: str) -> np.ndarray:
    memo: dict[tuple[str, str], bool] = {}
    out = np.empty(len(judges), dtype=bool)
    for i, (j, m) in enumerate(zip(judges, models)):
        key = (j, m)
        if key not in memo:
            memo[key] = registry.scope(j, m) in TARGETS[target]
        out[i] = memo[key]
    return out


def recognition_rows(frame: pd.DataFrame, kind: str, registry: Registry, target: str) -> pd.DataFrame:
    """One row per recognition answer: judge, condition, instance_id, own model, other model (pairwise),
    ``right`` (1/0, NaN unparsed or no truth) and ``reason`` for rows without a truth."""
    judges = frame["judge"].astype(str).to_numpy()
    out = pd.DataFrame(
        {
            "judge": judges,
            "condition": frame["condition"].astype(str).to_numpy(),
            "instance_id": frame["instance_id"].astype(str).to_numpy(),
        }
    )
    if kind == "recognition":
        models = frame["model"].astype(str).to_numpy()
        truth = _is_target(registry, judges, models, target).astype(float)
        claimed = as_float(frame["claimed"])
        out["own"] = np.where(truth == 1, models, None)
        out["other"] = None
        out["truth"] = truth
        out["right"] = np.where(np.isfinite(claimed), (claimed == truth).astype(float), np.nan)
        out["reason"] = np.where(np.isfinite(claimed), np.array(None, dtype=object), "unparsed")
        return out
    a = frame["model_a"].astype(str).to_numpy()
    b = frame["model_b"].astype(str).to_numpy()
    own_a = _is_target(registry, judges, a, target)
    own_b = _is_target(registry, judges, b, target)
    choice = frame["choice"].to_numpy(dtype=object)
    claimed = np.select([choice == "A", choice == "B"], [0.0, 1.0], np.nan)
    truth = np.where(own_a & ~own_b, 0.0, np.where(own_b & ~own_a, 1.0, np.nan))
    out["own"] = np.where(own_a & ~own_b, a, np.where(own_b & ~own_a, b, None))
    out["other"] = np.where(own_a & ~own_b, b, np.where(own_b & ~own_a, a, None))
    out["truth"] = truth
    out["right"] = np.where(np.isfinite(claimed) & np.isfinite(truth), (claimed == truth).astype(float), np.nan)
    out["reason"] = np.where(
        ~np.isfinite(truth),
        np.where(own_a & own_b, "both candidates are the judge's", "no candidate is the judge's"),
        np.where(np.isfinite(claimed), np.array(None, dtype=object), "unparsed"),
    )
    return out


#: The subset of paper 003's harmful cases: the judge's own answer wrong, the other answer right.
HARMFUL = "harmful (own wrong, other right)"
_NO_TRUTH = ("both candidates are the judge's", "no candidate is the judge's")
_UNGRADED = "own or other answer ungraded"


def _graded(rows: pd.DataFrame, correctness: pd.DataFrame | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(own answer correct, other answer correct) per pairwise recognition row: 1, 0 or NaN (ungraded)."""
    if correctness is None or "correct" not in correctness:
        return None
    truth = correctness.assign(
        instance_id=correctness["instance_id"].astype(str), model=correctness["model"].astype(str)
    ).drop_duplicates(["instance_id", "model"])
    truth = truth.set_index(["instance_id", "model"])["correct"].map(lambda v: np.nan if v is None or pd.isna(v) else float(v))
    ids = rows["instance_id"].astype(str)
    own = truth.reindex(pd.MultiIndex.from_arrays([ids, rows["own"].astype(str)])).to_numpy(dtype=float)
    other = truth.reindex(pd.MultiIndex.from_arrays([ids, rows["other"].astype(str)])).to_numpy(dtype=float)
    return own, other


def recognition_records(
    frame: pd.DataFrame,
    kind: str,
    registry: Registry,
    boot: Bootstrap,
    *,
    target: str = "self",
    correctness: pd.DataFrame | None = None,
) -> list[Row]:
    """recognition-accuracy per (judge, condition): overall and (pointwise) on own / other answers.

    Pairwise questions ("which of the two did you write?") also give the accuracy per evaluatee
    (``generator`` = the other model, variant ``evaluatee``) and, with a ``correctness`` reference,
    on the harmful cases — the judge's own answer wrong, the other right (variant ``subset``: paper
    003 Figs. 7/11/14 and Table 2 per condition, Table 5 per evaluatee). A pair that could be
    harmful but lacks a grade is excluded and counted as ungraded; one known not to be harmful is
    outside the subset."""
    rows = recognition_rows(frame, kind, registry, target)
    mode = "pointwise" if kind == "recognition" else "pairwise"
    graded = _graded(rows, correctness) if mode == "pairwise" else None
    if graded is not None:
        own_ok, other_ok = graded
        harmful = pd.Series((own_ok == 0) & (other_ok == 1), index=rows.index)
        could_be = pd.Series(rows["own"].notna().to_numpy() & ~((own_ok == 1) | (other_ok == 0)), index=rows.index)
    records = []
    for (judge, condition), g in rows.groupby(["judge", "condition"], sort=True):
        no_truth = g["reason"].isin(_NO_TRUTH).to_numpy()
        subsets: list[tuple[dict[str, Any], np.ndarray, str | None]] = [({"answers": "all"}, np.ones(len(g), bool), None)]
        if mode == "pointwise":
            subsets += [
                ({"answers": "own"}, (g["truth"] == 1).to_numpy(), None),
                ({"answers": "other"}, (g["truth"] == 0).to_numpy(), None),
            ]
        else:
            others = g["other"].to_numpy(dtype=object)
            names = sorted({str(o) for o in others if o is not None})
            subsets += [({"answers": "all", "evaluatee": name}, others == name, name) for name in names]
            if graded is not None:
                member, known = could_be[g.index].to_numpy(), harmful[g.index].to_numpy()
                subsets.append(({"answers": "all", "subset": HARMFUL}, member, None))
                subsets += [
                    ({"answers": "all", "subset": HARMFUL, "evaluatee": name}, member & (others == name), name)
                    for name in names
                    if (known & (others == name)).any()
                ]
        for variant, member, evaluatee in subsets:
            ungraded = member & ~harmful[g.index].to_numpy() if "subset" in variant else np.zeros(len(g), bool)
            est = _accuracy_of(g, member & ~ungraded, no_truth, boot)
            if ungraded.any():
                est = replace(
                    est,
                    n_excluded=est.n_excluded + int(ungraded.sum()),
                    excluded={**est.excluded, _UNGRADED: int(ungraded.sum())},
                )
            records.append(
                new_record(
                    "recognition-accuracy",
                    judge,
                    condition,
                    est,
                    scope=target,
                    generator=evaluatee,
                    variant={"mode": mode, **variant},
                )
            )
    return records


def _accuracy_of(g: pd.DataFrame, member: np.ndarray, no_truth: np.ndarray, boot: Bootstrap) -> Estimate:
    """recognition-accuracy on the rows ``member`` of one (judge, condition), rows without a truth counted."""
    keep = member & ~no_truth
    right = g["right"].to_numpy()[keep]
    est = recognition_accuracy(right, np.ones_like(right), g["instance_id"].to_numpy()[keep], bootstrap=boot)
    if (member & no_truth).any():
        reasons = {str(k): int(v) for k, v in g["reason"][member & no_truth].value_counts().items()}
        est = replace(est, n_excluded=est.n_excluded + int((member & no_truth).sum()), excluded={**est.excluded, **reasons})
    return est


def association_records(
    recog: pd.DataFrame,
    kind: str,
    comparisons: pd.DataFrame,
    registry: Registry,
    boot: Bootstrap,
    *,
    target: str = "self",
    correctness: pd.DataFrame | None = None,
) -> list[Row]:
    """recognition-preference-association (003): r between recognising the own answer and preferring it.

    Items are own-vs-other comparisons of the pairwise table (aggregated over orders). Pairwise
    recognition: recognised = every presentation order of that (instance, pair) named the own
    answer (the strict reading of 003); pointwise: the judge claimed its own answer on that
    instance. Preferred = the aggregated verdict is the own answer. An unparsed answer or verdict
    excludes the item. Answers and verdicts are matched within a condition: a perturbation's
    recognition answers go with the verdicts on the same perturbed texts (003 Figs. 7/11/14).
    """
    rows = recognition_rows(recog, kind, registry, target)
    rows = rows[rows["own"].notna()]
    if rows.empty or comparisons.empty:
        return []
    keys = ["judge", "condition", "instance_id", "own"] + (["other"] if kind == "recognition-pairwise" else [])
    recognised = rows.groupby(keys, sort=False)["right"].agg(lambda v: np.nan if v.isna().any() else float(v.min()))
    comp = comparisons.copy()
    comp["instance_id"] = comp["instance_id"].astype(str)
    comp["condition"] = comp["condition"].astype(str)
    x_own = _is_target(registry, comp["judge"].to_numpy(), comp["model_x"].to_numpy(), target)
    y_own = _is_target(registry, comp["judge"].to_numpy(), comp["model_y"].to_numpy(), target)
    comp = comp[x_own ^ y_own].copy()
    flip = y_own[x_own ^ y_own]
    comp["own"] = np.where(flip, comp["model_y"], comp["model_x"])
    comp["other"] = np.where(flip, comp["model_x"], comp["model_y"])
    outcome = comp["outcome"].to_numpy(dtype=float)
    comp["preferred"] = np.where(np.isfinite(outcome), (np.where(flip, -outcome, outcome) == 1).astype(float), np.nan)
    comp["recognised"] = recognised.reindex(pd.MultiIndex.from_frame(comp[keys])).to_numpy(dtype=float)
    subsets = {"all own-vs-other comparisons": np.ones(len(comp), bool)}
    graded = _graded(comp, correctness)
    if graded is not None:
        own_ok, other_ok = graded
        subsets[HARMFUL] = (own_ok == 0) & (other_ok == 1)
    records = []
    for (judge, condition), g in comp.groupby(["judge", "condition"], sort=True):
        idx = g.index
        for subset, member in subsets.items():
            m = pd.Series(member, index=comp.index)[idx].to_numpy()
            est, extra = recognition_preference_association(
                g["recognised"].to_numpy()[m], g["preferred"].to_numpy()[m], g["instance_id"].to_numpy()[m], bootstrap=boot
            )
            records.append(
                new_record(
                    "recognition-preference-association",
                    judge,
                    condition,
                    est,
                    scope=target,
                    variant={"subset": subset, "recognition": kind},
                    fisher_ci=[extra.get("ci_low"), extra.get("ci_high")] if extra else None,
                    chi2=extra.get("chi2"),
                    chi2_p_value=extra.get("chi2_p_value"),
                    table=extra.get("table"),
                )
            )
    return records


def perplexity_records(
    frame: pd.DataFrame,
    registry: Registry,
    boot: Bootstrap,
    *,
    preference: pd.DataFrame | None = None,
    bins: int = 5,
    difference: str = "perplexity",
    perplexity: pd.DataFrame | None = None,
) -> list[Row]:
    """perplexity-win-rate per (judge, condition) × group × bin, judge and (with a preference-ref) humans;
    log-perplexity-gap and mean-log-perplexity (own, other) per (judge, condition).

    ``difference``: ``perplexity`` (PPL(A) − PPL(B), paper 001's words, default) or ``log``.
    ``perplexity``: a per-response table (kind ``perplexity``) filling missing ``perplexity_a/_b``
    with the judge's own scores and feeding the Fig. 5 records.
    """
    if difference not in DIFFERENCES:
        raise ValueError(f"difference must be one of {tuple(DIFFERENCES)}, not {difference!r}")
    if perplexity is not None and ("perplexity_a" not in frame or "perplexity_b" not in frame):
        frame = with_slot_perplexities(frame, perplexity)
    if "perplexity_a" not in frame or "perplexity_b" not in frame:
        return []
    ppl_a = frame["perplexity_a"].to_numpy(dtype=float)
    ppl_b = frame["perplexity_b"].to_numpy(dtype=float)
    judges = frame["judge"].astype(str).to_numpy()
    conditions = frame["condition"].astype(str).to_numpy()
    a = frame["model_a"].astype(str).to_numpy()
    b = frame["model_b"].astype(str).to_numpy()
    if perplexity is not None:
        records = _table_gap_records(perplexity, sorted(set(zip(judges, conditions))), registry, boot)
    else:
        records = _gap_records(
            frame,
            ppl_a,
            ppl_b,
            judges,
            conditions,
            _is_target(registry, judges, a, "self"),
            _is_target(registry, judges, b, "self"),
            boot,
        )
    pairs = _oriented_pairs(frame, preference)
    if pairs.empty:
        return records
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = (
            np.log(pairs["ppl_a"]) - np.log(pairs["ppl_b"]) if difference == "log" else pairs["ppl_a"] - pairs["ppl_b"]
        ).to_numpy(dtype=float)
    pj, pc = pairs["judge"].to_numpy(), pairs["condition"].to_numpy()
    pa, pb = pairs["model_a"].to_numpy(), pairs["model_b"].to_numpy()
    ids = pairs["instance_id"].to_numpy()
    judge_a, human_a = pairs["judge_a"].to_numpy(dtype=float), pairs["human_a"].to_numpy(dtype=float)
    own_a, own_b = _is_target(registry, pj, pa, "self"), _is_target(registry, pj, pb, "self")
    for judge, condition in sorted(set(zip(pj, pc))):
        sel = (pj == judge) & (pc == condition) & np.isfinite(diff)
        if sel.sum() < 2:
            continue
        edges = np.unique(np.quantile(diff[sel], np.linspace(0, 1, bins + 1)))  # the dataset's A − B, binned once
        if edges.size < 2:
            continue
        flip = own_b & ~own_a  # Fig. 4: the judge's own answer shown as response A
        groups = {"all": (sel, False), "self": (sel & (own_a ^ own_b), True), "other": (sel & ~own_a & ~own_b, False)}
        for group, (member, orient) in groups.items():
            if not member.any():
                continue
            f = flip[member] if orient else np.zeros(member.sum(), bool)
            j = np.where(f, 1.0 - judge_a[member], judge_a[member])
            h = np.where(f, 1.0 - human_a[member], human_a[member])
            d = np.where(f, -diff[member], diff[member])
            for result in perplexity_win_rate(j, h, d, ids[member], bins=edges, bootstrap=boot):
                for rater in ("judge", "human"):
                    est = result[rater]
                    if rater == "human" and preference is None:
                        continue
                    records.append(
                        new_record(
                            "perplexity-win-rate",
                            judge,
                            condition,
                            est,
                            scope=group,
                            variant={
                                "group": group,
                                "rater": rater,
                                "bin": result["bin"],
                                "low": result["low"],
                                "high": result["high"],
                                "difference": DIFFERENCES[difference],
                                "bins": "quantiles",
                                "unit": "comparison",
                            },
                        )
                    )
    return records


def _oriented_pairs(frame: pd.DataFrame, preference: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (judge, condition, instance, pair of responses) — the dataset's comparison, both
    presentation orders together (paper 001 §4.2 swaps the two and averages) — oriented once: response
    A is the preference reference's ``model_a`` for that pair (the dataset's A, as the human label
    names it), else the ``model_a`` of the pair's first row. Columns: ``ppl_a``/``ppl_b`` (the judge's
    perplexity of each response), ``judge_a`` (the judge's preference for A: win 1, tie ½, loss 0,
    averaged over the orders it has a verdict in; NaN without one) and ``human_a`` (NaN without a
    human label). Binning these rows once gives 001 §5's curves; binning presentation rows, each
    comparison would sit in two mirrored bins and the curves would be symmetric about ½ by construction."""
    rows = pd.DataFrame(
        {
            "judge": frame["judge"].astype(str).to_numpy(),
            "condition": frame["condition"].astype(str).to_numpy(),
            "instance_id": frame["instance_id"].astype(str).to_numpy(),
            "shown_a": frame["model_a"].astype(str).to_numpy(),
            "shown_b": frame["model_b"].astype(str).to_numpy(),
            "ppl_shown_a": frame["perplexity_a"].to_numpy(dtype=float),
            "ppl_shown_b": frame["perplexity_b"].to_numpy(dtype=float),
        }
    )
    verdict = frame["verdict"].to_numpy(dtype=object)
    rows["win_shown_a"] = np.select([verdict == "A", verdict == "B", verdict == "tie"], [1.0, 0.0, 0.5], np.nan)
    rows["first"] = np.minimum(rows["shown_a"], rows["shown_b"])
    rows["second"] = np.maximum(rows["shown_a"], rows["shown_b"])
    key = ["judge", "condition", "instance_id", "first", "second"]
    dataset_a = rows.groupby(key, sort=False)["shown_a"].transform("first")  # the pair's first row's A
    human = None
    if preference is not None:
        p = preference.assign(
            instance_id=preference["instance_id"].astype(str),
            model_a=preference["model_a"].astype(str),
            model_b=preference["model_b"].astype(str),
            winner=preference["winner"].astype(str),
        )
        code = np.where(p["winner"] == p["model_a"], 1.0, np.where(p["winner"] == p["model_b"], 0.0, 0.5))
        labelled = pd.DataFrame(
            {
                "instance_id": p["instance_id"],
                "first": np.minimum(p["model_a"], p["model_b"]),
                "second": np.maximum(p["model_a"], p["model_b"]),
                "ref_a": p["model_a"],
                "ref_code": code,
            }
        )
        labelled = labelled.drop_duplicates(["instance_id", "first", "second"])
        human = rows[["instance_id", "first", "second"]].merge(labelled, how="left", on=["instance_id", "first", "second"])
        dataset_a = pd.Series(np.where(human["ref_a"].notna(), human["ref_a"], dataset_a), index=rows.index)
    rows["model_a"] = dataset_a.to_numpy()
    same = rows["shown_a"].to_numpy() == rows["model_a"].to_numpy()
    rows["model_b"] = np.where(same, rows["shown_b"], rows["shown_a"])
    rows["ppl_a"] = np.where(same, rows["ppl_shown_a"], rows["ppl_shown_b"])
    rows["ppl_b"] = np.where(same, rows["ppl_shown_b"], rows["ppl_shown_a"])
    rows["judge_a"] = np.where(same, rows["win_shown_a"], 1.0 - rows["win_shown_a"])
    if human is not None:
        agrees = human["ref_a"].to_numpy(dtype=object) == rows["model_a"].to_numpy(dtype=object)
        rows["human_a"] = np.where(
            human["ref_a"].isna(), np.nan, np.where(agrees, human["ref_code"], 1.0 - human["ref_code"].to_numpy(dtype=float))
        )
    else:
        rows["human_a"] = np.nan
    out = rows.groupby(["judge", "condition", "instance_id", "model_a", "model_b"], sort=True).agg(
        ppl_a=("ppl_a", "mean"), ppl_b=("ppl_b", "mean"), judge_a=("judge_a", "mean"), human_a=("human_a", "first")
    )
    return out.reset_index()


def _gap_records(
    frame: pd.DataFrame,
    ppl_a: np.ndarray,
    ppl_b: np.ndarray,
    judges: np.ndarray,
    conditions: np.ndarray,
    own_a: np.ndarray,
    own_b: np.ndarray,
    boot: Bootstrap,
) -> list[Row]:
    """log-perplexity-gap per (judge, condition): one row per response (its perplexity under the
    judge averaged over the pairs and orders it appeared in), own vs other (001 Fig. 5)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        log_a, log_b = np.log(ppl_a), np.log(ppl_b)
    ids = frame["instance_id"].astype(str).to_numpy()
    rows = pd.DataFrame(
        {
            "judge": np.concatenate([judges, judges]),
            "condition": np.concatenate([conditions] * 2),
            "instance_id": np.concatenate([ids, ids]),
            "model": np.concatenate([frame["model_a"].astype(str), frame["model_b"].astype(str)]),
            "log_ppl": np.concatenate([log_a, log_b]),
            "own": np.concatenate([own_a, own_b]),
        }
    )
    per_response = (
        rows.groupby(["judge", "condition", "instance_id", "model"], sort=True)
        .agg(log_ppl=("log_ppl", "mean"), own=("own", "first"))
        .reset_index()
    )
    return _own_other_records(per_response, boot, "the pairwise rows")


def _own_other_records(per_response: pd.DataFrame, boot: Bootstrap, source: str) -> list[Row]:
    """Fig. 5's records per (judge, condition) from one row per response (``log_ppl``, ``own``)."""
    records = []
    for (judge, condition), g in per_response.groupby(["judge", "condition"], sort=True):
        values, own, ids = g["log_ppl"].to_numpy(dtype=float), g["own"].to_numpy(dtype=bool), g["instance_id"].to_numpy()
        est = log_perplexity_gap(values, own, ids, bootstrap=boot)
        records.append(
            new_record(
                "log-perplexity-gap",
                judge,
                condition,
                est,
                scope="self",
                variant={"unit": "mean log perplexity, own − other", "source": source},
            )
        )
        for name, member in (("own", own), ("other", ~own)):
            est = mean_log_perplexity(values[member], ids[member], bootstrap=boot)
            records.append(
                new_record(
                    "mean-log-perplexity", judge, condition, est, scope="self", variant={"responses": name, "source": source}
                )
            )
    return records


def _table_gap_records(table: pd.DataFrame, keys: list[tuple[str, str]], registry: Registry, boot: Bootstrap) -> list[Row]:
    """Fig. 5 from a ``perplexity`` table: every response each judge scored (failed rows excluded
    as ``no perplexity``), repeated for each condition the judge judged under (perplexity does not
    depend on the judging prompt)."""
    scorers = table["scorer"].astype(str).to_numpy()
    parts = []
    for judge, condition in keys:
        g = table[scorers == judge]
        if g.empty:
            continue
        models = g["model"].astype(str).to_numpy()
        log_ppl = (
            g["log_perplexity"].to_numpy(dtype=float) if "log_perplexity" in g else np.log(g["perplexity"].to_numpy(dtype=float))
        )
        parts.append(
            pd.DataFrame(
                {
                    "judge": judge,
                    "condition": condition,
                    "instance_id": g["instance_id"].astype(str).to_numpy(),
                    "model": models,
                    "log_ppl": np.where(g["perplexity"].notna().to_numpy(), log_ppl, np.nan),
                    "own": _is_target(registry, np.full(len(g), judge), models, "self"),
                }
            )
        )
    if not parts:
        return []
    return _own_other_records(pd.concat(parts, ignore_index=True), boot, "the perplexity table")


def with_slot_perplexities(frame: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (pairwise) with ``perplexity_a/_b`` = the judge's own score of each slot's response
    from a ``perplexity`` table (NaN where the judge scored none or its call failed)."""
    ok = table[table["perplexity"].notna()]
    index = pd.MultiIndex.from_arrays([ok["scorer"].astype(str), ok["instance_id"].astype(str), ok["model"].astype(str)])
    scores = pd.Series(ok["perplexity"].to_numpy(dtype=float), index=index)
    out = frame.copy()
    for side in ("a", "b"):
        keys = pd.MultiIndex.from_arrays(
            [frame["judge"].astype(str), frame["instance_id"].astype(str), frame[f"model_{side}"].astype(str)]
        )
        out[f"perplexity_{side}"] = scores.reindex(keys).to_numpy(dtype=float)
    return out
