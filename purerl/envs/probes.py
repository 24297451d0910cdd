"""Five probe environments that isolate one piece of an RL algorithm each.

After the probe environments of Andy Jones ("Debugging RL, Without the Agonizing Pain", 2021):
if an agent fails one, the fault is in the piece that probe isolates.

| id | observation | actions | reward | what it checks |
|---|---|---|---|---|
| ``ProbeConstant-v0`` | 0 | 1 | +1, one-step episodes | value learning: V = 1 |
| ``ProbeObsReward-v0`` | +-1 at random | 1 | = observation | value depends on obs: V(o) = o |
| ``ProbeTwoStep-v0`` | 0, then 1 | 1 | 0, then +1 | discounting: V(0) = gamma, V(1) = 1 |
| ``ProbeActionReward-v0`` | 0 | 2 | +1 for action 1, -1 otherwise | policy learning |
| ``ProbeObsAction-v0`` | +-1 at random | 2 | +1 if action matches obs sign | obs-dependent policy |

Episodes end by termination only. ``step`` does not reset; ``envs.make`` adds ``AutoReset``.
The probe is selected by ``ProbeParams`` (data), so one program can train all five.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp

from purerl.core.env import Discrete, EnvSpec, Step, no_episodes
from purerl.core.types import Array, Key


class ProbeState(NamedTuple):
    obs: Array
    """float32 scalar observation."""
    t: Array
    """int32 steps taken in the episode."""


class ProbeParams(NamedTuple):
    """Which probe runs: an index into ``KINDS``. Being data rather than code, it lets one
    compiled program train every probe at once (``vmap`` over the kind)."""

    kind: Array


KINDS = ("constant", "obs_reward", "two_step", "action_reward", "obs_action")
RANDOM_OBS = (False, True, False, False, True)
"""Whether each kind starts its episodes from a random +-1 observation (else from 0)."""


def _random_sign(key: Key) -> Array:
    return jnp.where(jax.random.bernoulli(key), 1.0, -1.0)


@dataclasses.dataclass(frozen=True)
class ProbeEnv:
    """The probes; ``kind`` is the default one, ``ProbeParams`` may select any other."""

    kind: str
    spec: EnvSpec
    pure: bool = True

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(jnp.int32(KINDS.index(self.kind)))

    def reset(self, key: Key, params: ProbeParams) -> tuple[ProbeState, Array]:
        random_obs = jnp.asarray(RANDOM_OBS)[params.kind]
        obs = jnp.where(random_obs, _random_sign(key), 0.0)
        state = ProbeState(jnp.asarray(obs, jnp.float32), jnp.int32(0))
        return state, state.obs[None]

    def step(
        self, key: Key, state: ProbeState, action: Array, params: ProbeParams
    ) -> tuple[ProbeState, Step]:
        del key
        reward, terminated, next_obs = transition(state, action, params.kind)
        next_state = ProbeState(next_obs, state.t + 1)
        obs = next_state.obs[None]
        step = Step(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=jnp.zeros((), bool),
            final_obs=obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )
        return next_state, step


def transition(state: ProbeState, action: Array, kind: Array) -> tuple[Array, Array, Array]:
    """``(reward, terminated, next_obs)`` of probe ``KINDS[kind]``: every probe's outcome is
    computed, the selected one returned."""
    one, ended = jnp.float32(1.0), jnp.bool_(True)
    last = state.t >= 1
    match = (action == 1) == (state.obs > 0)
    outcomes = [  # in the order of KINDS
        (one, ended, state.obs),
        (state.obs, ended, state.obs),
        (jnp.where(last, 1.0, 0.0), last, one),
        (jnp.where(action == 1, 1.0, -1.0), ended, state.obs),
        (jnp.where(match, 1.0, -1.0), ended, state.obs),
    ]
    reward, terminated, next_obs = (
        jnp.stack(column)[kind] for column in zip(*outcomes, strict=True)
    )
    return reward.astype(jnp.float32), terminated, next_obs.astype(jnp.float32)


PROBES = {
    "ProbeConstant-v0": ("constant", 1),
    "ProbeObsReward-v0": ("obs_reward", 1),
    "ProbeTwoStep-v0": ("two_step", 1),
    "ProbeActionReward-v0": ("action_reward", 2),
    "ProbeObsAction-v0": ("obs_action", 2),
}


def make_probe(env_id: str, num_envs: int | None = None) -> ProbeEnv:
    kind, num_actions = PROBES[env_id]
    spec = EnvSpec(
        id=env_id, obs_shape=(1,), obs_dtype="float32", action_space=Discrete(num_actions)
    )
    return ProbeEnv(kind, spec)
