"""A reference made by a jury of judges: majority vote per item, optionally without related judges.

`pairwise_jury` turns a ``pairwise`` table into a ``preference-ref`` table, `rubric_jury` a
``rubric`` table into a ``rubric-ref`` table. Votes are taken in two steps
(both through `nepotism.votes`, plurality rule):

1. each judge gets one vote per item: the majority of its own parsed verdicts on that item (both
   presentation orders and all replicates of a pair count for the same unordered pair). A judge
   split evenly votes ``tie`` (pairwise) or abstains (rubric); unparsed verdicts are not votes.
2. the jury's verdict is the option with the most judge votes. Pairwise: a model, or ``tie`` when
   ``tie`` has the most votes (``decision="majority-tie"``) or two options share the top count
   (``decision="vote-tie"``). Rubric: met True/False, or None when the vote is even.

With ``exclude_family=True`` a judge does not vote on items involving a model of its own family
(itself included), as paper 002 §2.4 recommends; ``family_of`` maps a model name to its family
(default: `nepotism.models` registry). Names may carry an ``@tag`` suffix, ignored for families.
Items left with no vote are dropped from the reference and counted in ``JuryResult.counts``.
A rubric vote tie stays in the frame with ``met=None``; `JuryResult.decided` drops such rows
(a ``rubric-ref`` file must say true or false).

Left out: weighting judges by their accuracy; pointwise scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from nepotism.votes import decide_one

__all__ = ["JuryResult", "pairwise_jury", "rubric_jury"]


@dataclass(frozen=True)
class JuryResult:
    """The reference rows and the counts of how each item was decided."""

    frame: pd.DataFrame
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def decided(self) -> pd.DataFrame:
        """The rows with a definite verdict (drops rubric vote ties, ``met=None``)."""
        if "met" not in self.frame:
            return self.frame
        return self.frame[self.frame["met"].notna()].reset_index(drop=True)


def _base(name: str) -> str:
    return str(name).split("@", 1)[0]


def _default_family_of() -> Callable[[str], str | None]:
    try:
        from nepotism.models import default_registry
    except ImportError as err:
        raise RuntimeError(
            "exclude_family needs a family_of function or the nepotism.models registry"
        ) from err
    registry = default_registry() if callable(default_registry) else default_registry

    def family_of(name: str) -> str | None:
        try:
            return registry.family_of(name)
        except (KeyError, LookupError):
            return None

    return family_of


def _related(judge: str, models: tuple[str, ...], family_of: Callable[[str], str | None] | None) -> bool:
    judge_base = _base(judge)
    if any(judge_base == _base(m) for m in models):
        return True
    if family_of is None:
        return False
    judge_family = family_of(judge_base)
    return judge_family is not None and any(family_of(_base(m)) == judge_family for m in models)


def _family_function(exclude_family: bool, family_of):
    if not exclude_family:
        return False, None
    return True, family_of if family_of is not None else _default_family_of()


def _ballots(rows, *, item_of, models_of, vote_of, exclude: bool, family_of, counts: Counter) -> dict:
    """Each item's votes per judge; related judges' verdicts (when excluding) and unparsed ones counted."""
    per_judge: dict[tuple, dict[str, Counter]] = {}
    for row in rows:
        item = item_of(row)
        per_judge.setdefault(item, {})
        if exclude and _related(row.judge, models_of(row), family_of):
            counts["excluded_verdicts"] += 1
            continue
        vote = vote_of(row)
        if vote is None:
            counts["unparsed_verdicts"] += 1
            continue
        per_judge[item].setdefault(str(row.judge), Counter())[vote] += 1
    return per_judge


def _pair_vote(row) -> str | None:
    return {"A": str(row.model_a), "B": str(row.model_b), "tie": "tie"}.get(row.verdict) if isinstance(row.verdict, str) else None


def _rubric_vote(row) -> bool | None:
    if row.met is None or (isinstance(row.met, float) and row.met != row.met):
        return None
    return bool(row.met)


def pairwise_jury(
    judgments: pd.DataFrame,
    *,
    exclude_family: bool = False,
    family_of: Callable[[str], str | None] | None = None,
) -> JuryResult:
    """Majority-vote preference reference from a pairwise table frame (see module docstring)."""
    exclude, family_of = _family_function(exclude_family, family_of)
    counts = Counter()
    per_judge = _ballots(
        judgments[["instance_id", "judge", "model_a", "model_b", "verdict"]].itertuples(index=False),
        item_of=lambda row: (str(row.instance_id), *sorted((str(row.model_a), str(row.model_b)))),
        models_of=lambda row: tuple(sorted((str(row.model_a), str(row.model_b)))),
        vote_of=_pair_vote, exclude=exclude, family_of=family_of, counts=counts)
    rows = []
    for (instance_id, first, second), judges in per_judge.items():
        votes = Counter()
        for own in judges.values():
            votes[decide_one(own, split="tie", tie="tie")] += 1
        if not votes:
            counts["no_votes"] += 1
            continue
        winner = decide_one(votes)
        clear = winner is not None
        decision = "majority" if clear and winner != "tie" else ("majority-tie" if clear else "vote-tie")
        counts[decision] += 1
        rows.append(
            {
                "instance_id": instance_id,
                "model_a": first,
                "model_b": second,
                "winner": winner if clear else "tie",
                "votes": sum(votes.values()),
                "decision": decision,
            }
        )
    columns = ["instance_id", "model_a", "model_b", "winner", "votes", "decision"]
    return JuryResult(pd.DataFrame(rows, columns=columns), dict(counts))


def rubric_jury(
    judgments: pd.DataFrame,
    *,
    exclude_family: bool = False,
    family_of: Callable[[str], str | None] | None = None,
) -> JuryResult:
    """Majority-vote rubric reference (met True/False/None) from a rubric table frame."""
    exclude, family_of = _family_function(exclude_family, family_of)
    counts = Counter()
    per_judge = _ballots(
        judgments[["instance_id", "judge", "model", "rubric_id", "met"]].itertuples(index=False),
        item_of=lambda row: (str(row.instance_id), str(row.model), str(row.rubric_id)),
        models_of=lambda row: (str(row.model),), vote_of=_rubric_vote, exclude=exclude, family_of=family_of,
        counts=counts)
    rows = []
    for (instance_id, model, rubric_id), judges in per_judge.items():
        votes = Counter()
        for own in judges.values():
            choice = decide_one(own)
            if choice is not None:
                votes[choice] += 1
            else:
                counts["judge_abstained"] += 1
        if not votes:
            counts["no_votes"] += 1
            continue
        met = decide_one(votes)
        clear = met is not None
        counts["majority" if clear else "vote-tie"] += 1
        rows.append(
            {
                "instance_id": instance_id,
                "model": model,
                "rubric_id": rubric_id,
                "met": met if clear else None,
                "votes": sum(votes.values()),
            }
        )
    return JuryResult(pd.DataFrame(rows, columns=["instance_id", "model", "rubric_id", "met", "votes"]), dict(counts))
