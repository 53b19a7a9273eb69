"""The row-level pairwise metrics read `build_comparisons`' `RowPairs` (one pairing, one set of
codes): their records must be those of a straightforward per-group computation from the rows."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.comparisons import build_comparisons, row_exclusions
from nepotism.analyses.suite import SuiteOptions, _position_records, exclusion_records
from nepotism.metrics import recognition
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.metrics.coverage import excluded_share
from nepotism.tables import validate

BOOT = Bootstrap(n_resamples=200, seed=7)


def _planted(seed: int = 0) -> pd.DataFrame:
    """3 judges × 4 models × 2 conditions, both orders, shuffled; ~12% without a verdict (several
    statuses and reasons), some comparisons with one order only, a planted first-slot bias."""
    rng = np.random.default_rng(seed)
    models = ["m-a", "m-b", "m-c", "m-d"]
    rows = []
    for instance in range(25):
        for judge in ("j1", "j2", "j3"):
            for condition in ("default", "swap-names"):
                for i, x in enumerate(models):
                    for y in models[i + 1 :]:
                        for a, b in ((x, y), (y, x)):
                            if rng.random() < 0.06:
                                continue  # this order was never judged: a single-order comparison
                            verdict = rng.choice(["A", "B", "tie"], p=[0.55, 0.3, 0.15])
                            status, reason = "parsed", None
                            draw = rng.random()
                            if draw < 0.06:
                                verdict, status, reason = None, "unparsed", rng.choice(["no-marker", "conflicting"])
                            elif draw < 0.12:
                                verdict, status, reason = None, "failed", rng.choice(["timeout", "http_5xx:502"])
                            rows.append(
                                {
                                    "instance_id": f"q{instance:02d}",
                                    "judge": judge,
                                    "model_a": a,
                                    "model_b": b,
                                    "verdict": verdict,
                                    "condition": condition,
                                    "status": status,
                                    "reason": reason,
                                }
                            )
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return validate(frame, "pairwise").frame


def _straightforward_positions(frame: pd.DataFrame) -> list[tuple]:
    """Per (judge, condition): pair rows by key in table order with plain Python, then the metrics."""
    as_a = {"A": 1.0, "B": -1.0, "tie": 0.0}
    why = row_exclusions(frame)
    out = []
    for (judge, condition), part in frame.groupby(["judge", "condition"], sort=True):
        seen: dict[tuple, list[int]] = {}
        for i in part.index:
            r = frame.loc[i]
            seen.setdefault((r.instance_id, r.replicate, frozenset((r.model_a, r.model_b))), []).append(i)
        first, second, clusters, reasons = [], [], [], Counter()
        for (instance, _, _), found in seen.items():
            if len(found) < 2:
                continue
            codes = []
            for i in found[:2]:
                r = frame.loc[i]
                code = as_a.get(r.verdict, np.nan)
                codes.append(code if r.model_a < r.model_b else -code)
            first.append(codes[0])
            second.append(codes[1])
            clusters.append(instance)
            label = next((why[i] for i in found[:2] if frame.loc[i, "verdict"] is None), None)
            if label is not None:
                reasons[label] += 1
        est = recognition.position_consistency(first, second, clusters, bootstrap=BOOT)
        out.append((judge, condition, "two orders agree", est.value, est.ci_low, est.ci_high, est.n, dict(reasons)))
        slots = [np.nan if v is None else {"A": 1.0, "B": 0.0, "tie": 0.5}[v] for v in part["verdict"]]
        est = recognition.first_slot_preference(slots, part["instance_id"].tolist(), bootstrap=BOOT)
        missing = Counter(why[i] for i in part.index if frame.loc[i, "verdict"] is None)
        out.append((judge, condition, "first slot chosen", est.value, est.ci_low, est.ci_high, est.n, dict(missing)))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_position_records_from_row_pairs_match_a_straightforward_computation(seed):
    frame = _planted(seed)
    comparisons = build_comparisons(frame)
    got = _position_records(frame, SuiteOptions(bootstrap=BOOT), comparisons.rows)
    expected = _straightforward_positions(frame)
    assert len(got) == len(expected) == 12
    for record, (judge, condition, share, value, low, high, n, reasons) in zip(got, expected):
        assert (record["judge"], record["condition"], record["variant"]["share"]) == (judge, condition, share)
        assert (record["value"], record["ci_low"], record["ci_high"], record["n"]) == (value, low, high, n)
        for label, count in reasons.items():
            assert record["excluded"][label] == count  # ties are counted next to them in "first slot chosen"
    # without the pairing handed over (as for a slice) the records are the same
    assert _position_records(frame, SuiteOptions(bootstrap=BOOT)) == got


def test_excluded_verdicts_from_row_pairs_match_the_row_computation():
    frame = _planted(2)
    rows = build_comparisons(frame).rows
    got = exclusion_records(frame, "pairwise", SuiteOptions(bootstrap=BOOT), rows)
    expected = exclusion_records(frame, "pairwise", SuiteOptions(bootstrap=BOOT))  # the generic path, from the columns
    assert got == expected  # exclusion-share-gap records too
    got = [r for r in got if r["metric"] == "excluded-verdicts"]
    assert len(got) == 6 and sum(r["n_excluded"] for r in got) == int(frame["verdict"].isna().sum()) > 0
    one = frame[(frame.judge == "j2") & (frame.condition == "swap-names")]
    est = excluded_share(
        one["verdict"].isna().to_numpy(), one["instance_id"].to_numpy(), reasons=row_exclusions(one), bootstrap=BOOT
    )
    record = next(r for r in got if r["judge"] == "j2" and r["condition"] == "swap-names")
    assert (record["value"], record["ci_low"], record["excluded"]) == (est.value, est.ci_low, dict(est.excluded))


def test_presentation_rows_are_paired_among_themselves():
    frame = _planted(3)
    keep = frame.assign(presentation=np.where(np.arange(len(frame)) % 5 == 0, "randomised", "a-first"))
    records = _position_records(keep, SuiteOptions(bootstrap=BOOT), build_comparisons(frame).rows)
    only = frame[keep["presentation"].to_numpy() == "a-first"]
    assert records == _position_records(only, SuiteOptions(bootstrap=BOOT), build_comparisons(only).rows)
