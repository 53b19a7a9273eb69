"""Task accuracy of each generator against a correctness reference (paper 004 §3, Figs. 1–4).

`task_accuracy` is the pure metric (one generator's graded answers → `Estimate`);
`task_accuracy_records` builds the suite's records from a comparisons frame and a
``correctness-ref`` table: one per generator, and one per (judge, condition) holding the judge's
own task accuracy as a generator, which `nepotism.analyses.suite.correlate` pairs with the judge's
``judge-accuracy`` (004 Fig. 1: r = 0.795 / 0.708 / 0.899 on MATH500 / MMLU / MBPP+).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from nepotism.metrics._common import undefined, valid_rows
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums, settings

__all__ = ["task_accuracy", "task_accuracy_records"]

UNGRADED = "ungraded"


def _ratio(totals: np.ndarray) -> np.ndarray:
    return totals[..., 0] / totals[..., 1]


def task_accuracy(correct: np.ndarray, clusters: np.ndarray, *, bootstrap: Bootstrap | None = None,
                  **fields) -> Estimate:
    """Share of a generator's answers graded correct (paper 004 §3: "task accuracy", Tables 7–9).

    Formula: TA(G) = Σ_x 1{G's answer to x is correct} / |graded answers of G|. ``correct`` holds
    1 (correct), 0 (wrong) or NaN (no grade: excluded and counted as ``"ungraded"``, never as
    wrong); ``clusters`` are the prompts, so several answers to one prompt (replicates) resample
    together. Zero division: no graded answer → NaN with a note, never 0.
    """
    correct = np.asarray(correct, dtype=float)
    clusters = np.asarray(clusters)
    keep, n_missing, excluded = valid_rows(correct, reason=UNGRADED)
    options = settings(bootstrap, **fields)
    if not np.isin(correct[keep], (0.0, 1.0)).all():
        raise ValueError("correct must be 1, 0 or NaN (ungraded)")
    if not keep.any():
        return undefined("no graded answer", n_excluded=n_missing, excluded=excluded, bootstrap=options)
    _, sums = cluster_sums(clusters[keep], np.column_stack([correct[keep], np.ones(int(keep.sum()))]))
    return cluster_bootstrap(sums, _ratio, n=int(keep.sum()), n_excluded=n_missing, excluded=excluded,
                             bootstrap=options)


def _answers(comp: pd.DataFrame, correctness: pd.DataFrame) -> pd.DataFrame:
    """Every (instance, model) answer graded in ``correctness`` or judged in ``comp``, with its grade
    (NaN: judged but not graded, or graded by a score only)."""
    graded = pd.DataFrame({"instance_id": correctness["instance_id"].astype(str),
                           "model": correctness["model"].astype(str),
                           "correct": correctness["correct"].map(lambda v: np.nan if v is None or pd.isna(v)
                                                                 else float(v)) if "correct" in correctness
                           else np.nan})
    judged = pd.concat([comp[["instance_id", col]].rename(columns={col: "model"}) for col in ("model_x", "model_y")])
    judged = judged.astype(str).drop_duplicates()
    answers = judged.merge(graded, on=["instance_id", "model"], how="outer")
    return answers.drop_duplicates(["instance_id", "model"])


def task_accuracy_records(comp: pd.DataFrame, correctness: pd.DataFrame, bootstrap: Bootstrap) -> list[dict]:
    """``task-accuracy`` records: per generator (``generator`` = the model, ``judge`` None) and per
    (judge, condition) of ``comp`` whose judge answered too (``judge`` = it, ``scope`` self,
    ``variant.of`` = "judge's own answers"; the same value under every condition).

    Answers are the (instance, model) pairs of the correctness reference and of the judged
    comparisons; a judged answer the reference does not grade is excluded as ``"ungraded"``.
    """
    answers = _answers(comp, correctness)
    estimates = {}
    for model, g in answers.groupby("model", sort=True):
        estimates[model] = task_accuracy(g["correct"].to_numpy(dtype=float), g["instance_id"].to_numpy(), bootstrap=bootstrap)
    base = {"metric": "task-accuracy", "pair": None}
    records = [{**base, "judge": None, "condition": None, "generator": model, "scope": None,
                "variant": {"of": "generator"}, **est.as_dict()} for model, est in estimates.items()]
    for (judge, condition), _ in comp.groupby(["judge", "condition"], sort=True):
        if str(judge) in estimates:
            records.append({**base, "judge": judge, "condition": condition, "generator": None, "scope": "self",
                            "variant": {"of": "judge's own answers"}, **estimates[str(judge)].as_dict()})
    return records
