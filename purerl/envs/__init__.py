"""Environments: one ``make`` for every registered id.

>>> env = make("CartPole-v1", num_envs=4)
>>> state, obs = env.reset(jax.random.key(0), env.default_params)        # obs: [4, 4]
>>> state, step = env.step(key, state, actions, env.default_params)      # step.obs: [4, 4]

Ids come from backends registered below: every gymnax id (classic control, MinAtar, bsuite,
misc), purerl's probe environments (``envs/probes.py``) and Snake (``envs/snake.py``).
Backends whose packages are optional are imported only when one of their ids is made.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

from purerl.envs.base import Box, Discrete, Environment, EnvSpec, Step
from purerl.envs.wrappers import (
    AutoReset,
    ClipAction,
    NormalizeObservation,
    RecordEpisodeStats,
    Vectorize,
)

__all__ = [
    "Box",
    "Discrete",
    "EnvSpec",
    "Environment",
    "Step",
    "UnknownEnvError",
    "list_envs",
    "make",
    "register",
]


class UnknownEnvError(ValueError):
    """An environment id that no backend provides."""


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """How to build one id.

    ``factory(env_id, num_envs, **options)`` returns either a single auto-resetting pure
    environment (``batched=False``; ``make`` vectorises it) or an already batched one, which
    also receives ``seed`` and ``num_seeds`` (impure backends are seeded when built).
    ``needs_reset_wrapper`` marks single environments whose ``step`` does not reset.
    """

    factory: Callable[..., Environment]
    batched: bool = False
    needs_reset_wrapper: bool = False
    reports_episodes: bool = False
    """The adapter fills ``Step.episode`` itself (EnvPool: raw score over whole games)."""


_REGISTRY: dict[str, EnvEntry] = {}


def register(env_id: str, entry: EnvEntry) -> None:
    _REGISTRY[env_id] = entry


def list_envs() -> list[str]:
    """All registered ids, sorted."""
    return sorted(_REGISTRY)


def _gymnax_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.gymnax import make_gymnax

    return make_gymnax(env_id, **options)


def _register_gymnax() -> None:
    import gymnax

    for env_id in gymnax.registered_envs:
        register(env_id, EnvEntry(_gymnax_factory))


def _probe_factory(env_id: str, num_envs: int | None) -> Environment:
    from purerl.envs.probes import make_probe

    return make_probe(env_id)


def _register_probes() -> None:
    from purerl.envs.probes import PROBES

    for env_id in PROBES:
        register(env_id, EnvEntry(_probe_factory, needs_reset_wrapper=True))


SNAKE_SIZES = {
    "Snake-v0": (10, 10),
    "Snake-6x6-v0": (6, 6),
    "Snake-8x8-v0": (8, 8),
    "Snake-16x16-v0": (16, 16),
}
"""Board ``(height, width)`` of each Snake id; ``height``/``width`` options override it."""


def _snake_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.snake import make_snake

    height, width = SNAKE_SIZES[env_id]
    return make_snake(env_id, **{"height": height, "width": width, **options})


def _register_snake() -> None:
    for env_id in SNAKE_SIZES:
        register(env_id, EnvEntry(_snake_factory))


def _envpool_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.envpool import make_envpool

    if num_envs is None:
        raise ValueError(f"{env_id} is an EnvPool batch; give num_envs")
    return make_envpool(env_id, num_envs, **options)


def _register_envpool() -> None:
    from purerl.envs.envpool import ATARI_GAMES, CLASSIC_IDS, PREFIX

    entry = EnvEntry(_envpool_factory, batched=True, reports_episodes=True)
    for game in ATARI_GAMES:
        register(f"{game}-v5", entry)
        register(f"{PREFIX}{game}-v5", entry)
    for env_id in CLASSIC_IDS:
        register(PREFIX + env_id, entry)


_register_gymnax()
_register_probes()
_register_snake()
_register_envpool()


def lookup(env_id: str) -> EnvEntry:
    """The registry entry for ``env_id``.

    Raises:
        UnknownEnvError: with the closest registered ids in the message.
    """
    if env_id in _REGISTRY:
        return _REGISTRY[env_id]
    by_lower = {name.lower(): name for name in _REGISTRY}
    close = [
        by_lower[m] for m in difflib.get_close_matches(env_id.lower(), by_lower, n=4, cutoff=0.6)
    ]
    hint = f"did you mean {' or '.join(close)}?" if close else "purerl.envs.list_envs() lists them"
    raise UnknownEnvError(f"unknown environment id {env_id!r}; {hint}")


def make(
    env_id: str,
    num_envs: int | None = None,
    *,
    normalize_obs: bool = False,
    clip_actions: bool = True,
    seed: int = 0,
    num_seeds: int = 1,
    **options: Any,
) -> Environment:
    """Builds environment ``env_id``, vectorised over ``num_envs`` copies.

    Args:
        env_id: a registered id (``list_envs()``).
        num_envs: parallel environments per ``step``; None for one unbatched environment.
        normalize_obs: standardise observations with running statistics (needs ``num_envs``).
        clip_actions: clip continuous actions into the action space before stepping.
        seed: seed of impure backends, fixed when they are built (EnvPool); pure environments
            take their randomness from the keys given to ``reset`` and ``step`` instead.
        num_seeds: agents an impure backend serves at once (one EnvPool of
            ``num_seeds * num_envs``, stepped under ``vmap`` over seeds); pure ones ignore it.
        **options: backend options (for gymnax: fields of the environment's ``EnvParams``; for
            Atari: fields of ``purerl.envs.envpool.AtariProtocol``).

    Returns:
        An auto-resetting environment whose steps report finished episodes in ``Step.episode``.
    """
    entry = lookup(env_id)
    if num_envs is not None and num_envs < 1:
        raise ValueError(f"num_envs must be positive, got {num_envs}")
    if entry.batched:
        env = entry.factory(env_id, num_envs, seed=seed, num_seeds=num_seeds, **options)
    else:
        env = entry.factory(env_id, num_envs, **options)
    if entry.needs_reset_wrapper:
        env = AutoReset(env)
    if clip_actions and isinstance(env.spec.action_space, Box):
        env = ClipAction(env)
    if num_envs is not None and not entry.batched:
        env = Vectorize(env, num_envs)
    if not entry.reports_episodes:
        env = RecordEpisodeStats(env)
    if normalize_obs:
        if num_envs is None:
            raise ValueError("normalize_obs needs num_envs: statistics are taken over a batch")
        env = NormalizeObservation(env)
    return env
