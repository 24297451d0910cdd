"""The optimizer factory shared by the algorithms.

Learning rate and clipping norm may be traced arrays (swept hyperparameters): the factory is
called inside the compiled update, and the optimizer state's structure does not depend on them.
"""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp
import optax

from purerl.core.types import Array


def linear_schedule(
    start: float | Array, end: float | Array, duration: int | Array
) -> optax.Schedule:
    """Moves linearly from ``start`` at count 0 to ``end`` at ``duration``, then stays at ``end``.

    ``duration`` may be a traced array (a swept exploration fraction); a non-positive duration
    gives ``end`` from the start.
    """

    def schedule(count: Array) -> Array:
        fraction = jnp.clip(count / jnp.maximum(duration, 1), 0.0, 1.0)
        fraction = jnp.where(jnp.asarray(duration) > 0, fraction, 1.0)
        return start + fraction * (end - start)

    return schedule


def linear_decay(lr: float | Array, num_updates: int, steps_per_update: int) -> optax.Schedule:
    """Learning rate falling linearly from ``lr`` to 0 over ``num_updates`` updates.

    The rate is held constant within an update (``steps_per_update`` optimizer steps), so every
    minibatch of one update uses the same rate.
    """
    per_update = linear_schedule(lr, 0.0, num_updates)

    def schedule(count: Array) -> Array:
        return per_update(count // steps_per_update)

    return schedule


Optimizer = Literal["adam", "radam"]


def make_optimizer(
    lr: float | Array,
    max_grad_norm: float | Array,
    *,
    anneal_over: tuple[int, int] | None = None,
    adam_eps: float = 1e-5,
    kind: Optimizer = "adam",
) -> optax.GradientTransformation:
    """Global-norm gradient clipping followed by Adam (or RAdam, Liu et al. 2020).

    Args:
        lr: peak learning rate.
        max_grad_norm: gradients are rescaled so their global norm is at most this.
        anneal_over: ``(num_updates, steps_per_update)`` to decay the rate linearly to 0; None
            keeps it constant.
        adam_eps: Adam's epsilon (1e-5 as in the PPO reference implementations).
        kind: ``adam``, or ``radam`` (Adam with its variance rectified in early steps).
    """
    rate = lr if anneal_over is None else linear_decay(lr, *anneal_over)
    adam = optax.radam if kind == "radam" else optax.adam
    return optax.chain(
        optax.clip_by_global_norm(max_grad_norm),
        adam(learning_rate=rate, eps=adam_eps),
    )


def current_lr(lr: float | Array, step: Array, anneal_over: tuple[int, int] | None) -> Array:
    """The rate ``make_optimizer`` applies at optimizer step ``step``, for logging."""
    if anneal_over is None:
        return jnp.asarray(lr, jnp.float32)
    return linear_decay(lr, *anneal_over)(step)
