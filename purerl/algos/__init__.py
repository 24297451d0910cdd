"""Algorithms as pure functions, and the one registry every other part of purerl reads.

An algorithm is an ``Algo(init, update, act, hparams)`` built from a configuration and an
environment. Each algorithm module declares itself once, as an ``AlgoSpec`` named ``SPEC``: its
name, its configuration and traced-hyperparameter classes, its builder, its presets, a tiny
smoke configuration and the state its checkpoints may leave out. The command line, the Python API,
sweeps, evaluation, checkpoints, benchmarks and the shared invariant tests all look algorithms
up here and never spell one's name. Adding an algorithm is its module, one line in ``BUILTIN``
and its presets module; ``register`` adds one from outside purerl (a test, a user's package).

Importing this module imports no algorithm: they load on first lookup.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from purerl.config import ConfigError
from purerl.core.algo import (
    Algo,
    concrete_hparams,
    hparams_class,
    hparams_from_config,
    initial_memory,
    observe,
    policy_step,
)
from purerl.core.env import Environment

__all__ = [
    "Algo",
    "AlgoSpec",
    "Made",
    "concrete_hparams",
    "for_config",
    "get",
    "hparams_class",
    "hparams_from_config",
    "initial_memory",
    "names",
    "observe",
    "policy_step",
    "register",
    "unregister",
]


class Made(NamedTuple):
    """An algorithm built for a configuration, and the environment it steps."""

    env: Environment
    algo: Algo


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
    """``build(cfg, env, env_params=None, axis_name=None) -> Algo``; one that offers a torso of
    the user's takes it as ``torso=`` (``purerl.algos.torso``)."""
    presets_module: str
    """Module holding ``PRESETS: dict[str, config]``, keyed by environment id or preset name."""
    smoke: Any
    """A configuration that trains in seconds on a CPU: ``purerl doctor`` and the shared
    invariant tests run it."""
    excludable: tuple[str, ...] = ()
    """State fields a checkpoint may leave out at the user's choice (``("buffer",)``: a replay
    buffer, which a resumed run then refills); ``purerl.options.options_for`` gives each a
    run option."""

    @property
    def traced(self) -> tuple[str, ...]:
        """Config fields that travel in ``state.hparams`` (vmapped within one program)."""
        return self.hparams_cls._fields

    @property
    def presets(self) -> Mapping[str, Any]:
        return importlib.import_module(self.presets_module).PRESETS

    def make(
        self,
        cfg: Any,
        env: Any = None,
        num_envs: int | None = None,
        axis_name: str | None = None,
        network: Any = None,
    ) -> Made:
        """The environment of ``cfg`` and this algorithm built on it: the one way purerl goes
        from a configuration to an algorithm (training, evaluation, sweeps, loading a run).

        Args:
            cfg: a configuration of this algorithm.
            env: an environment object (or ``(env, params)``) to build instead of ``cfg.env``.
            num_envs: environments to build instead of ``cfg.num_envs`` (a device's share, an
                evaluation's episodes).
            axis_name: the mapped axis gradients and metrics are averaged over (data
                parallelism), or None.
            network: the flax module that ``cfg.network`` names (``object:...``, or a recorded
                ``module:attr`` the user vouched for); without it a ``module:attr`` is imported
                now (``purerl.algos.torso.find``).

        Raises:
            ConfigError: an environment, network or configuration this algorithm cannot train.
        """
        from purerl import envs
        from purerl.algos import torso

        own = torso.find(cfg, network)
        built = envs.from_config(cfg, num_envs, env=env)
        extra = {} if own is None else {"torso": own}
        return Made(built, self.build(cfg, built, axis_name=axis_name, **extra))

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
