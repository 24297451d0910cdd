"""The replay buffer: ring writes, sampling only written slots, uniformity, dtypes, vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl.core import buffers


def example(num_envs=2):
    return {"obs": jnp.zeros((num_envs, 3), jnp.uint8), "reward": jnp.zeros(num_envs)}


def filled(capacity, count):
    """A buffer of ``capacity`` slots after steps 0..count-1, added in two writes."""
    buffer = buffers.init_buffer(example(), capacity)
    half = count // 2
    return buffers.add(buffers.add(buffer, steps(0, half)), steps(half, count - half))


def steps(first, count, num_envs=2):
    """``count`` steps whose items record their own global step number and env column."""
    t = np.arange(first, first + count)[:, None] * np.ones((1, num_envs), np.int64)
    b = np.ones((count, 1), np.int64) * np.arange(num_envs)[None]
    obs = np.stack([t % 256, b, np.full_like(t, 7)], axis=-1).astype(np.uint8)
    return {"obs": jnp.asarray(obs), "reward": jnp.asarray(t * 10 + b, jnp.float32)}


def test_add_wraps_around_and_keeps_the_newest():
    # Capacity 4 slots: after writing steps 0..5 the slots hold 4, 5, 2, 3.
    buffer = buffers.init_buffer(example(), 4)
    buffer = buffers.add(buffer, steps(0, 3))
    assert int(buffer.position) == 3 and int(buffer.size) == 3
    buffer = buffers.add(buffer, steps(3, 3))
    assert int(buffer.position) == 2 and int(buffer.size) == 4
    np.testing.assert_array_equal(buffer.data["reward"][:, 0], [40, 50, 20, 30])
    np.testing.assert_array_equal(buffer.data["reward"][:, 1], [41, 51, 21, 31])


def test_items_keep_their_dtype():
    buffer = buffers.add(buffers.init_buffer(example(), 4), steps(0, 2))
    assert buffer.data["obs"].dtype == jnp.uint8
    sampled = buffers.gather(buffer, buffers.sample_index(buffer, jax.random.key(0), 5))
    assert sampled["obs"].dtype == jnp.uint8 and sampled["obs"].shape == (5, 3)


def test_never_samples_unwritten_slots():
    buffer = buffers.add(buffers.init_buffer(example(), 10), steps(0, 3))
    index = buffers.sample_index(buffer, jax.random.key(1), 2000)
    assert set(np.asarray(index.time)) == {0, 1, 2}
    assert set(np.asarray(index.env)) == {0, 1}
    # Unwritten slots hold zeros; every sampled item has the marker 7 written with it.
    assert (np.asarray(buffers.gather(buffer, index)["obs"][:, 2]) == 7).all()


def test_sampled_items_are_what_was_written_there():
    buffer = filled(4, 6)
    index = buffers.sample_index(buffer, jax.random.key(2), 500)
    rewards = np.asarray(buffers.gather(buffer, index)["reward"])
    # Only steps 2..5 survive; reward encodes step * 10 + env.
    assert set(rewards.astype(int)) == {s * 10 + b for s in range(2, 6) for b in range(2)}


def test_sampling_is_uniform_over_items():
    # 5 filled slots x 2 envs = 10 items after a wrap; 20000 draws, 2000 expected each.
    # The bound (+-10 %) is about 7 standard deviations of a binomial count: loose but it would
    # catch any slot or env being favoured or starved.
    buffer = filled(5, 8)
    index = buffers.sample_index(buffer, jax.random.key(3), 20000)
    counts = np.zeros((5, 2))
    np.add.at(counts, (np.asarray(index.time), np.asarray(index.env)), 1)
    np.testing.assert_allclose(counts, 2000, rtol=0.1)


def test_lookahead_leaves_out_the_newest_slot_and_reads_successors():
    # Slots hold steps 4, 5, 2, 3 (newest 5 at slot 1); with lookahead 1 step 5 is never drawn
    # and each draw's successor is the next step of the same env.
    buffer = filled(4, 6)
    index = buffers.sample_index(buffer, jax.random.key(4), 2000, lookahead=1)
    now = np.asarray(buffers.gather(buffer, index)["reward"])
    after = np.asarray(buffers.gather(buffer, index, offset=1)["reward"])
    assert set((now // 10).astype(int)) == {2, 3, 4}
    np.testing.assert_array_equal(after, now + 10)


def can_sample(buffer: buffers.ReplayBuffer, lookahead: int = 0) -> jax.Array:
    """Whether ``sample_index`` has at least one usable slot to draw from."""
    return buffer.size > lookahead


def test_can_sample():
    empty = buffers.init_buffer(example(), 4)
    one = buffers.add(empty, steps(0, 1))
    assert not can_sample(empty)
    assert can_sample(one) and not can_sample(one, lookahead=1)


def test_rejects_more_steps_than_slots_and_bad_capacity():
    with pytest.raises(ValueError, match="cannot add 5 steps to a buffer of 4 slots"):
        buffers.add(buffers.init_buffer(example(), 4), steps(0, 5))
    with pytest.raises(ValueError, match="capacity must be positive"):
        buffers.init_buffer(example(), 0)


def test_jit_and_vmap_over_seeds_match_single_buffers():
    def fill_and_sample(key):
        buffer = buffers.add(buffers.init_buffer(example(), 4), steps(0, 3))
        return buffers.gather(buffer, buffers.sample_index(buffer, key, 8))

    keys = jax.random.split(jax.random.key(5), 3)
    batched = jax.jit(jax.vmap(fill_and_sample))(keys)
    for i in range(3):
        single = fill_and_sample(keys[i])
        np.testing.assert_array_equal(batched["reward"][i], single["reward"])


def test_continuous_actions_round_trip_exactly_as_float32_vectors():
    # SAC and TD3 store [B, A] float32 actions in the same buffer: each sampled action is the
    # one written with its transition (its reward records step and column), bit for bit.
    rng = np.random.default_rng(0)
    actions = rng.uniform(-2, 2, size=(6, 2, 3)).astype(np.float32)
    example_item = {"action": jnp.zeros((2, 3), jnp.float32), "reward": jnp.zeros(2)}
    buffer = buffers.init_buffer(example_item, 8)
    rewards = (np.arange(6)[:, None] * 10 + np.arange(2)[None]).astype(np.float32)
    buffer = buffers.add(buffer, {"action": jnp.asarray(actions), "reward": jnp.asarray(rewards)})
    sampled = buffers.gather(buffer, buffers.sample_index(buffer, jax.random.key(4), 64))
    assert sampled["action"].dtype == jnp.float32 and sampled["action"].shape == (64, 3)
    step, column = np.divmod(np.asarray(sampled["reward"]).astype(int), 10)
    np.testing.assert_array_equal(sampled["action"], actions[step, column])
