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
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from purerl.envs.base import Discrete, EnvSpec, Step, no_episodes
from purerl.types import Array, Key


class ProbeState(NamedTuple):
    obs: Array
    """float32 scalar observation."""
    t: Array
    """int32 steps taken in the episode."""


def _random_sign(key: Key) -> Array:
    return jnp.where(jax.random.bernoulli(key), 1.0, -1.0)


@dataclasses.dataclass(frozen=True)
class ProbeEnv:
    """One probe; ``kind`` selects which (see the module table)."""

    kind: str
    spec: EnvSpec
    pure: bool = True

    @property
    def default_params(self) -> Any:
        return None

    def reset(self, key: Key, params: Any) -> tuple[ProbeState, Array]:
        random_obs = self.kind in ("obs_reward", "obs_action")
        obs = _random_sign(key) if random_obs else jnp.float32(0.0)
        state = ProbeState(jnp.asarray(obs, jnp.float32), jnp.int32(0))
        return state, state.obs[None]

    def step(
        self, key: Key, state: ProbeState, action: Array, params: Any
    ) -> tuple[ProbeState, Step]:
        del key
        reward, terminated, next_obs = self.transition(state, action)
        reward = jnp.asarray(reward, jnp.float32)
        next_state = ProbeState(jnp.asarray(next_obs, jnp.float32), state.t + 1)
        obs = next_state.obs[None]
        step = Step(
            obs=obs,
            reward=reward,
            terminated=jnp.asarray(terminated, bool),
            truncated=jnp.zeros((), bool),
            final_obs=obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )
        return next_state, step

    def transition(self, state: ProbeState, action: Array) -> tuple[Array, Array, Array]:
        """``(reward, terminated, next_obs)`` of this probe."""
        if self.kind == "constant":
            return jnp.float32(1.0), jnp.bool_(True), state.obs
        if self.kind == "obs_reward":
            return state.obs, jnp.bool_(True), state.obs
        if self.kind == "two_step":
            last = state.t >= 1
            return jnp.where(last, 1.0, 0.0), last, jnp.float32(1.0)
        if self.kind == "action_reward":
            return jnp.where(action == 1, 1.0, -1.0), jnp.bool_(True), state.obs
        if self.kind == "obs_action":
            match = (action == 1) == (state.obs > 0)
            return jnp.where(match, 1.0, -1.0), jnp.bool_(True), state.obs
        raise ValueError(f"unknown probe kind {self.kind!r}")


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
