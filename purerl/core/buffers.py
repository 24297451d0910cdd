"""A uniform replay buffer in device memory, as pure functions over a pytree of arrays.

Storage is time-major and per environment: every leaf is ``[C, B, ...]`` with ``C`` time slots
for each of ``B`` parallel environments, written as a ring. Keeping each environment's steps in
order means a transition's successor is the next slot of the same column, so algorithms can read
the next observation from there instead of storing it twice (``sample(..., lookahead=1)``).

Items keep their dtypes: uint8 frames stay uint8. The buffer is a plain pytree, so it can be
carried through ``lax.scan``, vmapped over seeds and checkpointed like any other state.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from purerl.core.types import Array, Key, PyTree


class ReplayBuffer(NamedTuple):
    data: PyTree
    """Leaves ``[C, B, ...]``."""
    position: Array
    """int32 time slot the next write goes to."""
    size: Array
    """int32 number of filled time slots, at most ``C``."""


class SampleIndex(NamedTuple):
    """Where sampled items live: time slots and environment columns, ``[N]`` int32 each."""

    time: Array
    env: Array


def init_buffer(example: PyTree, capacity: int) -> ReplayBuffer:
    """An empty buffer of ``capacity`` time slots for items shaped like ``example``.

    Args:
        example: one step of items, leaves ``[B, ...]`` (only shapes and dtypes are used).
        capacity: time slots ``C``; the buffer holds ``C * B`` items.
    """
    if capacity < 1:
        raise ValueError(f"replay capacity must be positive, got {capacity}")
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + x.shape, x.dtype), example)
    return ReplayBuffer(data, jnp.int32(0), jnp.int32(0))


def capacity(buffer: ReplayBuffer) -> int:
    return jax.tree.leaves(buffer.data)[0].shape[0]


def add(buffer: ReplayBuffer, items: PyTree) -> ReplayBuffer:
    """Writes ``T`` steps of items (leaves ``[T, B, ...]``), overwriting the oldest when full."""
    slots = capacity(buffer)
    steps = jax.tree.leaves(items)[0].shape[0]
    chex.assert_trees_all_equal_structs(items, buffer.data)
    chex.assert_tree_shape_prefix(items, (steps, jax.tree.leaves(buffer.data)[0].shape[1]))
    if steps > slots:
        raise ValueError(f"cannot add {steps} steps to a buffer of {slots} slots")
    where = (buffer.position + jnp.arange(steps, dtype=jnp.int32)) % slots
    data = jax.tree.map(lambda stored, new: stored.at[where].set(new), buffer.data, items)
    return ReplayBuffer(
        data, (buffer.position + steps) % slots, jnp.minimum(buffer.size + steps, slots)
    )


def sample_index(buffer: ReplayBuffer, key: Key, num: int, lookahead: int = 0) -> SampleIndex:
    """Draws ``num`` items uniformly, with replacement, from the filled slots.

    With ``lookahead`` k the newest k time slots are left out, so every sampled slot has k
    written successors (``(time + j) % C`` for ``j <= k``) in the same column.
    """
    slots = capacity(buffer)
    num_envs = jax.tree.leaves(buffer.data)[0].shape[1]
    usable = jnp.maximum(buffer.size - lookahead, 1)
    flat = jax.random.randint(key, (num,), 0, usable * num_envs, dtype=jnp.int32)
    oldest = (buffer.position - buffer.size) % slots
    return SampleIndex((oldest + flat // num_envs) % slots, flat % num_envs)


def gather(buffer: ReplayBuffer, index: SampleIndex, offset: int = 0) -> PyTree:
    """The items at ``index`` (leaves ``[N, ...]``), or at ``offset`` slots after it."""
    time = (index.time + offset) % capacity(buffer)
    return jax.tree.map(lambda x: x[time, index.env], buffer.data)
