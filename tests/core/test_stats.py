import jax.numpy as jnp
import numpy as np

from purerl.core.stats import accumulate, init_accumulator, recent_mean_return, summarize
from purerl.core.types import EpisodeStats


def test_hand_driven_episode_sequence_reports_exact_returns():
    # Env 0: episodes [1, 2] (ends step 1) and [3, 4, 5] (ends step 4).
    # Env 1: one episode [10, 10, 10, 10, 10] ending at step 4.
    rewards = np.array([[1, 10], [2, 10], [3, 10], [4, 10], [5, 10]], np.float32)
    done = np.array([[0, 0], [1, 0], [0, 0], [0, 0], [1, 1]], bool)
    acc = init_accumulator((2,))
    reports = []
    for r, d in zip(rewards, done, strict=True):
        acc, report = accumulate(acc, jnp.asarray(r), jnp.asarray(d))
        reports.append(report)
    returns = np.stack([np.asarray(rep.returns) for rep in reports])
    lengths = np.stack([np.asarray(rep.lengths) for rep in reports])
    np.testing.assert_array_equal(returns[1], [3, 0])
    np.testing.assert_array_equal(returns[4], [12, 50])
    np.testing.assert_array_equal(lengths[1], [2, 0])
    np.testing.assert_array_equal(lengths[4], [3, 5])
    assert returns[[0, 2, 3]].sum() == 0
    np.testing.assert_array_equal(acc.returns, [0, 0])


def test_uncounted_steps_add_reward_but_not_length():
    acc = init_accumulator(())
    acc, _ = accumulate(acc, jnp.float32(0.0), jnp.bool_(False), counted=jnp.bool_(False))
    acc, report = accumulate(acc, jnp.float32(2.0), jnp.bool_(True))
    assert report.lengths == 1 and report.returns == 2.0


def test_summarize_means_over_finished_episodes_and_nan_without_any():
    episodes = EpisodeStats(
        done=jnp.array([[True, False], [False, True]]),
        returns=jnp.array([[4.0, 0.0], [0.0, 8.0]]),
        lengths=jnp.array([[2, 0], [0, 6]]),
    )
    out = summarize(episodes)
    assert (
        out["episode/return"] == 6.0 and out["episode/length"] == 4.0 and out["episode/count"] == 2
    )
    empty = summarize(episodes._replace(done=jnp.zeros((2, 2), bool)))
    assert np.isnan(empty["episode/return"]) and empty["episode/count"] == 0


def test_recent_mean_return_takes_whole_updates_back_to_the_window():
    # Seed 0: updates with (mean, count) = (1, 50), (2, 60), (10, 50): window of 100 takes the
    # last two updates (110 episodes): (2*60 + 10*50) / 110.
    returns = np.array([[1.0, 2.0, 10.0], [np.nan, np.nan, np.nan]])
    counts = np.array([[50, 60, 50], [0, 0, 0]])
    out = recent_mean_return(returns, counts, min_episodes=100)
    np.testing.assert_allclose(out[0], (2 * 60 + 10 * 50) / 110)
    assert np.isnan(out[1])
    # Fewer episodes than the window in the whole run: all of them.
    np.testing.assert_allclose(
        recent_mean_return(returns[:1], counts[:1], 1000)[0], (50 + 120 + 500) / 160
    )
    # Updates without episodes (NaN mean) inside the window are skipped, not propagated.
    out = recent_mean_return(np.array([[3.0, np.nan, 5.0]]), np.array([[1, 0, 1]]), 2)
    np.testing.assert_allclose(out[0], 4.0)
