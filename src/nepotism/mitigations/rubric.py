"""Agreement-based filtering of rubric items as a mitigation (paper 002 Fig. 4).

`rubric_rows` reads single-item rubric judgments into rows ``judge, condition, instance_id,
rubric_id, model, met`` (parsed verdicts only; the others are counted by reason). `agreement_records`
drops the rubric items whose inter-judge agreement (`nepotism.analyses.suite.agreement_filter`)
is below the threshold and reports, per judge, the change in its *self-overestimation rate*: among
its own responses' items that the other judges' majority says are not met, the share it marks met.
Before and after are computed on the same resampled instances (the kept items are a subset), so
the interval is paired. Left out: weighting items by points.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from nepotism.metrics import Bootstrap, cluster_bootstrap, cluster_sums
from nepotism.mitigations.analysis import effect_record
from nepotism.mitigations.config import MitigationConfig
from nepotism.records import Judgment, exclusion_label
from nepotism.votes import decide

__all__ = ["agreement_records", "rubric_rows"]


def rubric_rows(judgments: Iterable[Judgment]) -> tuple[pd.DataFrame, dict[str, int]]:
    """(rows of parsed single-item rubric verdicts, the others counted by why they have none:
    `nepotism.records.exclusion_label`, e.g. ``unparsed-no-verdict``, ``failed-timeout``,
    ``failed-generation:timeout`` for an item of a response that could not be generated)."""
    rows: list[tuple[str, str, str, str, str, bool]] = []
    missing: dict[str, int] = {}
    for j in judgments:
        if j.protocol != "rubric" or j.rubric_id is None or len(j.candidates) != 1:
            continue
        if j.status != "parsed" or j.verdict not in ("yes", "no"):
            why = exclusion_label(j.status, j.reason) if j.status != "parsed" else "unparsed-invalid-verdict"
            missing[why] = missing.get(why, 0) + 1
            continue
        rows.append((j.judge, j.condition, j.instance_id, j.rubric_id, j.candidates[0], j.verdict == "yes"))
    return (
        pd.DataFrame(rows, columns=["judge", "condition", "instance_id", "rubric_id", "model", "met"]),
        dict(sorted(missing.items())),
    )


def _reference(frame: pd.DataFrame, judge: str) -> pd.DataFrame:
    """Majority of the other judges per (instance, rubric item, model); even splits dropped."""
    others = frame[frame["judge"] != judge]
    agg = others.groupby(["instance_id", "rubric_id", "model"])["met"].agg(["sum", "count"]).reset_index()
    column = decide(np.column_stack([agg["sum"], agg["count"] - agg["sum"]]), rule="majority")
    agg = agg[column >= 0].assign(ref_met=column[column >= 0] == 0)
    return agg[["instance_id", "rubric_id", "model", "ref_met"]]


def agreement_records(
    frame: pd.DataFrame, cfg: MitigationConfig, judges: Sequence[str], baseline: str, boot: Bootstrap
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``mitigation-effect`` records of filtering rubric items below ``cfg.params['threshold']``."""
    from nepotism.analyses.suite import agreement_filter

    base = frame[frame["condition"] == baseline]
    threshold = float(cfg.params.get("threshold", 0.75))
    if base.empty:
        return [], {"note": "no rubric judgments in the baseline"}
    kept, per = agreement_filter(base, threshold)
    kept_items = set(zip(kept["instance_id"], kept["rubric_id"]))
    info: dict[str, Any] = {"items": int(len(per)), "kept": len(kept_items), "threshold": threshold}
    out: list[dict[str, Any]] = []
    for judge in judges:
        own = base[(base["judge"] == judge) & (base["model"] == judge)]
        joined = own.merge(_reference(base, judge), on=["instance_id", "rubric_id", "model"], how="inner")
        risk = (~joined["ref_met"]).to_numpy(dtype=float)
        over = (joined["met"].to_numpy(dtype=bool) & ~joined["ref_met"].to_numpy(dtype=bool)).astype(float)
        keep = np.array([(i, r) in kept_items for i, r in zip(joined["instance_id"], joined["rubric_id"])], dtype=float)
        cols = np.column_stack([over, risk, over * keep, risk * keep]) if len(joined) else np.zeros((0, 4))
        n_excluded = int(len(own) - len(joined))
        excluded = {"no reference majority": n_excluded} if n_excluded else {}
        if len(joined):
            _, sums = cluster_sums(joined["instance_id"].to_numpy(dtype=str), cols)
        else:
            sums = np.zeros((0, 4))

        def stat(t: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.asarray(t[..., 2] / t[..., 3] - t[..., 0] / t[..., 1])

        est = cluster_bootstrap(
            sums,
            stat,
            n=len(joined),
            n_excluded=n_excluded,
            excluded=excluded,
            note=None if len(joined) else "no rubric verdict on the judge's own responses",
            bootstrap=boot,
        )
        total = sums.sum(axis=0) if len(sums) else np.zeros(4)
        with np.errstate(invalid="ignore", divide="ignore"):
            before, after = total[0] / total[1], total[2] / total[3]
        out.append(effect_record(judge, cfg, "self", "rubric-self-overestimation", est, float(before), float(after)))
    return out, info
