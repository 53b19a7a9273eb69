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

By default every judge votes on every item: paper 002 §2.4's reference is a plain majority of its
five judges, relatives included (footnote 5: every family is represented in it). With
``exclude_related=True`` (the project's variant) a judge does not vote on items involving a model it
is related to — itself, its family, its students, its teachers: the one scope rule,
`nepotism.models.Registry.scope` (not unrelated, not unknown) — so that a judge is never measured
against its relatives' votes. ``related`` is
that predicate (default: `registry_related` of the bundled registry; `registry_related(registry)`
for another one). Names may carry an ``@tag`` suffix (the registry ignores it).
Items left with no vote are dropped from the reference and counted in ``JuryResult.counts``.
A rubric vote tie stays in the frame with ``met=None``; `JuryResult.decided` drops such rows
(a ``rubric-ref`` file must say true or false). A rubric row's ``jurors`` names the judges whose
vote counted on it (comma-separated), so that a judge's meta-evaluation can say it voted.

Left out: weighting judges by their accuracy; pointwise scores.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from nepotism.votes import decide_one

if TYPE_CHECKING:
    from nepotism.models import Registry

#: a table row as pandas' ``itertuples`` gives it (a namedtuple of the selected columns)
_Row = Any
#: (judge, model) -> whether the judge is related to the model
_Related = Callable[[str, str], bool]

__all__ = ["JuryResult", "pairwise_jury", "registry_related", "rubric_jury"]


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


def registry_related(registry: Registry | None = None) -> _Related:
    """(judge, model) → whether the judge is related to the model (`Registry.is_related`: anything
    but unrelated or unknown); ``registry`` defaults to the bundled one."""
    if registry is None:
        from nepotism.models import default_registry

        registry = default_registry()
    return registry.is_related


def _exclusion(exclude_related: bool, related: _Related | None) -> _Related | None:
    """The relation whose related judges do not vote, or None when every judge votes."""
    if not exclude_related:
        return None
    return related if related is not None else registry_related()


def _ballots(
    rows: Iterable[_Row],
    *,
    item_of: Callable[[_Row], tuple[str, ...]],
    models_of: Callable[[_Row], tuple[str, ...]],
    vote_of: Callable[[_Row], Hashable | None],
    related: _Related | None,
    counts: Counter[str],
) -> dict[tuple[str, ...], dict[str, Counter[Hashable]]]:
    """Each item's votes per judge; related judges' verdicts (when excluding) and unparsed ones counted."""
    per_judge: dict[tuple[str, ...], dict[str, Counter[Hashable]]] = {}
    for row in rows:
        item = item_of(row)
        per_judge.setdefault(item, {})
        if related is not None and any(related(str(row.judge), m) for m in models_of(row)):
            counts["excluded_verdicts"] += 1
            continue
        vote = vote_of(row)
        if vote is None:
            counts["unparsed_verdicts"] += 1
            continue
        per_judge[item].setdefault(str(row.judge), Counter())[vote] += 1
    return per_judge


def _pair_vote(row: _Row) -> str | None:
    return {"A": str(row.model_a), "B": str(row.model_b), "tie": "tie"}.get(row.verdict) if isinstance(row.verdict, str) else None


def _rubric_vote(row: _Row) -> bool | None:
    if row.met is None or (isinstance(row.met, float) and row.met != row.met):
        return None
    return bool(row.met)


def pairwise_jury(
    judgments: pd.DataFrame,
    *,
    exclude_related: bool = False,
    related: Callable[[str, str], bool] | None = None,
) -> JuryResult:
    """Majority-vote preference reference from a pairwise table frame (see module docstring)."""
    excluding = _exclusion(exclude_related, related)
    counts: Counter[str] = Counter()
    per_judge = _ballots(
        judgments[["instance_id", "judge", "model_a", "model_b", "verdict"]].itertuples(index=False),
        item_of=lambda row: (str(row.instance_id), *sorted((str(row.model_a), str(row.model_b)))),
        models_of=lambda row: tuple(sorted((str(row.model_a), str(row.model_b)))),
        vote_of=_pair_vote,
        related=excluding,
        counts=counts,
    )
    rows = []
    for (instance_id, first, second), judges in per_judge.items():
        votes: Counter[Hashable] = Counter()
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
    exclude_related: bool = False,
    related: Callable[[str, str], bool] | None = None,
) -> JuryResult:
    """Majority-vote rubric reference (met True/False/None) from a rubric table frame."""
    excluding = _exclusion(exclude_related, related)
    counts: Counter[str] = Counter()
    per_judge = _ballots(
        judgments[["instance_id", "judge", "model", "rubric_id", "met"]].itertuples(index=False),
        item_of=lambda row: (str(row.instance_id), str(row.model), str(row.rubric_id)),
        models_of=lambda row: (str(row.model),),
        vote_of=_rubric_vote,
        related=excluding,
        counts=counts,
    )
    rows = []
    for (instance_id, model, rubric_id), judges in per_judge.items():
        votes: Counter[Hashable] = Counter()
        voters: list[str] = []
        for judge, own in judges.items():
            choice = decide_one(own)
            if choice is not None:
                votes[choice] += 1
                voters.append(judge)
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
                "jurors": ",".join(sorted(voters)),
            }
        )
    columns = ["instance_id", "model", "rubric_id", "met", "votes", "jurors"]
    return JuryResult(pd.DataFrame(rows, columns=columns), dict(counts))
