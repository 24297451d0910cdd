"""Configuration shared by the algorithms: frozen dataclasses that tyro turns into CLIs."""

from __future__ import annotations

import dataclasses


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

    def __post_init__(self):
        require_positive(self, "num_envs", "total_timesteps", "num_seeds")
        if self.seed < 0:
            raise ConfigError(f"--seed must be non-negative, got {self.seed}")


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
