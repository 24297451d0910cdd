"""Networks stepped along rollouts in one signature, with memory or without.

The on-policy recipe (``purerl.algos.onpolicy``) drives a network through four uses: acting one
step at a time inside the rollout, the values a rollout bootstraps from, cutting the rollout into
training data, and evaluating that data in the update. A feed-forward network and a recurrent
one do each differently, so each has its adapter here behind the same methods, and a recipe
never asks which it holds:

| use | ``FeedForward`` | ``Recurrent`` |
|---|---|---|
| memory between steps | ``()`` | ``Memory(hidden, start)`` ``[B, ...]`` |
| acting | ``apply(obs)`` | one step from the memory, recording the value (shared torso) |
| values | after the rollout, one batched pass | the recorded ones, one pass for bootstraps |
| training data | flat ``[T * B, ...]`` | sequences, with the memory at their start |
| evaluation | ``apply(obs)`` | each sequence replayed from its recorded memory |

A network's outputs are what ``apply`` returns besides the cell's state: ``(dist, value)`` for an
actor-critic, the Q-values for a Q-network. ``value_of(outputs)`` reads the state value ``[N]``
in them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from purerl.core.nets import RECURRENT, initial_hidden
from purerl.core.ops.sgd import flatten_time_batch, replay_sequences, split_sequences
from purerl.core.rollout import (
    Memory,
    Rollout,
    RolloutValues,
    recurrent_rollout_values,
    rollout_values,
)
from purerl.core.types import Array, Key, PyTree

ValueOf = Callable[[Any], Array]
"""``value_of(outputs) -> [N]``: the state value in a network's outputs."""


def fresh_memory(kind: str, size: int, batch: int) -> Memory:
    """The memory of ``batch`` environments about to start episodes, for a ``kind`` cell of
    ``size`` units (``purerl.core.nets.initial_hidden``)."""
    return Memory(initial_hidden(kind, size, batch), jnp.ones(batch, bool))


class FeedForward(NamedTuple):
    """A network without memory (``apply(params, obs [N, ...]) -> outputs``)."""

    network: nn.Module
    value_of: ValueOf

    initial_memory = None
    """The ``Algo.initial_memory`` of a policy without memory."""

    def fresh(self, batch: int) -> tuple:
        """The memory of ``batch`` new episodes: none."""
        return ()

    def init(self, key: Key, obs: Array, memory: tuple) -> PyTree:
        return self.network.init(key, obs)

    def act(self, params: PyTree, memory: tuple, obs: Array) -> tuple[tuple, Any, tuple]:
        """One step for observations ``[B, ...]``: ``((), outputs, ())``; the value is left to
        ``values``, which computes every step's at once after the rollout."""
        return (), self.network.apply(params, obs), ()

    def values(
        self, params: PyTree, rollout: Rollout, recorded: tuple, autoreset: str
    ) -> RolloutValues:
        """The values of a rollout's observations, in one batched pass after it (``recorded``
        is what ``act`` recorded: nothing)."""
        value_fn = lambda obs: self.value_of(self.network.apply(params, obs))  # noqa: E731
        return rollout_values(value_fn, rollout, autoreset)

    def training_data(self, data: PyTree, rollout: Rollout, sequence_len: int) -> PyTree:
        """Per-step data ``[T, B, ...]`` as one flat batch ``[T * B, ...]``."""
        return flatten_time_batch(data)

    def evaluate(self, params: PyTree, batch: PyTree) -> tuple[Any, PyTree]:
        """The outputs on a minibatch ``[N, ...]`` (with ``obs``), and the minibatch."""
        return self.network.apply(params, batch.obs), batch


class Recurrent(NamedTuple):
    """A recurrent network (``apply(params, hidden [N, ...], obs [L, N, ...], start [L, N]) ->
    (hidden, *outputs)``, outputs flat over ``L * N``) with a ``kind`` cell of ``size`` units."""

    network: nn.Module
    value_of: ValueOf
    kind: str
    size: int

    @property
    def initial_memory(self) -> Callable[[int], Memory]:
        """The ``Algo.initial_memory`` of the policy: ``fresh``."""
        return self.fresh

    def fresh(self, batch: int) -> Memory:
        return fresh_memory(self.kind, self.size, batch)

    def init(self, key: Key, obs: Array, memory: Memory) -> PyTree:
        """Parameters initialised on one step from ``memory``."""
        return self.network.init(key, memory.hidden, one_step(obs), memory.start[None])

    def step(self, params: PyTree, hidden: PyTree, obs: Array, start: Array) -> tuple[Any, Any]:
        """One step of ``N`` environments: ``(hidden, outputs)``."""
        hidden, *outputs = self.network.apply(params, hidden, one_step(obs), start[None])
        return hidden, unpack(outputs)

    def act(self, params: PyTree, memory: Memory, obs: Array) -> tuple[PyTree, Any, Array]:
        """One step from ``memory``: the cell's state after it, the outputs, and the value of
        ``obs`` (recorded for the update: it comes with the step)."""
        hidden, outputs = self.step(params, memory.hidden, obs, memory.start)
        return hidden, outputs, self.value_of(outputs)

    def values(
        self, params: PyTree, rollout: Rollout, recorded: Array, autoreset: str
    ) -> RolloutValues:
        """The values ``recorded`` while acting ``[T, B]``, and those of the observations
        bootstrapped from, each computed from the cell's state it was reached with."""

        def value_fn(hidden: PyTree, obs: Array, start: Array) -> Array:
            return self.value_of(self.step(params, hidden, obs, start)[1])

        return recurrent_rollout_values(value_fn, rollout, recorded, autoreset)

    def training_data(self, data: PyTree, rollout: Rollout, sequence_len: int) -> PyTree:
        """Per-step data ``[T, B, ...]`` cut into sequences of ``sequence_len`` steps, each with
        the memory recorded at its start (``ops.sgd.split_sequences``)."""
        memories = rollout.memories
        return split_sequences(data, memories.hidden, memories.start, sequence_len)

    def evaluate(self, params: PyTree, batch: PyTree) -> tuple[Any, PyTree]:
        """The outputs on minibatch sequences, each replayed from its recorded memory, and the
        data flat in the same (time-major) order."""
        (_, *outputs), flat = replay_sequences(functools.partial(self.network.apply, params), batch)
        return unpack(outputs), flat


def one_step(obs: PyTree) -> PyTree:
    """Observations ``[N, ...]`` (each leaf of a structured one) as a sequence of one step."""
    return jax.tree.map(lambda x: x[None], obs)


def unpack(outputs: list[Any]) -> Any:
    """A network's outputs after the cell's state: one value, or a tuple of several."""
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


Stepped = FeedForward | Recurrent


def stepped(network: nn.Module, value_of: ValueOf, kind: str, size: int) -> Stepped:
    """The adapter of ``network``, built for ``--network kind`` (``mlp``, or a recurrent cell
    of ``size`` units)."""
    if kind in RECURRENT:
        return Recurrent(network, value_of, kind, size)
    return FeedForward(network, value_of)
