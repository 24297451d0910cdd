"""Algorithms as pairs of pure functions, ``Algo(init, update)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

from purerl.types import Array, Key, Metrics

S = TypeVar("S")


class Algo(NamedTuple, Generic[S]):
    """An algorithm in the shape of an optax optimizer.

    ``init(key)`` builds a fresh state; ``update(state, key)`` runs one rollout and learning
    step and returns the new state with that update's scalar metrics. Both are pure and are
    jitted, scanned and vmapped by ``purerl.train``, never by the algorithm itself. Every state
    has an int32 ``step`` field counting the updates done.

    ``act(state, obs, key, greedy)`` is the trained policy for evaluation: actions ``[B, ...]``
    for observations ``[B, ...]``, the most likely ones when ``greedy`` (a Python bool), else
    sampled as the algorithm explores.
    """

    init: Callable[[Key], S]
    update: Callable[[S, Key], tuple[S, Metrics]]
    act: Callable[[S, Array, Key, bool], Array]
