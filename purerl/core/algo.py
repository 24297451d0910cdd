"""The algorithm interface: ``Algo(init, update, act, hparams)``, pure functions that the loop
compiles, and the helpers every caller of an algorithm uses (acting with or without memory, the
traced hyperparameters as data).

An algorithm's traced hyperparameters are the fields its configuration marks with
``purerl.config.traced``; ``hparams_class`` derives the NamedTuple that carries them in the state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import traced_fields
from purerl.core.types import Array, Key, Metrics

S = TypeVar("S")


class Algo(NamedTuple, Generic[S]):
    """An algorithm in the shape of an optax optimizer.

    ``init(key)`` builds a fresh state; ``update(state, key)`` runs one rollout and learning
    step and returns the new state with that update's scalar metrics. Both are pure and are
    jitted, scanned and vmapped by ``purerl.core.program``, never by the algorithm itself. Every
    state has an int32 ``step`` field counting the updates done and an ``hparams`` field holding
    the traced hyperparameters.

    ``act(state, obs, key, greedy)`` is the trained policy for evaluation: actions ``[B, ...]``
    for observations ``[B, ...]``, the most likely ones when ``greedy`` (a Python bool), else
    sampled as the algorithm explores (a recurrent policy's takes its memory too: see
    ``initial_memory``).

    ``hparams`` is the ``state.hparams`` that ``init`` builds, as concrete float32 scalars (or
    None). Given, ``purerl.core.program`` passes them to the compiled ``init`` as data instead of
    letting them be baked into it as constants, so configurations that differ only in traced
    hyperparameters share one init program and its compilation-cache entry.

    ``lockstep`` names, as dotted paths into the state (``"buffer.position"``), integer leaves
    besides ``step`` that every seed of a program advances alike: counters driven by the number
    of updates, never by data. Vmapped over seeds, ``purerl.core.program`` keeps one copy of them
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


def hparams_class(config_cls: type, name: str) -> type:
    """The NamedTuple of ``config_cls``'s traced hyperparameters (its fields marked with
    ``purerl.config.traced``, in their order), each a float32 array, with ``from_config(cfg)``.

    It is what ``init`` puts in ``state.hparams`` and what sweeps vary within one compiled
    program; an algorithm declares each such field once, on its configuration.
    """
    fields = traced_fields(config_cls)
    if not fields:
        raise TypeError(f"{config_cls.__name__} marks no field with purerl.config.traced")
    cls = NamedTuple(name, [(field, Array) for field in fields])
    cls.__doc__ = (
        f"The traced hyperparameters of {config_cls.__name__} ({', '.join(fields)}): float32 "
        "scalars in the state, so that they can be vmapped over."
    )
    cls.__module__ = config_cls.__module__
    cls.from_config = classmethod(hparams_from_config)
    return cls
