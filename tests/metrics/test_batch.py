"""The batched bootstrap equals one-at-a-time bootstraps; integer-code look-ups are exact."""

import numpy as np
import pandas as pd
import pytest

from nepotism.metrics import _codes
from nepotism.metrics._batch import BootstrapBatch, RecordBatch
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums


def _ratio(a, b):
    return lambda t: t[..., a] / t[..., b]


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_batch_equals_single_calls(method):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, 400)
    columns = np.column_stack([rng.random(400) < 0.3, np.ones(400), rng.random(400) < 0.6, np.ones(400)]).astype(float)
    _, sums = cluster_sums(ids, columns)
    boot = Bootstrap(n_resamples=300, seed=7, method=method)
    batch = BootstrapBatch(sums.shape[0], boot)
    block = batch.block(sums)
    batch.add(block, _ratio(0, 1), n=400)
    batch.add(block, lambda t: t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3], n=400, alternative="less")
    one, two = batch.run()
    single_one = cluster_bootstrap(sums[:, :2], _ratio(0, 1), n=400, bootstrap=boot)
    single_two = cluster_bootstrap(
        sums, lambda t: t[..., 0] / t[..., 1] - t[..., 2] / t[..., 3], n=400, bootstrap=boot, alternative="less"
    )
    assert (one.value, one.ci_low, one.ci_high) == pytest.approx((single_one.value, single_one.ci_low, single_one.ci_high))
    assert (two.value, two.ci_low, two.ci_high, two.p_value) == pytest.approx(
        (single_two.value, single_two.ci_low, single_two.ci_high, single_two.p_value)
    )


def test_undefined_items_are_nan_with_note_and_records_carry_fields():
    batch = RecordBatch({"judge": "j", "condition": "c"}, 3, Bootstrap(n_resamples=50))
    batch.add("mra", np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), _ratio(0, 1), n=0)
    batch.add("mra", np.array([[1.0, 1.0], [0.0, 1.0], [1.0, 2.0]]), _ratio(0, 1), n=4, undefined_note="skipped", generator="g")
    empty, skipped = batch.records()
    assert empty["value"] is None and "denominator" in empty["note"]
    assert skipped["value"] is None and skipped["note"] == "skipped" and skipped["generator"] == "g"
    assert skipped["judge"] == "j" and skipped["condition"] == "c"


@pytest.mark.parametrize("dense_limit", [10**9, 1])
def test_lookup_dense_and_sorted_paths_agree(monkeypatch, dense_limit):
    monkeypatch.setattr(_codes, "_DENSE_LIMIT", dense_limit)
    table = [np.array([0, 1, 2, 2]), np.array([1, 0, 1, -1])]
    values = np.array([10.0, 11.0, 12.0, 99.0])
    query = [np.array([2, 0, 1, 1, -1]), np.array([1, 1, 0, 1, 0])]
    out = _codes.lookup(table, values, [3, 2], query)
    assert np.array_equal(out, np.array([12.0, 10.0, 11.0, np.nan, np.nan]), equal_nan=True)


def test_codes_recode_and_as_float():
    series = pd.Series(["b", "a", "b", "c"])
    codes, labels = _codes.codes(series)
    assert list(labels) == ["a", "b", "c"] and list(codes) == [1, 0, 1, 2]
    other = pd.Series(pd.Categorical(["c", "z", "a"]))
    assert list(_codes.recode(other, labels)) == [2, -1, 0]
    assert list(_codes.recode(pd.Series(["a", "q"]), labels)) == [0, -1]
    got = _codes.as_float(pd.Series([True, None, False], dtype=object))
    assert np.array_equal(got, [1.0, np.nan, 0.0], equal_nan=True)
