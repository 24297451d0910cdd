"""Adapter from the gymnax environment interface to purerl's: gymnax's own environments and
any object with the same methods (``purerl.envs.custom``) go through this one module.

The interface: ``reset(key, params) -> (obs, state)``; ``step(key, state, action, params)`` ->
``(obs, state, reward, terminated, truncated, info)`` as in gymnax >= 1.0, or the older
``(obs, state, reward, done, info)``; ``observation_space(params)`` and
``action_space(params)``; ``default_params``. ``step`` auto-resets: a step that ends an episode
returns the first observation of the next one, and the observation that ended it as
``info["final_observation"]``. Where ``info`` has no ``final_observation``, purerl cannot
bootstrap from the observation an episode was cut short at, so every end of an episode counts
as terminal (no bootstrap), as in gymnax before 1.0.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import threading
import types
from collections.abc import Mapping
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.env import (
    Discrete,
    EnvSpec,
    InvalidEnvError,
    Step,
    action_dtype,
    action_space_from,
    no_episodes,
)
from purerl.core.types import Array, Key

STEP_FORMS = "(obs, state, reward, terminated, truncated, info) or (obs, state, reward, done, info)"


class GymnaxInterface(Protocol):
    """What purerl needs of an environment of the gymnax interface (see the module docstring).

    One environment, unbatched: ``obs`` is one array of ``observation_space(params).shape``;
    ``reward``, ``terminated``, ``truncated`` (or ``done``) are scalars; ``action`` is an int32
    scalar for a ``Discrete`` action space, a float32 array of its shape for a ``Box``.
    """

    @property
    def default_params(self) -> Any: ...

    def reset(self, key: Key, params: Any) -> tuple[Array, Any]: ...

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, ...]: ...

    def observation_space(self, params: Any) -> Any: ...

    def action_space(self, params: Any) -> Any: ...


@dataclasses.dataclass(frozen=True, eq=False)
class GymnaxEnv:
    """One environment of the gymnax interface.

    ``info["final_observation"]`` becomes ``Step.final_obs``. Where an episode is flagged as
    both terminated and truncated, termination wins (no bootstrap). ``splits_done`` and
    ``final_obs_in_info`` say which form ``step`` returns (found by ``adapt_gymnax``).
    """

    env: Any
    params: Any
    spec: EnvSpec
    pure: bool = True
    splits_done: bool = True
    """``step`` returns terminated and truncated (gymnax >= 1.0), else one ``done``."""
    final_obs_in_info: bool = True

    @property
    def default_params(self) -> Any:
        return self.params

    def reset(self, key: Key, params: Any) -> tuple[Any, Array]:
        obs, state = self.env.reset(key, params)
        return state, obs

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        out = self.env.step(key, state, action, params)
        if self.splits_done:
            obs, state, reward, terminated, truncated, info = out
        else:
            obs, state, reward, terminated, info = out
            truncated = jnp.zeros((), bool)
        terminated = jnp.asarray(terminated, bool)
        truncated = jnp.asarray(truncated, bool)
        if self.final_obs_in_info:
            final_obs = info["final_observation"]
        else:
            final_obs, terminated = obs, terminated | truncated
        reward = jnp.asarray(reward, jnp.float32)
        return state, Step(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated & ~terminated,
            final_obs=final_obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )


class _OnFirstUse(types.ModuleType):
    """Stands in for a module during gymnax's import: the real one loads on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or sys.modules.get(self.__name__) is self:
            # Used while gymnax is still importing: the real module is not reachable yet.
            raise AttributeError(f"{self.__name__}.{name} (loads after gymnax's import)")
        return getattr(importlib.import_module(self.__name__), name)


DRAWING_MODULES = ("seaborn", "matplotlib", "matplotlib.pyplot", "matplotlib.colors")
"""Modules gymnax imports at its own import only to draw some environments (``matplotlib``
itself for ``import matplotlib.pyplot`` and ``from matplotlib import colors``): about 1.4 s of
CPU at every start of a process, so they load when an environment first draws instead."""


_IMPORT_LOCK = threading.Lock()


def import_gymnax() -> types.ModuleType:
    """``import gymnax``, with its drawing libraries loaded only when first used. Safe from
    several threads: one imports, the others wait for the whole module."""
    with _IMPORT_LOCK:
        stand_ins = {}
        if "gymnax" not in sys.modules:
            stand_ins = {n: _OnFirstUse(n) for n in DRAWING_MODULES if n not in sys.modules}
            for name, stand_in in stand_ins.items():
                parent, _, child = name.rpartition(".")
                if parent in stand_ins:  # ``import a.b`` and ``from a import b`` read a's b
                    setattr(stand_ins[parent], child, stand_in)
        sys.modules.update(stand_ins)
        try:
            return importlib.import_module("gymnax")
        finally:
            for name, stand_in in stand_ins.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]


def make_gymnax(env_id: str, **param_overrides: Any) -> GymnaxEnv:
    """Builds a gymnax environment; keyword arguments override fields of its ``EnvParams``."""
    gymnax = import_gymnax()

    env, params = gymnax.make(env_id)
    return adapt_gymnax(env, params, env_id, **param_overrides)


def adapt_gymnax(
    env: GymnaxInterface, params: Any, env_id: str, **param_overrides: Any
) -> GymnaxEnv:
    """Adapts ``env`` (of the gymnax interface) with ``params``, checked by tracing ``reset``
    and ``step`` once with ``jax.eval_shape`` (nothing runs).

    Raises:
        ValueError: an override names no field of ``params`` or has the wrong kind.
        InvalidEnvError: ``env`` does not follow the interface (the message says where).
    """
    params = with_overrides(params, env_id, param_overrides)
    name = f"{env_id}: {type(env).__name__}"
    obs_space = called(f"{name}.observation_space", env.observation_space, params)
    if not (hasattr(obs_space, "shape") and hasattr(obs_space, "dtype")):
        raise InvalidEnvError(
            f"{env_id}: observation_space(params) returns {type(obs_space).__name__}, which has "
            "no shape and dtype; return one Box (e.g. gymnax.environments.spaces.Box)"
        )
    space = called(f"{name}.action_space", env.action_space, params)
    try:
        action_space = action_space_from(space)
    except InvalidEnvError as err:
        raise InvalidEnvError(f"{env_id}: {err}") from None
    spec = EnvSpec(
        id=env_id,
        obs_shape=tuple(obs_space.shape),
        obs_dtype=np.dtype(obs_space.dtype).name,
        action_space=action_space,
    )
    splits_done, final_obs_in_info = trace_interface(env, params, spec)
    return GymnaxEnv(env, params, spec, True, splits_done, final_obs_in_info)


def trace_interface(env: Any, params: Any, spec: EnvSpec) -> tuple[bool, bool]:
    """Checks the values ``reset`` and ``step`` return by their shapes alone; returns whether
    ``step`` splits terminated from truncated and whether ``info`` has the final observation."""
    name = f"{spec.id}: {type(env).__name__}"
    key = jax.eval_shape(jax.random.key, 0)
    reset = traced(name + ".reset", lambda k: env.reset(k, params), key)
    if not isinstance(reset, tuple | list) or len(reset) != 2:
        raise InvalidEnvError(f"{name}.reset returns {count(reset)}; it must return (obs, state)")
    check_obs(f"{name}.reset", reset[0], spec)
    space = spec.action_space
    shape = () if isinstance(space, Discrete) else space.shape
    action = jax.ShapeDtypeStruct(shape, action_dtype(space))
    out = traced(name + ".step", lambda k, s, a: env.step(k, s, a, params), key, reset[1], action)
    if not isinstance(out, tuple | list) or len(out) not in (5, 6):
        raise InvalidEnvError(f"{name}.step returns {count(out)}; it must return {STEP_FORMS}")
    check_obs(f"{name}.step", out[0], spec)
    for what, value in zip(("reward", "terminated", "truncated"), out[2:-1], strict=False):
        what = what if len(out) == 6 else what.replace("terminated", "done")
        if getattr(value, "shape", None) != ():
            raise InvalidEnvError(
                f"{name}.step returns a {what} of shape {getattr(value, 'shape', value)}; one "
                "environment's is a scalar (purerl vectorises the environment itself)"
            )
    info = out[-1]
    if not isinstance(info, Mapping):
        raise InvalidEnvError(f"{name}.step returns info as {type(info).__name__}, not a dict")
    if "final_observation" in info:
        check_obs(f"{name}.step's info['final_observation']", info["final_observation"], spec)
    return len(out) == 6, "final_observation" in info


def called(what: str, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, with any error turned into one line naming ``what``."""
    try:
        return fn(*args)
    except Exception as err:
        raise InvalidEnvError(f"{what} raised {type(err).__name__}: {err}") from err


def traced(what: str, fn: Any, *args: Any) -> Any:
    """``jax.eval_shape(fn, *args)``, with any error turned into one line naming ``what``."""
    try:
        return jax.eval_shape(fn, *args)
    except InvalidEnvError:
        raise
    except Exception as err:
        hint = ""
        if isinstance(err, jax.errors.ConcretizationTypeError):  # TracerBoolConversionError too
            hint = " (it must be a JAX function: jnp.where or lax.cond, not Python if, on arrays)"
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise InvalidEnvError(
            f"{what} fails when traced: {type(err).__name__}: {first}{hint}"
        ) from err


def check_obs(what: str, obs: Any, spec: EnvSpec) -> None:
    if spec.structure is not None:
        check_structure(what, obs, spec)
        return
    if not isinstance(obs, jax.ShapeDtypeStruct):
        kind = type(obs).__name__
        raise InvalidEnvError(
            f"{what} gives observations as a {kind}, not one array; purerl's networks take one "
            "array (concatenate or flatten the parts)"
        )
    if tuple(obs.shape) != spec.obs_shape:
        raise InvalidEnvError(
            f"{what} gives observations of shape {tuple(obs.shape)}, but observation_space"
            f"(params).shape is {spec.obs_shape}; make them agree"
        )


def check_structure(what: str, obs: Any, spec: EnvSpec) -> None:
    """Checks a structured observation against ``spec.structure``, leaf by leaf."""
    expected = spec.structure
    leaves, treedef = jax.tree.flatten(obs)
    shapes = tuple((tuple(leaf.shape), np.dtype(leaf.dtype)) for leaf in leaves)
    wanted = tuple((leaf.shape, leaf.dtype) for leaf in expected.leaves)
    if treedef != expected.treedef or shapes != wanted:
        raise InvalidEnvError(
            f"{what} gives observations laid out as {jax.tree.map(lambda x: x.shape, obs)}, "
            f"but the environment's spec says {expected.describe()}; make them agree"
        )


def count(value: Any) -> str:
    if isinstance(value, tuple | list):
        return f"{len(value)} values"
    return "one array" if isinstance(value, jax.ShapeDtypeStruct) else type(value).__name__


def with_overrides(params: Any, env_id: str, overrides: dict[str, Any]) -> Any:
    """``params`` with fields replaced by ``overrides``, each checked against its default.

    Raises:
        ValueError: ``params`` has no such field (or no fields), or a value of the wrong kind.
    """
    if not overrides:
        return params
    if not dataclasses.is_dataclass(params):
        raise ValueError(f"{env_id} takes no options: its parameters are not a dataclass")
    defaults = dataclasses.asdict(params)
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        fields = ", ".join(sorted(defaults))
        raise ValueError(
            f"{env_id} has no parameter {', '.join(unknown)}; its parameters are: {fields}"
        )
    for name, value in overrides.items():
        problem = param_problem(value, defaults[name])
        if (
            problem is None
            and name == "max_steps_in_episode"
            and not np.all(np.asarray(value) >= 1)
        ):
            problem = f"must be at least 1, got {value!r}"
        if problem:
            raise ValueError(f"{env_id} parameter {name} {problem}")
    return dataclasses.replace(params, **overrides)


def param_problem(value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace the parameter whose default is ``default`` (None if it can):
    gymnax parameters are numbers and arrays, checked by kind and shape."""
    expected = np.asarray(default)
    try:
        given = np.asarray(value)
    except (ValueError, TypeError):
        return f"takes a number, got {value!r}"
    if given.shape != expected.shape:
        return f"takes shape {expected.shape}, got {value!r}"
    if expected.dtype.kind == "b":
        return None if given.dtype.kind == "b" else f"takes True or False, got {value!r}"
    if given.dtype.kind not in "biuf" or given.dtype.kind == "b":
        return f"takes a number, got {value!r}"
    if expected.dtype.kind in "iu" and given.dtype.kind == "f":
        return f"takes a whole number, got {value!r}"
    if not np.isfinite(given).all():
        return f"takes a finite number, got {value!r}"
    return None
