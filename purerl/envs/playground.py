"""Adapter from MuJoCo Playground (>= 0.2) environments to the purerl interface.

MuJoCo Playground's environments (``mujoco_playground.MjxEnv``) are pure JAX like Brax's:
``reset(key)`` and ``step(state, action)`` return a ``State(data, obs, reward, done, metrics,
info)`` pytree, so the episode bookkeeping is the Brax adapter's (``envs/brax.py``), reused as
is: an episode reaching ``episode_length`` steps is *truncated* (bootstrapped from
``final_obs``), Playground's ``done`` (NaN physics in the DeepMind Control suite) is a
*termination*, and a finished episode is replaced in the same step by a fresh ``reset`` with a
new key. Actions are a ``Box`` of ``action_size`` in ``[-1, 1]`` (Playground's control range),
observations float32 vectors; environments whose observations are a dict (most of
Playground's locomotion and manipulation tasks) are refused in one line.

The ids ``playground/<Name>`` cover the DeepMind Control suite ports
(``mujoco_playground.dm_control_suite.ALL_ENVS``), registered without importing Playground
(``pip install 'purerl[playground]'``). Physics always runs on MJX's JAX implementation
(``impl="jax"``). Playground 0.2 defaults to ``warp`` (NVIDIA Warp kernels through an XLA
foreign call), which does not run under purerl's rollout: with a fresh reset traced inside the
step, under ``vmap`` and ``lax.scan``, tracing fails with JAX's ``UnexpectedTracerError`` (a
batched ``int32[1]`` escapes the transformation; MJX 3.17.0, warp-lang 1.19.0, JAX 0.10.2, on a
CPU). It is also about a hundred times slower on a CPU (CartpoleBalance over 16 environments,
reset outside the scan: 2.2k against 280k steps/s on two cores). Frames for videos are drawn by
MuJoCo's renderer from the physics state, as for Brax.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import jax
import numpy as np

from purerl.envs.brax import (
    BraxEnv,
    BraxState,
    box_spec,
    check_episode_length,
    mujoco_warnings_to_python,
)
from purerl.envs.gymnax import param_problem

PLAYGROUND_ENVS = (
    "AcrobotSwingup", "AcrobotSwingupSparse", "BallInCup", "CartpoleBalance",
    "CartpoleBalanceSparse", "CartpoleSwingup", "CartpoleSwingupSparse", "CheetahRun",
    "FingerSpin", "FingerTurnEasy", "FingerTurnHard", "FishSwim", "HopperHop", "HopperStand",
    "HumanoidStand", "HumanoidWalk", "HumanoidRun", "PendulumSwingup", "PointMass",
    "ReacherEasy", "ReacherHard", "SwimmerSwimmer6", "WalkerRun", "WalkerStand", "WalkerWalk",
)  # fmt: skip
"""``mujoco_playground.dm_control_suite.ALL_ENVS`` of playground 0.2.0 (ids
``playground/<name>``), listed so ids resolve without importing Playground."""
PREFIX = "playground/"
IMPL = "jax"
"""MJX's physics implementation, pure JAX (see the module docstring for why not ``warp``)."""
CONFIG_OPTIONS = ("ctrl_dt", "sim_dt", "njmax", "naconmax")
"""Fields of the environment's Playground config that ``--env-options`` can set (besides
``episode_length``). ``action_repeat`` is left out: only Playground's training wrapper reads
it; ``vision`` turns observations into pixels (Madrona), which purerl does not take; ``impl``
is fixed (``IMPL``)."""


class PlaygroundEnv(BraxEnv):
    """One MuJoCo Playground environment, episodes capped at ``episode_length`` steps."""

    @property
    def mj_model(self) -> Any:
        return self.env.mj_model

    def joint_state(self, state: BraxState) -> tuple[np.ndarray, np.ndarray]:
        data = jax.device_get(state.brax_state.data)
        return data.qpos, data.qvel


def import_playground(env_id: str) -> Any:
    """``mujoco_playground.registry``, or a one-line ``MissingExtraError`` naming the extra."""
    from purerl.extras import import_extra

    # Warp and MJX print notices on stdout, which carries tables (`purerl envs`).
    with contextlib.redirect_stdout(io.StringIO()):
        return import_extra("mujoco_playground", "'purerl[playground]'", env_id).registry


def make_playground(
    env_id: str,
    episode_length: int | None = None,
    **config_overrides: Any,
) -> PlaygroundEnv:
    """Builds one MuJoCo Playground environment.

    Args:
        env_id: ``playground/<Name>`` with ``<Name>`` one of ``PLAYGROUND_ENVS``.
        episode_length: steps after which an episode is truncated; None takes the environment's
            own (its config's ``episode_length``, 1000 in the Control suite).
        **config_overrides: fields of the environment's Playground config named in
            ``CONFIG_OPTIONS`` (``ctrl_dt``, ``sim_dt``, ...), checked against their defaults.

    Raises:
        MissingExtraError: Playground is not installed (``pip install 'purerl[playground]'``).
        ValueError: an unknown option, an option of the wrong kind, or dict observations.
    """
    registry = import_playground(env_id)
    name = env_id.removeprefix(PREFIX)
    with contextlib.redirect_stdout(io.StringIO()):
        defaults = registry.get_default_config(name)
    check_config_overrides(env_id, defaults, config_overrides)
    if episode_length is None:
        episode_length = int(defaults.episode_length)
    check_episode_length(episode_length)
    overrides = {"impl": IMPL, "episode_length": episode_length, **config_overrides}
    # MuJoCo's model warnings (humanoid's deprecated settotalmass) go to Python's warnings.
    with contextlib.redirect_stdout(io.StringIO()), mujoco_warnings_to_python():
        env = registry.load(name, config_overrides=overrides)
        spec = box_spec(env, env_id)
    # Each episode from a new random state (Brax's first-state reset is not the default here).
    return PlaygroundEnv(env, spec, episode_length, autoreset="fresh")


def check_config_overrides(env_id: str, defaults: Any, overrides: dict[str, Any]) -> None:
    """Raises ``ValueError`` for an option not in ``CONFIG_OPTIONS`` or of another kind than
    its default in the environment's config."""
    unknown = sorted(set(overrides) - set(CONFIG_OPTIONS))
    if unknown:
        names = ", ".join(["episode_length", *sorted(CONFIG_OPTIONS)])
        raise ValueError(f"{env_id} has no option {', '.join(unknown)}; its options are: {names}")
    for name, value in overrides.items():
        problem = param_problem(value, defaults[name])
        if problem is None and not value > 0:
            problem = f"must be positive, got {value!r}"
        if problem:
            raise ValueError(f"{env_id} option {name} {problem}")
