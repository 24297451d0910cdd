import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from purerl.core.ops.normalize import (
    RunningMeanStd,
    init_running_stats,
    normalize,
    update_running_stats,
)


@given(st.lists(st.integers(1, 6), min_size=2, max_size=5), st.integers(0, 100))
def test_running_stats_match_numpy_on_concatenated_batches(sizes, seed):
    rng = np.random.default_rng(seed)
    batches = [rng.normal(3.0, 2.0, size=(n, 2)).astype(np.float32) for n in sizes]
    first = batches[0]
    stats = RunningMeanStd(first.mean(0), first.var(0), np.float32(len(first)))
    for b in batches[1:]:
        stats = update_running_stats(stats, b)
    data = np.concatenate(batches)
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-4, atol=1e-5)
    assert stats.count == len(data)


def test_initial_prior_weighs_almost_nothing():
    data = np.random.default_rng(0).normal(5.0, 3.0, size=(64, 2)).astype(np.float32)
    stats = update_running_stats(init_running_stats((2,)), data)
    np.testing.assert_allclose(stats.mean, data.mean(0), rtol=1e-4)
    np.testing.assert_allclose(stats.var, data.var(0), rtol=1e-3)


def test_normalize_standardises_and_clips():
    stats = init_running_stats((1,))._replace(mean=np.float32([2.0]), var=np.float32([4.0]))
    out = normalize(stats, np.float32([[4.0], [2.0], [1000.0]]))
    np.testing.assert_allclose(out, [[1.0], [0.0], [10.0]], rtol=1e-6)
