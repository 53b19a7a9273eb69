"""The one vote: which option a set of (weighted) votes decides, and what a split vote means.

Every vote in nepotism goes through `decide` (or `decide_one` for a single item): committees of
judges (`analyses.suite.committee`), reference juries (`grading.jury`), mitigation juries
(`mitigations.juries`) and human labels (`annotate.export`).

Rules (``rule=``):

- ``"plurality"``: the option with the most votes wins when no other option has as many.
- ``"majority"``: an option wins only with more than half of all votes cast (a strict majority).

Split-vote policy (``split=``) — what an item no option wins becomes:

- ``"undecided"`` (default): no verdict (``-1`` / ``None``). A split vote is never turned into a
  tie or a random pick; callers record it as undecided and count it.
- ``"tie"``: the ``tie`` option, for votes where an even split *is* the judgment (a judge whose own
  verdicts on a pair are split evenly votes ``tie`` in a jury's first step; a jury whose top
  options are level reports a ``tie`` reference, labelled ``vote-tie``).

An item without any vote (all weights zero) is always undecided. Votes are non-negative weights
(1 per voter for a plain vote). Left out: ranked-choice and approval voting; breaking ties by
seniority or accuracy (weighted votes do that through their weights).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

__all__ = ["RULES", "SPLITS", "decide", "decide_one"]

RULES = ("plurality", "majority")
SPLITS = ("undecided", "tie")


def decide(counts: Any, *, rule: str = "plurality", split: str = "undecided", tie: int | None = None) -> np.ndarray:
    """The winning option's column for each row of ``counts`` (items × options vote weights); -1 = undecided.

    >>> decide([[3, 1, 0], [2, 2, 0], [0, 0, 0], [2, 1, 1]], rule="majority").tolist()
    [0, -1, -1, -1]
    >>> decide([[2, 1, 1], [2, 2, 0]], rule="plurality", split="tie", tie=2).tolist()
    [0, 2]
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, not {rule!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    votes = np.asarray(counts, dtype=float)
    if votes.ndim != 2:
        raise ValueError(f"counts must be a 2-d array (items × options), not shape {votes.shape}")
    if votes.size and (not np.all(np.isfinite(votes)) or np.any(votes < 0)):
        raise ValueError("vote counts must be finite and non-negative")
    if split == "tie" and (tie is None or not 0 <= tie < votes.shape[1]):
        raise ValueError("split='tie' needs the column of the tie option (tie=)")
    out = np.full(votes.shape[0], -1, dtype=int)
    if votes.shape[0] == 0 or votes.shape[1] == 0:
        return out
    top = votes.max(axis=1)
    total = votes.sum(axis=1)
    best = votes.argmax(axis=1)
    if rule == "majority":
        won = top * 2 > total
    else:
        won = (top > 0) & ((votes == top[:, None]).sum(axis=1) == 1)
    out[won] = best[won]
    if split == "tie":
        out[~won & (total > 0)] = tie
    return out


def decide_one(
    votes: Mapping[Hashable, float], *, rule: str = "plurality", split: str = "undecided", tie: Hashable | None = None
) -> Hashable | None:
    """`decide` for one item whose votes are a mapping option → weight (a `Counter`); None = undecided.

    >>> decide_one({"A": 2, "B": 1}), decide_one({"A": 1, "B": 1}), decide_one({"A": 1, "B": 1}, split="tie", tie="tie")
    ('A', None, 'tie')
    """
    options = list(votes)
    if split == "tie" and tie not in options:
        options.append(tie)
    column = decide(
        [[float(votes.get(o, 0.0)) for o in options]], rule=rule, split=split, tie=options.index(tie) if split == "tie" else None
    )[0]
    return None if column < 0 else options[column]
