"""Flax linen networks: torsos (feature extractors) and heads (policies, values).

Every network takes observations with exactly one leading batch axis, ``[N, *obs_shape]``.
A torso maps them to features ``[N, F]``; heads map features to a distribution or a value.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from purerl.distributions import Categorical, DiagGaussian, Distribution
from purerl.envs.base import ActionSpace, Box, Discrete
from purerl.types import Array

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "swish": nn.swish}


def hidden_init() -> nn.initializers.Initializer:
    # Orthogonal init with gain sqrt(2), as in the PPO implementation study of Andrychowicz et
    # al. (2021) and Huang et al. (2022, "37 implementation details").
    return nn.initializers.orthogonal(np.sqrt(2))


class MLP(nn.Module):
    """Fully connected torso; flattens each observation first."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        x = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        act = ACTIVATIONS[self.activation]
        for size in self.hidden_sizes:
            x = act(nn.Dense(size, kernel_init=hidden_init(), bias_init=nn.initializers.zeros)(x))
        return x


class PolicyHead(nn.Module):
    """Maps features to an action distribution for ``action_space``.

    Discrete spaces get a categorical; continuous ones a diagonal Gaussian whose log standard
    deviation is a learned, state-independent parameter.
    """

    action_space: ActionSpace

    @nn.compact
    def __call__(self, features: Array) -> Distribution:
        # A small final-layer gain starts the policy near uniform (Andrychowicz et al. 2021).
        init = nn.initializers.orthogonal(0.01)
        if isinstance(self.action_space, Discrete):
            logits = nn.Dense(self.action_space.num_actions, kernel_init=init)(features)
            return Categorical(logits)
        action_dim = int(np.prod(self.action_space.shape))
        mean = nn.Dense(action_dim, kernel_init=init)(features)
        log_std = self.param("log_std", nn.initializers.zeros, (action_dim,))
        return DiagGaussian(mean, log_std)


class ValueHead(nn.Module):
    @nn.compact
    def __call__(self, features: Array) -> Array:
        return nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(features)[..., 0]


class ActorCritic(nn.Module):
    """Policy and state value.

    With ``critic_torso`` None the critic reads the actor's features (a shared torso, as for
    pixels); otherwise the two have separate torsos (the usual choice for vector observations).
    """

    action_space: ActionSpace
    actor_torso: nn.Module
    critic_torso: nn.Module | None = None

    def setup(self):
        self.policy = PolicyHead(self.action_space)
        self.value_head = ValueHead()

    def __call__(self, obs: Array) -> tuple[Distribution, Array]:
        features = self.actor_torso(obs)
        critic_features = features if self.critic_torso is None else self.critic_torso(obs)
        return self.policy(features), self.value_head(critic_features)

    def policy_dist(self, obs: Array) -> Distribution:
        """The policy alone, without computing the value."""
        return self.policy(self.actor_torso(obs))

    def critic(self, obs: Array) -> Array:
        """The value alone, without computing the policy."""
        torso = self.actor_torso if self.critic_torso is None else self.critic_torso
        return self.value_head(torso(obs))


def make_actor_critic(
    action_space: ActionSpace, hidden_sizes: Sequence[int], activation: str
) -> ActorCritic:
    """Separate MLP torsos for actor and critic."""
    if not isinstance(action_space, Discrete | Box):
        raise TypeError(f"unsupported action space {action_space}")
    return ActorCritic(
        action_space,
        actor_torso=MLP(tuple(hidden_sizes), activation),
        critic_torso=MLP(tuple(hidden_sizes), activation),
    )


class QNetwork(nn.Module):
    """Action values ``[N, num_actions]`` from a torso's features."""

    num_actions: int
    torso: nn.Module

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        return nn.Dense(self.num_actions)(self.torso(obs))


def make_q_network(
    action_space: ActionSpace, hidden_sizes: Sequence[int], activation: str
) -> QNetwork:
    """An MLP Q-network; value-based methods need a discrete action space."""
    if not isinstance(action_space, Discrete):
        raise TypeError(f"a Q-network needs discrete actions, got {action_space}")
    return QNetwork(action_space.num_actions, MLP(tuple(hidden_sizes), activation))
