"""Action distributions as pytrees: a network returns one, the algorithm samples and scores it."""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from purerl.core.observations import allowed
from purerl.core.types import Array, Key


class Categorical(NamedTuple):
    """Categorical over the last axis of ``logits``; actions are int32."""

    logits: Array

    def sample(self, key: Key) -> Array:
        return jax.random.categorical(key, self.logits).astype(jnp.int32)

    def mode(self) -> Array:
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        log_p = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        log_p = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


class DiagGaussian(NamedTuple):
    """Independent normals over the last axis; ``log_std`` broadcasts against ``mean``."""

    mean: Array
    log_std: Array

    def sample(self, key: Key) -> Array:
        noise = jax.random.normal(key, self.mean.shape, self.mean.dtype)
        return self.mean + jnp.exp(self.log_std) * noise

    def mode(self) -> Array:
        return self.mean

    def log_prob(self, action: Array) -> Array:
        z = (action - self.mean) * jnp.exp(-self.log_std)
        per_dim = -0.5 * z**2 - self.log_std - 0.5 * math.log(2 * math.pi)
        return jnp.sum(per_dim, axis=-1)

    def entropy(self) -> Array:
        per_dim = jnp.broadcast_to(self.log_std, self.mean.shape) + 0.5 * math.log(
            2 * math.pi * math.e
        )
        return jnp.sum(per_dim, axis=-1)


Distribution = Categorical | DiagGaussian


class EpsilonGreedy(NamedTuple):
    """The greedy action of ``q_values`` (last axis), replaced by a uniformly random one with
    probability ``epsilon``; actions are int32. With ``legal`` (bool, like ``q_values``, at
    least one action per row) the random action is uniform over the legal ones; the greedy one
    is too where the Q-values of illegal actions are masked (``core.observations``)."""

    q_values: Array
    epsilon: Array | float
    legal: Array | None = None

    def sample(self, key: Key) -> Array:
        explore_key, random_key = jax.random.split(key)
        shape, num_actions = self.q_values.shape[:-1], self.q_values.shape[-1]
        if self.legal is None:
            random_actions = jax.random.randint(random_key, shape, 0, num_actions, jnp.int32)
        else:
            uniform = jnp.where(self.legal, 0.0, -jnp.inf)
            random_actions = jax.random.categorical(random_key, uniform).astype(jnp.int32)
        explore = jax.random.uniform(explore_key, shape) < self.epsilon
        return jnp.where(explore, random_actions, self.mode())

    def mode(self) -> Array:
        return jnp.argmax(self.q_values, axis=-1).astype(jnp.int32)


def epsilon_greedy(q_values: Array, epsilon: Array | float, masked: bool) -> EpsilonGreedy:
    """``EpsilonGreedy`` over a Q-network's values; ``masked``: the network masks them (its
    observations carry legal actions), so the random action is drawn among the legal ones."""
    return EpsilonGreedy(q_values, epsilon, allowed(q_values) if masked else None)


def tanh_log_det_jacobian(pre_tanh: Array) -> Array:
    """``log(1 - tanh(u)^2)`` elementwise, computed stably as ``2 (log 2 - u - softplus(-2u))``
    (Haarnoja et al. 2018, appendix C; the identity avoids ``1 - tanh^2`` rounding to 0)."""
    return 2.0 * (math.log(2.0) - pre_tanh - jax.nn.softplus(-2.0 * pre_tanh))


class SquashedGaussian(NamedTuple):
    """A diagonal Gaussian over pre-squash actions ``u``, squashed to the action bounds:
    ``a = center + half_width * tanh(u)`` (SAC's policy, Haarnoja et al. 2018, appendix C).

    ``mean`` and ``log_std`` are ``[..., A]``; ``center`` and ``half_width`` broadcast against
    them. Log-probabilities carry the change of variables, ``log p(a) = log N(u) -
    sum log(half_width (1 - tanh(u)^2))``, exactly (CleanRL adds 1e-6 inside the log instead).
    """

    mean: Array
    log_std: Array
    center: Array | float = 0.0
    half_width: Array | float = 1.0

    def squash(self, pre_tanh: Array) -> Array:
        return self.center + self.half_width * jnp.tanh(pre_tanh)

    def log_prob_pre_tanh(self, pre_tanh: Array) -> Array:
        """Log-density ``[...]`` of the squashed action ``squash(pre_tanh)``."""
        gaussian = DiagGaussian(self.mean, self.log_std).log_prob(pre_tanh)
        log_det = tanh_log_det_jacobian(pre_tanh) + jnp.log(self.half_width)
        return gaussian - jnp.sum(jnp.broadcast_to(log_det, pre_tanh.shape), axis=-1)

    def sample_and_log_prob(self, key: Key) -> tuple[Array, Array]:
        """A reparameterised sample ``[..., A]`` (gradients flow to ``mean`` and ``log_std``)
        and its log-density ``[...]``."""
        pre_tanh = DiagGaussian(self.mean, self.log_std).sample(key)
        return self.squash(pre_tanh), self.log_prob_pre_tanh(pre_tanh)

    def sample(self, key: Key) -> Array:
        return self.sample_and_log_prob(key)[0]

    def mode(self) -> Array:
        """The squashed mean (the deterministic action SAC evaluates with)."""
        return self.squash(self.mean)
