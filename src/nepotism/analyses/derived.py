"""Result records beside the per-judge metrics: leaderboard ranks (pairwise and pointwise) and
perplexity bins — what `nepotism.audit` adds to the suite's records and the report draws.

- `leaderboard_records`: every generator's mean preference score (win 1, tie ½, loss 0 over all
  the comparisons it took part in, pooled over judges and conditions) and its rank (1 = best,
  average rank for ties), once with every judge (``variant.judges = "all"``) and once without the
  judges related to either candidate of a comparison (``"unrelated"``: a judge whose registry
  relation to a candidate is anything but UNRELATED/UNKNOWN is left out of that comparison). The
  rank interval comes from the same seeded cluster bootstrap as every metric (prompts resampled,
  `nepotism.metrics.bootstrap.bootstrap_weights`): the generators are ranked within each
  resample and the interval is the percentile interval of those ranks.
- `pointwise_leaderboard_records`: the same two leaderboards from a pointwise table (every
  generator graded alone, e.g. MT-Bench or arena-bench grades): each generator's mean score over
  the judges' scores, once with every judge and once without the judges related to it. In both,
  a generator only related judges scored has no score without them: it gets an ``unrelated``
  record without a value whose note names its judges and relations — flagged from the registry's
  lineage alone, never silently left off the board.
- `perplexity_records`: the list `nepotism.metrics.reference.perplexity_win_rate` returns, as
  records ``metric = "perplexity-win-rate"`` with ``variant = {bin, low, high, rater: judge|human,
  split: all|self|other}`` — the shape `nepotism.report.plots` draws.

Leaderboards mix opponents: a generator compared only with strong models scores lower than the
same generator compared with weak ones, so ranks are comparable only when every generator met the
same opponents (as in a full round robin). The report says so; this module does not correct it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from nepotism.metrics.bootstrap import Bootstrap, bootstrap_weights, settings
from nepotism.metrics.definitions import win_score
from nepotism.models import Registry
from nepotism.results import new_record

__all__ = ["leaderboard_records", "opponent_boards", "perplexity_records", "pointwise_leaderboard_records"]

_PREFERENCE = "mean preference (win 1, tie 1/2, loss 0)"
_MEAN_SCORE = "mean score (the judges' scores averaged)"


def _ranks(scores: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, 1 = highest score, average ranks for ties, NaN stays NaN."""
    ranks: np.ndarray = stats.rankdata(-scores, axis=-1, method="average", nan_policy="omit")
    return ranks


def opponent_boards(rows: pd.DataFrame) -> dict[str, str | None]:
    """Which generators can be ranked together: a label per generator, None for one that no other
    generator can be compared with.

    A mean preference depends on whom a generator met, so two generators are ranked on one board
    only when they met the same opponents: the same set (every generator against one baseline, as
    in AlpacaEval) or the same field counting themselves (a round robin). A generator matching no
    other (the baseline itself, which met everyone) is on no board.
    """
    met = rows.groupby("generator")["opponent"].agg(lambda s: frozenset(map(str, s)))
    return _boards({str(g): opp for g, opp in met.items()})


def _boards(met: dict[str, frozenset[str]]) -> dict[str, str | None]:
    """`opponent_boards` from each generator's set of opponents."""
    boards: dict[str, str | None] = {g: None for g in met}

    def name(opponents: frozenset[str]) -> str:
        names = sorted(opponents)
        return "vs " + ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")

    def same(g: str, opp: frozenset[str]) -> frozenset[str]:
        return opp

    def field(g: str, opp: frozenset[str]) -> frozenset[str]:
        return opp | {g}

    def round_robin(members: frozenset[str]) -> str:
        return f"round robin of {len(members)}"

    for key_of, label_of in (
        (same, name),  # the same opponents (one baseline)
        (field, round_robin),
    ):
        keys: dict[frozenset[str], list[str]] = {}
        for g, opp in met.items():
            if boards[g] is None:
                keys.setdefault(key_of(g, opp), []).append(g)
        for key, members in keys.items():
            if len(members) > 1:
                for g in members:
                    boards[g] = label_of(key)
    return boards


def _text_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, labels): each value's text, coded in sorted text order (as `np.unique` sorts them)."""
    first, uniques = pd.factorize(np.asarray(values, dtype=object))
    text = np.array([str(u) for u in uniques], dtype=object)
    recoded, labels = pd.factorize(text, sort=True)
    return np.asarray(recoded, dtype=np.int64)[first], np.asarray(labels, dtype=object)


class _Side:
    """Leaderboard rows as integer codes: instance, judge, generator (, opponent) and score.

    ``weight``: how many rows each entry stands for (its ``score`` is then their sum), for rows
    already summed per (instance, judge, generator) — the streamed metrics (`nepotism.analyses.stream`)."""

    def __init__(
        self,
        instance: np.ndarray,
        judge: np.ndarray,
        generator: np.ndarray,
        score: np.ndarray,
        names: np.ndarray,
        judges: np.ndarray,
        opponent: np.ndarray | None = None,
        weight: np.ndarray | None = None,
    ):
        self.instance, self.judge, self.generator, self.score = instance, judge, generator, score
        self.names, self.judges, self.opponent, self.weight = names, judges, opponent, weight

    @classmethod
    def of_frame(cls, rows: pd.DataFrame) -> _Side:
        instance, _ = _text_codes(rows["instance_id"].to_numpy())
        judge, judges = _text_codes(rows["judge"].to_numpy())
        generator, names = _text_codes(rows["generator"].to_numpy())
        return cls(instance, judge, generator, rows["score"].to_numpy(dtype=float), names, judges)

    def subset(self, mask: np.ndarray) -> _Side:
        return _Side(
            self.instance[mask],
            self.judge[mask],
            self.generator[mask],
            self.score[mask],
            self.names,
            self.judges,
            None if self.opponent is None else self.opponent[mask],
            None if self.weight is None else self.weight[mask],
        )

    def count(self, mask: np.ndarray | None = None) -> dict[str, int]:
        """Rows per generator name (where ``mask``), only the generators that have some."""
        codes = self.generator if mask is None else self.generator[mask]
        weight = self.weight if self.weight is None or mask is None else self.weight[mask]
        counts = np.bincount(codes, weights=weight, minlength=len(self.names))
        return {str(self.names[i]): int(counts[i]) for i in np.flatnonzero(counts)}

    def judges_of(self) -> dict[int, list[str]]:
        pairs = np.unique(self.generator * len(self.judges) + self.judge)
        out: dict[int, list[str]] = {}
        for gen, judge in zip((pairs // len(self.judges)).tolist(), (pairs % len(self.judges)).tolist()):
            out.setdefault(gen, []).append(str(self.judges[judge]))
        return {gen: sorted(set(names)) for gen, names in out.items()}


#: Registry families that are not language models (the adversarial constant-string "null model"
#: AlpacaEval stores as ``example``): their rows are flagged on a leaderboard.
NOT_MODELS = frozenset({"null-model"})


def _unknown(registry: Registry, names: Iterable[object]) -> frozenset[str]:
    """Generators to flag on a board: unknown to the registry (lineage unchecked) or not a language
    model at all (a `NOT_MODELS` family) — never ranked as if they were known models."""
    flagged: set[str] = set()
    for name in set(map(str, names)):
        try:
            family = registry.get(name.split("@")[0]).family
        except (KeyError, AttributeError):
            flagged.add(name)
            continue
        if family in NOT_MODELS:
            flagged.add(name)
    return frozenset(flagged)


def _board(
    rows: pd.DataFrame | _Side,
    variant: str,
    n_excluded: Mapping[str, int],
    bootstrap: Bootstrap,
    *,
    measure: str = _PREFERENCE,
    boards: dict[str, str | None] | None = None,
    unknown: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """One record per generator; ranks are within each board of `opponent_boards` (all one board
    when ``boards`` is None, as for pointwise grades, where nobody has an opponent)."""
    side = rows if isinstance(rows, _Side) else (_Side.of_frame(rows) if not rows.empty else None)
    if side is None or not side.score.size:
        return []
    n_resamples, seed, confidence = bootstrap.n_resamples, bootstrap.seed, bootstrap.confidence_level
    clusters, cluster_code = np.unique(side.instance, return_inverse=True)
    present, gen_code = np.unique(side.generator, return_inverse=True)
    cluster_code, gen_code = cluster_code.ravel(), gen_code.ravel()
    names = side.names[present]
    g = names.size
    sums = np.zeros((clusters.size, 2 * g))
    width = clusters.size * 2 * g
    sums += np.bincount(cluster_code * 2 * g + gen_code, weights=side.score, minlength=width).reshape(sums.shape)
    sums += np.bincount(cluster_code * 2 * g + g + gen_code, weights=side.weight, minlength=width).reshape(sums.shape)
    total = sums.sum(axis=0)
    score = total[:g] / total[g:]
    labels = np.array([("one board" if boards is None else boards.get(str(n))) for n in names], dtype=object)
    board_columns = [labels == label for label in sorted({x for x in labels if x is not None})]

    def ranked(values: np.ndarray) -> np.ndarray:
        out = np.full(values.shape, np.nan)
        for cols in board_columns:
            out[..., cols] = _ranks(values[..., cols])
        return out

    rank = ranked(score)
    low = high = np.full(g, np.nan)
    score_low = score_high = np.full(g, np.nan)
    if n_resamples > 0 and clusters.size > 1:
        weights = bootstrap_weights(clusters.size, n_resamples, seed)
        boot = weights.astype(float) @ sums
        with np.errstate(invalid="ignore", divide="ignore"):
            boot_score = boot[:, :g] / boot[:, g:]
        boot_rank = ranked(boot_score)
        alpha = (1.0 - confidence) / 2.0
        with warnings.catch_warnings():  # a generator on no board has all-NaN ranks
            warnings.simplefilter("ignore", RuntimeWarning)
            low, high = np.nanquantile(boot_rank, [alpha, 1 - alpha], axis=0)
        score_low, score_high = np.nanquantile(boot_score, [alpha, 1 - alpha], axis=0)
    judges = side.judges_of()
    prompts = np.bincount(np.unique(gen_code * clusters.size + cluster_code) // clusters.size, minlength=g)
    records: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        name = str(name)
        records.append(
            {
                "metric": "leaderboard-rank",
                "judge": "all judges" if variant == "all" else "unrelated judges",
                "judge_id": None,
                "condition": "pooled",
                "generator": name,
                "pair": None,
                "scope": None,
                "variant": {"judges": variant, "score": measure} | ({} if boards is None else {"board": labels[i]}),
                "value": _clean(rank[i]),
                "ci_low": _clean(low[i]),
                "ci_high": _clean(high[i]),
                "score": float(score[i]),
                "score_ci_low": _clean(score_low[i]),
                "score_ci_high": _clean(score_high[i]),
                "n": int(total[g + i]),
                "n_clusters": int(prompts[i]),
                "n_excluded": int(n_excluded.get(name, 0)),
                "excluded": {_reason(measure): int(n_excluded.get(name, 0))} if n_excluded.get(name) else {},
                "judges_used": judges[int(present[i])],
                "confidence": confidence,
                "method": "percentile of bootstrap ranks",
                "n_resamples": n_resamples,
                "p_value": None,
                "flagged_entry": name in unknown,
                "note": None
                if labels[i] is not None
                else (
                    "not ranked: no other generator met the same opponents, and a mean preference against other "
                    "opponents is not comparable (its score is kept)"
                ),
            }
        )
    return records


def _lineage_only(
    rows: pd.DataFrame | _Side, kept: pd.DataFrame | _Side, registry: Registry, *, measure: str, bootstrap: Bootstrap
) -> list[dict[str, Any]]:
    """``unrelated`` records without a value for the generators only related judges scored."""
    records: list[dict[str, Any]] = []
    left = set(kept.count()) if isinstance(kept, _Side) else set(kept["generator"])
    missing: list[tuple[str, list[str], int]]
    if isinstance(rows, _Side):
        pairwise = rows.opponent is not None
        counts = rows.count()
        judges_of = rows.judges_of()
        missing = [
            (name, judges_of[int(np.flatnonzero(rows.names == name)[0])], counts[name]) for name in sorted(set(counts) - left)
        ]
    else:
        pairwise = "opponent" in rows
        missing = []
        for name in sorted(set(rows["generator"]) - left):
            mine = rows[rows["generator"] == name]
            missing.append((name, sorted(set(map(str, mine["judge"]))), len(mine)))
    for name, judges, n_rows in missing:
        why = ", ".join(f"{j}: {registry.relation(j, name).name.lower()}" for j in judges)
        whom = "judged each of its comparisons is related to it or to its opponent" if pairwise else "scored it is related to it"
        records.append(
            {
                "metric": "leaderboard-rank",
                "judge": "unrelated judges",
                "judge_id": None,
                "condition": "pooled",
                "generator": str(name),
                "pair": None,
                "scope": None,
                "variant": {"judges": "unrelated", "score": measure},
                "value": None,
                "ci_low": None,
                "ci_high": None,
                "score": None,
                "score_ci_low": None,
                "score_ci_high": None,
                "n": 0,
                "n_clusters": 0,
                "n_excluded": n_rows,
                "excluded": {_reason(measure): n_rows},
                "judges_used": [],
                "confidence": bootstrap.confidence_level,
                "method": "percentile of bootstrap ranks",
                "n_resamples": bootstrap.n_resamples,
                "p_value": None,
                "lineage_only": True,
                "related_judges": {j: registry.relation(j, name).name.lower() for j in judges},
                "note": f"flagged from lineage alone: every judge that {whom} ({why}), so no score "
                "without related judges can be estimated; add an unrelated judge's judgments",
            }
        )
    return records


def pointwise_leaderboard_records(
    frame: pd.DataFrame, registry: Registry, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> list[dict[str, Any]]:
    """Leaderboard ranks of a pointwise table, with all judges and without the judges related to each generator.

    ``frame`` is a recorded pointwise table (``instance_id, judge, model, score``; rows without a
    score are left out). A generator's score is the mean of its scores over instances and judges
    (replicates and judges pooled, as `leaderboard_records` pools comparisons); the ``unrelated``
    board drops every score given by a judge whose registry relation to that generator is anything
    but UNRELATED/UNKNOWN. Judges are assumed to share the score scale: a generator re-estimated
    from a stricter set of judges loses points (the per-judge leakage audit's difference in
    differences, `nepotism.leakage.audit`, is the estimate that removes leniency).
    """
    score = pd.to_numeric(frame["score"], errors="coerce")
    scored = frame[score.notna()]
    rows = pd.DataFrame(
        {
            "instance_id": scored["instance_id"].astype(str).to_numpy(),
            "judge": scored["judge"].astype(str).to_numpy(),
            "generator": scored["model"].astype(str).to_numpy(),
            "score": score[score.notna()].to_numpy(dtype=float),
        }
    )
    if rows.empty:
        return []
    pairs = rows[["judge", "generator"]].drop_duplicates()
    pairs["drop"] = [registry.is_related(j, g) for j, g in pairs.itertuples(index=False)]
    rows = rows.merge(pairs, on=["judge", "generator"], how="left")
    kept = rows[~rows["drop"]]
    dropped = rows[rows["drop"]].groupby("generator").size().to_dict()
    bootstrap = settings(bootstrap, **fields)
    return (
        _board(rows, "all", {}, bootstrap, measure=_MEAN_SCORE)
        + _board(kept, "unrelated", dropped, bootstrap, measure=_MEAN_SCORE)
        + _lineage_only(rows, kept, registry, measure=_MEAN_SCORE, bootstrap=bootstrap)
    )


def _reason(measure: str) -> str:
    return "judge related to a candidate" if measure == _PREFERENCE else "judge related to the generator"


def _clean(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def leaderboard_records(
    comparisons: pd.DataFrame, registry: Registry, *, bootstrap: Bootstrap | None = None, **fields: Any
) -> list[dict[str, Any]]:
    """Leaderboard ranks with bootstrap rank intervals, with all judges and with unrelated judges only.

    Rank intervals are percentiles of the resampled ranks whatever ``bootstrap.method`` says (a
    rank has no BCa jackknife here).

    ``comparisons`` is `nepotism.analyses.comparisons.Comparisons.frame` (one row per judge,
    prompt and unordered pair; NaN outcomes are excluded). A generator no unrelated judge saw gets
    an ``unrelated`` record without a value, flagged from lineage alone (its note says why).
    """
    decided = comparisons[comparisons["outcome"].notna()]
    if decided.empty:
        return []
    outcome = decided["outcome"].to_numpy(dtype=float)
    instance, _ = _text_codes(decided["instance_id"].to_numpy())
    judge, judges = _text_codes(decided["judge"].to_numpy())
    n = len(decided)
    models, names = _text_codes(
        np.concatenate([decided["model_x"].to_numpy(dtype=object), decided["model_y"].to_numpy(dtype=object)])
    )
    x, y = models[:n], models[n:]
    side = _Side(
        np.concatenate([instance, instance]),
        np.concatenate([judge, judge]),
        np.concatenate([x, y]),
        np.concatenate([win_score(outcome), win_score(-outcome)]),
        names,
        judges,
        opponent=np.concatenate([y, x]),
    )
    related = np.array([[registry.is_related(str(j), str(m)) for m in names] for j in judges], dtype=bool)
    drop = related[side.judge, side.generator] | related[side.judge, side.opponent]
    kept = side.subset(~drop)
    dropped = side.count(drop)
    met_pairs = np.unique(side.generator * len(names) + side.opponent)
    met: dict[str, set[str]] = {}
    for gen, opp in zip((met_pairs // len(names)).tolist(), (met_pairs % len(names)).tolist()):
        met.setdefault(str(names[gen]), set()).add(str(names[opp]))
    return pairwise_boards(side, kept, dropped, met, registry, settings(bootstrap, **fields))


def pairwise_boards(
    side: _Side, kept: _Side, dropped: Mapping[str, int], met: dict[str, set[str]], registry: Registry, bootstrap: Bootstrap
) -> list[dict[str, Any]]:
    """`leaderboard_records` from its two sides (every judge; the unrelated judges' rows), the rows
    dropped per generator and each generator's opponents (also built from per-prompt sums, weighted
    sides, by `nepotism.analyses.stream`)."""
    boards = _boards({g: frozenset(o) for g, o in sorted(met.items())})
    unknown = _unknown(registry, side.names)  # flagged: not in the registry, or not a model
    return (
        _board(side, "all", {}, bootstrap, boards=boards, unknown=unknown)
        + _board(kept, "unrelated", dropped, bootstrap, boards=boards, unknown=unknown)
        + _lineage_only(side, kept, registry, measure=_PREFERENCE, bootstrap=bootstrap)
    )


def perplexity_records(bins: list[dict[str, Any]], judge: str, condition: str, *, split: str = "all") -> list[dict[str, Any]]:
    """Records from `perplexity_win_rate`'s per-bin output (one per bin and rater)."""
    records: list[dict[str, Any]] = []
    for item in bins:
        for rater in ("judge", "human"):
            estimate = item[rater]
            records.append(
                new_record(
                    "perplexity-win-rate",
                    judge,
                    condition,
                    estimate,
                    judge_id=None,
                    scope=None if split == "all" else split,
                    variant={
                        "bin": int(item["bin"]),
                        "low": float(item["low"]),
                        "high": float(item["high"]),
                        "rater": rater,
                        "split": split,
                    },
                )
            )
    return records
