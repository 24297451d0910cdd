"""MuJoCo tasks through EnvPool: their ids, settings and headless frames.

The tasks step through the EnvPool adapter (``envs/envpool.py``), which widens actions to the
float64 the simulators take inside the step only; this module holds what is MuJoCo's own.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from purerl.config import ConfigError, type_problem

ENVPOOL_PREFIX = "envpool/"
MUJOCO_TASKS = (
    "Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
    "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d",
)  # fmt: skip
"""The MuJoCo tasks of EnvPool 1.2.5, registered as ``<task>-v4`` (Gymnasium's v4 dynamics,
rewards and observations; the protocol of CleanRL's published MuJoCo results)."""
MUJOCO_IDS = tuple(f"{task}-v4" for task in MUJOCO_TASKS)
MUJOCO_VIDEO_SIZE = 240
"""Height and width of MuJoCo video frames."""


def is_mujoco(env_id: str) -> bool:
    return env_id.removeprefix(ENVPOOL_PREFIX) in MUJOCO_IDS


MUJOCO_OPTIONS = (
    "max_episode_steps", "frame_skip", "terminate_when_unhealthy", "ctrl_cost_weight",
    "forward_reward_weight", "healthy_reward", "reset_noise_scale",
    "exclude_current_positions_from_observation",
)  # fmt: skip
"""EnvPool's MuJoCo settings an ``--env-options`` entry may change (not every task has each)."""


class NoRendererError(ConfigError, RuntimeError):
    """MuJoCo frames cannot be drawn in this process (a missing package or OpenGL library)."""


@functools.cache
def mujoco_gl_context(size: int) -> Any:
    """Makes a headless OpenGL context current for MuJoCo's renderer, once per process.

    EnvPool draws MuJoCo frames into the context current in the calling thread and creates none
    on Linux. ``MUJOCO_GL`` picks the backend (``egl`` by default: a GPU's driver, or Mesa's
    software EGL; ``osmesa`` also works without a display).

    Raises:
        NoRendererError: no backend could be loaded, with what to install.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    backend = os.environ["MUJOCO_GL"]
    try:
        import mujoco

        context = mujoco.GLContext(size, size)
        context.make_current()
    except ImportError as err:
        raise NoRendererError(
            f"MuJoCo videos need the mujoco package: pip install 'purerl[mujoco]' ({err})"
        ) from err
    except Exception as err:  # each GL backend fails in its own way
        raise NoRendererError(
            f"no OpenGL context for MuJoCo frames with MUJOCO_GL={backend} ({err}); install "
            "libegl1 (or libosmesa6 and set MUJOCO_GL=osmesa), e.g. apt-get install libegl1"
        ) from err
    return context


def mujoco_kwargs(env_id: str, options: dict[str, Any]) -> dict[str, Any]:
    """Checks ``options`` against the settings of MuJoCo task ``env_id``; returns them.

    Raises:
        ValueError: an option the task does not take, or a value of the wrong type.
    """
    import envpool

    config = envpool.make_spec(env_id.removeprefix(ENVPOOL_PREFIX)).config._asdict()
    takes = [name for name in MUJOCO_OPTIONS if name in config]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise ValueError(
            f"{env_id} takes no option {', '.join(unknown)}; it takes: {', '.join(takes)}"
        )
    for name, value in options.items():
        problem = type_problem(value, type(config[name]))
        if problem:
            raise ValueError(f"{env_id} option {name} {problem}")
    return dict(options)
