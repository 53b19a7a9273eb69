"""The human quality check of a perturbation (paper 003 §5, "Human Study as Quality Control").

Paper 003 shows annotators each answer before and after synonym replacement, blind and in random
order, and uses a binomial test to check that humans do not prefer either version. `quality_test`
reads annotation labels in the preference-ref format ``nepotism annotate`` exports (per-annotator
files: one row per annotator and item, ``instance_id, model_a, model_b, winner``): an item compares
a response ``M`` with its perturbed version ``M@<tag>`` (either order). Each label is one trial:
a success when the perturbed version wins. Ties and labels of items that are not such a pair are
left out and counted. The exact two-sided binomial test against ½ (`nepotism.metrics.stats.binomial_test`)
gives the p-value and the Clopper–Pearson interval of the share preferring the perturbed text.
Labels are treated as independent trials, as in the paper (several annotators label one item).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from nepotism.metrics.stats import binomial_test

__all__ = ["quality_test"]


def _base(name: str) -> tuple[str, str | None]:
    model, _, tag = str(name).partition("@")
    return model, (tag or None)


def quality_test(labels: pd.DataFrame, tag: str) -> dict[str, Any]:
    """``{"metric": "perturbation-quality-preference", value (share preferring the perturbed text),
    ci_low, ci_high, p_value, n (trials), successes, n_excluded, excluded, variant}`` for ``tag``."""
    missing = {"model_a", "model_b", "winner"} - set(labels.columns)
    if missing:
        raise ValueError(f"labels need the columns {sorted(missing)}")
    excluded: dict[str, int] = {}
    wins = trials = 0
    for a, b, winner in zip(labels["model_a"], labels["model_b"], labels["winner"]):
        (ma, ta), (mb, tb) = _base(a), _base(b)
        if ma != mb or {ta, tb} != {None, tag}:
            excluded["not an original-vs-perturbed pair"] = excluded.get("not an original-vs-perturbed pair", 0) + 1
            continue
        perturbed = a if ta == tag else b
        if winner == "tie":
            excluded["tie"] = excluded.get("tie", 0) + 1
            continue
        if winner not in (a, b):
            excluded["no label"] = excluded.get("no label", 0) + 1
            continue
        trials += 1
        wins += winner == perturbed
    record: dict[str, Any] = {
        "metric": "perturbation-quality-preference",
        "judge": None,
        "generator": None,
        "condition": tag,
        "pair": None,
        "scope": None,
        "variant": {"raters": "humans", "test": "exact binomial, two-sided, p0 = ½"},
        "n": trials,
        "successes": wins,
        "n_excluded": sum(excluded.values()),
        "excluded": excluded,
    }
    if trials == 0:
        return record | {
            "value": None,
            "ci_low": None,
            "ci_high": None,
            "p_value": None,
            "note": "no label of an original-vs-perturbed pair",
        }
    test = binomial_test(wins, trials)
    return record | {
        "value": wins / trials,
        "ci_low": test["ci_low"],
        "ci_high": test["ci_high"],
        "confidence": 0.95,
        "p_value": test["p_value"],
        "note": None,
    }
