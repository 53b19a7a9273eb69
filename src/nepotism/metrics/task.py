"""Task accuracy of each generator against a correctness reference (paper 004 §3, Figs. 1–4).

`task_accuracy` is the pure metric (one generator's graded answers → `Estimate`);
`task_accuracy_records` builds the suite's records from a comparisons frame and a
``correctness-ref`` table: one per generator, and one per (judge, condition) holding the judge's
own task accuracy as a generator, which `nepotism.analyses.suite.correlate` pairs with the judge's
``judge-accuracy`` (004 Fig. 1: r = 0.795 / 0.708 / 0.899 on MATH500 / MMLU / MBPP+).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from nepotism.metrics._common import Row, checked, labels, undefined
from nepotism.metrics._estimate import Estimate
from nepotism.metrics.definitions import REASONING_LENGTH, REASONING_LENGTH_PER_EVALUATEE, TASK_ACCURACY
from nepotism.metrics.bootstrap import Bootstrap, settings

__all__ = ["reasoning_length", "reasoning_length_records", "task_accuracy", "task_accuracy_records"]

UNGRADED = "ungraded"


def task_accuracy(correct: ArrayLike, clusters: ArrayLike, *, bootstrap: Bootstrap | None = None, **fields: Any) -> Estimate:
    """Share of a generator's answers graded correct (paper 004 §3: "task accuracy", Tables 7–9).

    Formula: TA(G) = Σ_x 1{G's answer to x is correct} / |graded answers of G|. ``correct`` holds
    1 (correct), 0 (wrong) or NaN (no grade: excluded and counted as ``"ungraded"``, never as
    wrong); ``clusters`` are the prompts, so several answers to one prompt (replicates) resample
    together. Zero division: no graded answer → NaN with a note, never 0.

    >>> est = task_accuracy([1, 0, 1, float("nan")], ["p1", "p2", "p3", "p4"], n_resamples=0)
    >>> round(est.value, 3), dict(est.excluded)
    (0.667, {'ungraded': 1})
    """
    grades = checked(correct, "correct", low=0.0, high=1.0)
    groups = labels(clusters, "clusters", n=grades.size)
    options = settings(bootstrap, **fields)
    if not np.isin(grades[np.isfinite(grades)], (0.0, 1.0)).all():
        raise ValueError("correct must be 1, 0 or NaN (ungraded)")
    part = TASK_ACCURACY.sums(grades, clusters=groups)
    return TASK_ACCURACY.resample(part, options, empty="no graded answer")


def _answers(comp: pd.DataFrame, correctness: pd.DataFrame) -> pd.DataFrame:
    """Every (instance, model) answer graded in ``correctness`` or judged in ``comp``, with its grade
    (NaN: judged but not graded, or graded by a score only)."""
    graded = pd.DataFrame(
        {
            "instance_id": correctness["instance_id"].astype(str),
            "model": correctness["model"].astype(str),
            "correct": correctness["correct"].map(lambda v: np.nan if v is None or pd.isna(v) else float(v))
            if "correct" in correctness
            else np.nan,
        }
    )
    judged = pd.concat([comp[["instance_id", col]].rename(columns={col: "model"}) for col in ("model_x", "model_y")])
    judged = judged.astype(str).drop_duplicates()
    answers = judged.merge(graded, on=["instance_id", "model"], how="outer")
    return answers.drop_duplicates(["instance_id", "model"])


def task_accuracy_records(comp: pd.DataFrame, correctness: pd.DataFrame, bootstrap: Bootstrap) -> list[Row]:
    """``task-accuracy`` records: per generator (``generator`` = the model, ``judge`` None) and per
    (judge, condition) of ``comp`` whose judge answered too (``judge`` = it, ``scope`` self,
    ``variant.of`` = "judge's own answers"; the same value under every condition).

    Answers are the (instance, model) pairs of the correctness reference and of the judged
    comparisons; a judged answer the reference does not grade is excluded as ``"ungraded"``.
    """
    answers = _answers(comp, correctness)
    estimates: dict[str, Estimate] = {}
    for model, g in answers.groupby("model", sort=True):
        estimates[str(model)] = task_accuracy(
            g["correct"].to_numpy(dtype=float), g["instance_id"].to_numpy(), bootstrap=bootstrap
        )
    base = {"metric": "task-accuracy", "pair": None}
    records = [
        {
            **base,
            "judge": None,
            "condition": None,
            "generator": model,
            "scope": None,
            "variant": {"of": "generator"},
            **est.as_dict(),
        }
        for model, est in estimates.items()
    ]
    for (judge, condition), _ in comp.groupby(["judge", "condition"], sort=True):
        if str(judge) in estimates:
            records.append(
                {
                    **base,
                    "judge": judge,
                    "condition": condition,
                    "generator": None,
                    "scope": "self",
                    "variant": {"of": "judge's own answers"},
                    **estimates[str(judge)].as_dict(),
                }
            )
    return records


def reasoning_length(
    tokens: ArrayLike,
    clusters: ArrayLike,
    *,
    evaluatee: ArrayLike | None = None,
    averaging: str = "pooled",
    bootstrap: Bootstrap | None = None,
    **fields: Any,
) -> Estimate:
    """Mean number of tokens a judge wrote per judgment (paper 004 §4.2, Fig. 5, Tables 16–18).

    Formula: RL = Σ tokens / |judgments with a token count|, clustered by prompt (``averaging=
    "pooled"``); with ``evaluatee`` (the other model of each self-evaluation) and ``averaging=
    "per-evaluatee"``, the mean over evaluatees of each one's RL — the tables' "Average" column.
    ``tokens`` holds each judgment's written length (``reasoning_tokens`` of a pairwise table: GPT-2
    tokens of the reply in nepotism's exports, `nepotism.gpt2_tokens`, the paper's unit) or NaN
    when there is none (a label read writes nothing: excluded as ``"not counted"``). The suite
    computes it on every judgment (``subset=all``), on the judge's comparisons of its own answer
    with another's (``self-evaluation``) and on the harmful ones, its own answer wrong and the
    other's right (``harmful``, 004's HSPP cases), the last two also per evaluatee.

    >>> reasoning_length([100, 300, np.nan], [0, 1, 2], n_resamples=0).value
    200.0
    >>> reasoning_length([100, 300, 200], [0, 1, 2], evaluatee=["x", "x", "y"], averaging="per-evaluatee",
    ...                  n_resamples=0).value
    200.0
    """
    if averaging not in ("pooled", "per-evaluatee"):
        raise ValueError("averaging must be 'pooled' or 'per-evaluatee'")
    values = checked(tokens, "tokens", low=0.0, high=np.inf)
    groups = labels(clusters, "clusters", n=values.size)
    part = REASONING_LENGTH.sums(values, clusters=groups)
    options = settings(bootstrap, **fields)
    if part.n == 0:
        return undefined("no judgment with a token count", n_excluded=part.n_excluded, excluded=part.excluded, bootstrap=options)
    if averaging == "pooled":
        return REASONING_LENGTH.resample(part, options)
    if evaluatee is None:
        raise ValueError("averaging='per-evaluatee' needs the evaluatee of each judgment")
    names = labels(evaluatee, "evaluatee", n=values.size)
    return REASONING_LENGTH_PER_EVALUATEE.estimate(values, names, clusters=groups, bootstrap=options)


def _is_own(judges: pd.Series, models: pd.Series, scopes: Mapping[tuple[str, str], str]) -> np.ndarray:
    """Per row: the model is the judge itself (``scopes[(judge, model)] == "self"``), looked up once per pair."""
    pairs = pd.MultiIndex.from_arrays([judges.astype(str), models.astype(str)])
    codes, unique = pd.factorize(pairs)
    own = np.array([scopes.get(pair) == "self" for pair in unique], dtype=bool)
    return own[codes] if len(codes) else np.zeros(0, dtype=bool)


def reasoning_length_records(
    frame: pd.DataFrame, correctness: pd.DataFrame | None, scopes: Mapping[tuple[str, str], str], bootstrap: Bootstrap
) -> list[Row]:
    """reasoning-length per (judge, condition) over every judgment with a count (``subset=all``), over
    the judge's self-evaluations (its own answer against another model's, ``self-evaluation``) and,
    with a correctness reference, over the harmful cases of paper 004's Fig. 5 (the judge's own
    answer wrong, the other's right; ``subset=harmful``); the last two pooled, averaged per
    evaluatee (the tables' "Average" column) and per evaluatee (``averaging=one evaluatee``,
    Tables 16–18's cells). ``scopes`` maps (judge, model) to `Registry.scope`."""
    if "reasoning_tokens" not in frame:
        return []
    rows = frame.assign(instance_id=frame["instance_id"].astype(str))
    tokens = rows["reasoning_tokens"].to_numpy(dtype=float)
    own_a, own_b = (_is_own(rows["judge"], rows[column], scopes) for column in ("model_a", "model_b"))
    evaluatee = np.where(own_a, rows["model_b"].astype(str), rows["model_a"].astype(str))
    subsets = {"all": np.ones(len(rows), dtype=bool), "self-evaluation": own_a ^ own_b}
    if correctness is not None and "correct" in correctness:
        ok = (
            correctness.assign(instance_id=correctness["instance_id"].astype(str))
            .set_index(["instance_id", "model"])["correct"]
            .map(lambda v: np.nan if v is None else float(v))
        )
        ok = ok[~ok.index.duplicated()]

        def graded(models: pd.Series) -> np.ndarray:
            return np.asarray(ok.reindex(pd.MultiIndex.from_arrays([rows["instance_id"], models])).to_numpy(dtype=float))

        a_ok, b_ok = graded(rows["model_a"].astype(str)), graded(rows["model_b"].astype(str))
        subsets["harmful"] = (own_a & (a_ok == 0) & (b_ok == 1)) | (own_b & (b_ok == 0) & (a_ok == 1))
    records = []
    groups = rows.reset_index(drop=True).groupby(["judge", "condition"], sort=True).indices
    for (judge, condition), position in groups.items():
        for subset, member in subsets.items():
            take = position[member[position]]
            ids = rows["instance_id"].to_numpy()[take]
            base = {
                "metric": "reasoning-length",
                "judge": judge,
                "condition": condition,
                "pair": None,
                "scope": None if subset == "all" else "self",
            }
            unit = {"subset": subset, "unit": "tokens per judgment"}
            est = reasoning_length(tokens[take], ids, bootstrap=bootstrap)
            records.append({**base, "generator": None, "variant": unit, **est.as_dict()})
            if subset == "all" or not take.size:
                continue
            est = reasoning_length(tokens[take], ids, evaluatee=evaluatee[take], averaging="per-evaluatee", bootstrap=bootstrap)
            records.append({**base, "generator": None, "variant": {**unit, "averaging": "per-evaluatee"}, **est.as_dict()})
            for other in sorted(set(evaluatee[take])):
                mine = take[evaluatee[take] == other]
                est = reasoning_length(tokens[mine], rows["instance_id"].to_numpy()[mine], bootstrap=bootstrap)
                records.append(
                    {
                        **base,
                        "generator": other,
                        "variant": {**unit, "averaging": "one evaluatee", "evaluatee": other},
                        **est.as_dict(),
                    }
                )
    return records
