"""Algorithms as pure functions, and the one registry every other part of purerl reads.

An algorithm is an ``Algo(init, update, act, hparams)`` built from a configuration and an
environment. Each algorithm module declares itself once, as an ``AlgoSpec`` named ``SPEC``: its
name, its configuration and traced-hyperparameter classes, its builder, its presets, a tiny
smoke configuration and its algorithm-specific run options. The command line, the Python API,
sweeps, evaluation, checkpoints, benchmarks and the shared invariant tests all look algorithms
up here and never spell one's name. Adding an algorithm is its module, one line in ``BUILTIN``
and its presets module; ``register`` adds one from outside purerl (a test, a user's package).

Importing this module imports no algorithm: they load on first lookup.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import ConfigError
from purerl.core.types import Array, Key, Metrics

S = TypeVar("S")


class Algo(NamedTuple, Generic[S]):
    """An algorithm in the shape of an optax optimizer.

    ``init(key)`` builds a fresh state; ``update(state, key)`` runs one rollout and learning
    step and returns the new state with that update's scalar metrics. Both are pure and are
    jitted, scanned and vmapped by ``purerl.core.loop``, never by the algorithm itself. Every state
    has an int32 ``step`` field counting the updates done and an ``hparams`` field holding the
    traced hyperparameters.

    ``act(state, obs, key, greedy)`` is the trained policy for evaluation: actions ``[B, ...]``
    for observations ``[B, ...]``, the most likely ones when ``greedy`` (a Python bool), else
    sampled as the algorithm explores (a recurrent policy's takes its memory too: see
    ``initial_memory``).

    ``hparams`` is the ``state.hparams`` that ``init`` builds, as concrete float32 scalars (or
    None). Given, ``purerl.core.loop`` passes them to the compiled ``init`` as data instead of
    letting them be baked into it as constants, so configurations that differ only in traced
    hyperparameters share one init program and its compilation-cache entry.

    ``lockstep`` names, as dotted paths into the state (``"buffer.position"``), integer leaves
    besides ``step`` that every seed of a program advances alike: counters driven by the number
    of updates, never by data. Vmapped over seeds, ``purerl.core.loop`` keeps one copy of them
    and of ``step`` for all seeds, so that a ``lax.cond`` on them stays a branch and a write at them
    stays one indexed write, rather than becoming per-seed selects (both branches computed) and
    scatters.
    """

    init: Callable[[Key], S]
    update: Callable[[S, Key], tuple[S, Metrics]]
    act: Callable[..., Any]
    hparams: Any = None
    lockstep: tuple[str, ...] = ()
    initial_memory: Callable[[int], Any] | None = None
    """Recurrent policies only: the ``purerl.core.rollout.Memory`` that ``B`` new episodes
    start from. ``act`` then takes the memory as a fifth argument and returns ``(actions,
    hidden)``, the cell's state after the step; ``policy_step`` and ``observe`` carry it."""


def initial_memory(algo: Algo, num_envs: int) -> Any:
    """The memory ``num_envs`` new episodes start from (None for a feed-forward policy)."""
    return None if algo.initial_memory is None else algo.initial_memory(num_envs)


def policy_step(
    algo: Algo, state: Any, obs: Array, key: Key, greedy: bool, memory: Any
) -> tuple[Array, Any]:
    """``algo.act`` for any policy: actions for ``obs`` ``[B, ...]`` and the memory after them
    (``memory`` from ``initial_memory`` or the last ``observe``)."""
    if memory is None:
        return algo.act(state, obs, key, greedy), None
    actions, hidden = algo.act(state, obs, key, greedy, memory)
    return actions, memory._replace(hidden=hidden)


def observe(memory: Any, out: Any, autoreset: str) -> Any:
    """The memory after an environment step ``out`` (a ``Step``): marks where the next
    observation begins an episode, so the policy forgets the last one there."""
    from purerl.core.rollout import episode_starts

    return None if memory is None else memory._replace(start=episode_starts(out, autoreset))


def concrete_hparams(hparams_cls: type, cfg: Any) -> Any:
    """The traced hyperparameters of ``cfg`` as NumPy float32 scalars, the form ``Algo.hparams``
    takes: concrete even when the algorithm is built inside a trace, and hashable, so an
    ``Algo`` can key a cache of compiled programs."""
    return hparams_cls(*(np.float32(getattr(cfg, name)) for name in hparams_cls._fields))


def hparams_from_config(hparams_cls: type, cfg: Any) -> Any:
    """The traced hyperparameters of ``cfg`` as float32 JAX arrays, the form ``init`` puts in
    the state; each algorithm's hparams NamedTuple exposes it as ``from_config``."""
    return jax.tree.map(jnp.asarray, concrete_hparams(hparams_cls, cfg))


@dataclasses.dataclass(frozen=True)
class AlgoSpec:
    """Everything purerl needs to know of one algorithm, declared once in its module."""

    name: str
    """Registry and command-line name (``purerl train <name>``)."""
    summary: str
    """One line for listings and ``--help``."""
    config_cls: type
    """Frozen configuration dataclass (a ``purerl.config.CommonConfig``); every field a flag."""
    hparams_cls: type
    """NamedTuple of the traced hyperparameters (``from_config(cfg)``): the config fields a
    sweep varies inside one compiled program."""
    build: Callable[..., Algo]
    """``build(cfg, env, env_params=None, axis_name=None) -> Algo``."""
    presets_module: str
    """Module holding ``PRESETS: dict[str, config]``, keyed by environment id or preset name."""
    smoke: Any
    """A configuration that trains in seconds on a CPU: ``purerl doctor`` and the shared
    invariant tests run it."""
    run_options_cls: type | None = None
    """``purerl.options.RunOptions`` or a subclass adding this algorithm's run flags (DQN: the
    replay buffer in checkpoints); None means the plain ``RunOptions``."""

    @property
    def traced(self) -> tuple[str, ...]:
        """Config fields that travel in ``state.hparams`` (vmapped within one program)."""
        return self.hparams_cls._fields

    @property
    def presets(self) -> Mapping[str, Any]:
        return importlib.import_module(self.presets_module).PRESETS

    @property
    def options_cls(self) -> type:
        if self.run_options_cls is not None:
            return self.run_options_cls
        from purerl.options import RunOptions

        return RunOptions

    def base_config(self, env_id: str | None = None, preset: str | None = None) -> Any:
        """The configuration flags apply to: a named preset, the preset of ``env_id``, or the
        defaults with ``env_id``. Without either, ``env_id`` is the default configuration's
        environment, so its preset applies as it would with ``--env`` given.

        Raises:
            ConfigError: ``preset`` names no preset of this algorithm.
        """
        presets = self.presets
        if preset is not None:
            if preset not in presets:
                raise ConfigError(
                    f"unknown preset {preset!r} for {self.name}; presets: {preset_names(presets)}"
                )
            return presets[preset]
        defaults = self.config_cls()
        env_id = defaults.env if env_id is None else env_id
        return presets.get(env_id) or dataclasses.replace(defaults, env=env_id)


def preset_names(presets: Mapping[str, Any]) -> str:
    """Preset names for messages, with the per-game Atari presets folded into one entry."""
    atari = [name for name in presets if name.endswith("-v5")]
    others = sorted(name for name in presets if not name.endswith("-v5"))
    return ", ".join(others + ([f"<Game>-v5 (all {len(atari)} Atari games)"] if atari else []))


BUILTIN: dict[str, str] = {
    "ppo": "purerl.algos.ppo",
    "dqn": "purerl.algos.dqn",
    "pqn": "purerl.algos.pqn",
    "sac": "purerl.algos.sac",
    "td3": "purerl.algos.td3",
}
"""Algorithms shipped with purerl: name -> module defining ``SPEC``."""

_REGISTRY: dict[str, AlgoSpec] = {}


class UnknownAlgoError(ConfigError):
    """A name no registered algorithm has."""


def register(spec: AlgoSpec) -> AlgoSpec:
    """Makes ``spec`` known under ``spec.name`` (replacing an earlier one of that name)."""
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Forgets an algorithm registered with ``register`` (built-ins come back on lookup)."""
    _REGISTRY.pop(name, None)


def names() -> list[str]:
    """Every known algorithm: the built-ins, then those registered later, in order."""
    return list(BUILTIN) + [name for name in _REGISTRY if name not in BUILTIN]


def get(name: str) -> AlgoSpec:
    """The spec registered as ``name``, loading a built-in module on first use.

    Raises:
        UnknownAlgoError: no such algorithm (the message lists the known ones).
    """
    if name not in _REGISTRY and name in BUILTIN:
        spec = importlib.import_module(BUILTIN[name]).SPEC
        _REGISTRY.setdefault(name, spec)
    if name not in _REGISTRY:
        raise UnknownAlgoError(f"unknown algorithm {name!r}; choose one of {', '.join(names())}")
    return _REGISTRY[name]


def for_config(cfg: Any) -> AlgoSpec:
    """The registered algorithm whose configuration class ``cfg`` is an instance of.

    Raises:
        UnknownAlgoError: no registered algorithm takes this configuration.
    """
    for name in names():
        spec = get(name)
        if type(cfg) is spec.config_cls:
            return spec
    raise UnknownAlgoError(f"no registered algorithm takes a {type(cfg).__name__}")
