"""Jury verdicts that replace one judge's verdict (papers 001 §6, 002 §3, 003's recommendation).

Input: one row per (judge, instance, side, opponent) comparison, with the judge's ``outcome`` for
``side`` (+1 / 0 / -1, NaN when the judge gave no usable verdict). `jury_outcomes` returns, for
each (instance, side, opponent), the jury's outcome:

* ``majority``: the option (side wins, tie, opponent wins) with a strict majority of the parsed
  member votes; no majority -> NaN (counted, never broken at random);
* ``weighted``: votes weighted by a per-judge weight (e.g. accuracy on a held-out split); the
  option with the largest total wins, an exact tie of totals -> NaN;
* ``perplexity``: each member's weight on an item is ``exp(-max(0, z))``, where ``z`` is how
  familiar the item's candidates are to that member (its mean per-token log-probability of the
  more familiar candidate, standardised over the member's items): a judge is down-weighted on the
  items it finds most familiar (paper 001: judges favour low-perplexity text).

`exclude` drops members related to either candidate (by the registry: any relation other than
unrelated / unknown, the judge itself included), so a judge never votes on its own or a
relative's answer. Left out: learning the weights (pass them in).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from nepotism.votes import decide

__all__ = ["VOTES", "exclude_related", "familiarity_weights", "jury_outcomes"]

VOTES = ("majority", "weighted", "perplexity")
_KEY = ["instance_id", "side", "opponent"]
_UNRELATED = {"unrelated", "unknown"}  # `Registry.scope` values of a model outside every scope


def exclude_related(rows: pd.DataFrame, relation: Callable[[str, str], str]) -> tuple[pd.DataFrame, int]:
    """Rows whose judge is unrelated to both candidates, and how many were dropped; ``relation``
    gives `nepotism.models.Registry.scope` of (judge, model)."""
    if rows.empty:
        return rows, 0
    related = [
        relation(j, s) not in _UNRELATED or relation(j, o) not in _UNRELATED
        for j, s, o in zip(rows["judge"], rows["side"], rows["opponent"])
    ]
    mask = np.asarray(related, dtype=bool)
    return rows[~mask], int(mask.sum())


def familiarity_weights(rows: pd.DataFrame, familiarity: Mapping[tuple[str, str, str], float]) -> np.ndarray:
    """Per-row weight ``exp(-max(0, z))`` from ``familiarity[(judge, instance_id, generator)]``
    (mean per-token log-probability of that candidate under that judge; missing -> weight 1)."""
    both = np.array(
        [
            [familiarity.get((j, i, s), np.nan), familiarity.get((j, i, o), np.nan)]
            for j, i, s, o in zip(rows["judge"], rows["instance_id"], rows["side"], rows["opponent"])
        ],
        dtype=float,
    ).reshape(-1, 2)
    missing = np.isnan(both).all(axis=1)
    fam = np.where(missing, np.nan, np.where(np.isnan(both), -np.inf, both).max(axis=1))
    z = np.zeros(len(rows))
    judges = rows["judge"].to_numpy()
    for judge in np.unique(judges):
        mask = (judges == judge) & ~np.isnan(fam)
        if mask.sum() >= 2 and np.std(fam[mask]) > 0:
            z[mask] = (fam[mask] - fam[mask].mean()) / fam[mask].std()
    return np.exp(-np.maximum(0.0, z))


def jury_outcomes(
    rows: pd.DataFrame,
    *,
    vote: str = "majority",
    weights: Mapping[str, float] | None = None,
    row_weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per (instance_id, side, opponent): ``outcome`` of the jury, ``n_votes``, ``members``."""
    if vote not in VOTES:
        raise ValueError(f"vote must be one of {VOTES}")
    if rows.empty:
        return pd.DataFrame(columns=_KEY + ["outcome", "n_votes", "members"])
    frame = rows[_KEY + ["judge", "outcome"]].copy()
    if vote == "majority":
        w = np.ones(len(frame))
    elif vote == "weighted":
        if weights is None:
            raise ValueError("a weighted vote needs a weight per judge")
        w = frame["judge"].map(lambda j: float(weights.get(j, 0.0))).to_numpy(dtype=float)
    else:
        if row_weights is None or len(row_weights) != len(frame):
            raise ValueError("a perplexity-weighted vote needs one weight per row (familiarity_weights)")
        w = np.asarray(row_weights, dtype=float)
    parsed = ~frame["outcome"].isna().to_numpy()
    for option, name in ((1.0, "win"), (0.0, "tie"), (-1.0, "loss")):
        frame[name] = np.where(parsed & (frame["outcome"].to_numpy() == option), w, 0.0)
    frame["votes"] = parsed.astype(float)
    frame["weight"] = np.where(parsed, w, 0.0)
    agg = frame.groupby(_KEY, sort=True).agg(
        win=("win", "sum"),
        tie=("tie", "sum"),
        loss=("loss", "sum"),
        n_votes=("votes", "sum"),
        total=("weight", "sum"),
        members=("judge", lambda s: ",".join(sorted(set(s)))),
    )
    # a plain vote needs a strict majority; weighted votes a unique plurality (`nepotism.votes`)
    column = decide(agg[["win", "tie", "loss"]].to_numpy(), rule="majority" if vote == "majority" else "plurality")
    agg["outcome"] = np.where(column >= 0, np.array([1.0, 0.0, -1.0])[np.maximum(column, 0)], np.nan)
    return agg.reset_index()[_KEY + ["outcome", "n_votes", "members"]]
