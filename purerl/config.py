"""Configuration shared by the algorithms: frozen dataclasses that tyro turns into CLIs."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any


class ConfigError(Exception):
    """A configuration that cannot run; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class CommonConfig:
    """Settings every algorithm has. Everything here can change the result of a run."""

    env: str = "CartPole-v1"
    """Environment id (``purerl.envs.list_envs()`` lists them)."""
    num_envs: int = 4
    """Parallel environments per agent."""
    total_timesteps: int = 500_000
    """Environment steps per agent (all of its environments together)."""
    seed: int = 0
    """Seed of the first agent; agent i uses seed + i."""
    num_seeds: int = 1
    """Independent agents trained at once (vmapped)."""
    normalize_obs: bool = False
    """Standardise observations with running statistics."""
    env_options: tuple[str, ...] = ()
    """Environment options as key=value: Atari protocol fields (sticky_actions=0,
    episodic_life=False, reward_clip=False, noop_max, frame_skip, max_episode_steps), gymnax
    EnvParams fields (e.g. max_steps_in_episode=200), Snake options (obs_mode=features)."""
    precision: str = "fp32"
    """Network compute precision: fp32, or bf16 (bfloat16 activations and matmuls; parameters,
    optimizer and losses stay float32)."""

    def __post_init__(self):
        require_positive(self, "num_envs", "total_timesteps", "num_seeds")
        if self.seed < 0:
            raise ConfigError(f"--seed must be non-negative, got {self.seed}")
        if self.precision not in ("fp32", "bf16"):
            raise ConfigError(f"--precision must be fp32 or bf16, got {self.precision!r}")
        parse_env_options(self.env_options)

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``env_options`` as keyword arguments of ``purerl.envs.make``."""
        return parse_env_options(self.env_options)


def parse_env_options(options: tuple[str, ...]) -> dict[str, Any]:
    """``("a=1", "b=False", "c=grid")`` to ``{"a": 1, "b": False, "c": "grid"}``.

    Values are Python literals where they parse as one, strings otherwise.
    """
    parsed = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"--env-options takes key=value pairs, got {option!r}")
        try:
            parsed[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parsed[key] = text
    return parsed


def require_positive(cfg: object, *names: str) -> None:
    """Raises ``ConfigError`` naming the first field in ``names`` that is not positive."""
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} must be positive, got {value}")


def require_unit_interval(cfg: object, *names: str) -> None:
    """Raises ``ConfigError`` naming the first field in ``names`` outside ``[0, 1]``."""
    for name in names:
        value = getattr(cfg, name)
        if not 0.0 <= value <= 1.0:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} must lie in [0, 1], got {value}")


def require_network(cfg: object) -> None:
    """Checks the ``hidden_sizes`` and ``activation`` fields of a config with an MLP."""
    from purerl.nets import ACTIVATIONS

    if cfg.activation not in ACTIVATIONS:
        raise ConfigError(
            f"--activation must be one of {sorted(ACTIVATIONS)}, got {cfg.activation!r}"
        )
    if not cfg.hidden_sizes or min(cfg.hidden_sizes) < 1:
        raise ConfigError(f"--hidden-sizes must be positive widths, got {cfg.hidden_sizes}")
