"""A timestep-style environment (Jumanji's interface, no Jumanji needed) whose legal actions
change every step: the tests' environment for action masks and structured observations.

Each step the observation cues one of 4 actions and masks the others at random (the cued one is
always legal). The cued action earns 1, another legal one 0, an illegal one ``ILLEGAL_REWARD``
and ends the episode (discount 0); otherwise episodes are cut after ``LENGTH`` steps (discount
1, a truncation). A legal episode returns 0 to ``LENGTH``; one with an illegal action returns
less than ``LENGTH - 1 + ILLEGAL_REWARD`` < 0, so a batch of fewer than ``-ILLEGAL_REWARD /
LENGTH`` (250) episodes has a negative mean return if any of them took an illegal action.
"""

from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp

NUM_ACTIONS = 4
LENGTH = 4
ILLEGAL_REWARD = -1000.0


class CueObservation(NamedTuple):
    cue: jax.Array
    """float32 [NUM_ACTIONS], one-hot of the rewarded action."""
    time: jax.Array
    """float32: steps into the episode over ``LENGTH``."""
    action_mask: jax.Array
    """bool [NUM_ACTIONS]: the legal actions."""


class CueState(NamedTuple):
    key: jax.Array
    t: jax.Array
    cue: jax.Array
    mask: jax.Array


class TimeStep(NamedTuple):
    observation: CueObservation
    reward: jax.Array
    discount: jax.Array
    step_type: jax.Array


def draw(key: jax.Array, t: jax.Array) -> CueState:
    key, cue_key, mask_key = jax.random.split(key, 3)
    cue = jax.random.randint(cue_key, (), 0, NUM_ACTIONS)
    mask = jax.random.bernoulli(mask_key, 0.4, (NUM_ACTIONS,)) | (jnp.arange(NUM_ACTIONS) == cue)
    return CueState(key, t, cue, mask)


def observe(state: CueState) -> CueObservation:
    cue = jax.nn.one_hot(state.cue, NUM_ACTIONS)
    return CueObservation(cue, state.t / LENGTH, state.mask)


class MaskedCue:
    """The environment; ``action_spec.num_values`` as Jumanji's ``DiscreteArray``."""

    action_spec = SimpleNamespace(num_values=NUM_ACTIONS)

    def reset(self, key):
        state = draw(jnp.asarray(key), jnp.int32(0))
        return state, TimeStep(observe(state), jnp.float32(0), jnp.float32(1), jnp.int8(0))

    def step(self, state, action):
        legal = state.mask[action]
        reward = jnp.where(legal, (action == state.cue).astype(jnp.float32), ILLEGAL_REWARD)
        nxt = draw(state.key, state.t + 1)
        last = ~legal | (nxt.t >= LENGTH)
        timestep = TimeStep(
            observe(nxt),
            reward,
            jnp.where(legal, 1.0, 0.0).astype(jnp.float32),
            jnp.where(last, 2, 1).astype(jnp.int8),
        )
        return nxt, timestep


def make_env() -> MaskedCue:
    return MaskedCue()
