"""Flax linen networks: torsos (feature extractors) and heads (policies, values).

Every network takes observations with exactly one leading batch axis, ``[N, *obs_shape]``.
A torso maps them to features ``[N, F]``; heads map features to a distribution or a value.
The torso follows ``network``: purerl's own (``mlp``: stacked uint8 frames ``[C, H, W]``, as
Atari's, get the Nature CNN; a structured observation (``core/observations.py``) has each leaf
encoded and the encodings concatenated before the MLP (``StructuredTorso``); everything else an
MLP; ``gru`` and ``lstm`` add a recurrent cell) or the user's flax module, of which every
network that needs a torso gets a copy with its own parameters (``make_torso``). Where
observations carry an ``action_mask``, policy and Q heads mask illegal actions. ``dtype`` is the
compute precision; parameters and everything a head returns stay float32, so losses are
computed in float32 either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import RECURRENT
from purerl.core.distributions import Categorical, DiagGaussian, Distribution, SquashedGaussian
from purerl.core.env import ActionSpace, Box, Discrete, EnvSpec, InvalidEnvError
from purerl.core.observations import action_mask, encoder_leaves, mask_values
from purerl.core.ops.conv import conv2d
from purerl.core.types import Array

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "swish": nn.swish}
PRECISIONS = {"fp32": jnp.float32, "bf16": jnp.bfloat16}
"""``--precision`` choices: the dtype networks compute in."""


def orthogonal(scale: float) -> nn.initializers.Initializer:
    """Flax's orthogonal initializer, run one matrix at a time when vmapped over seeds.

    Vmapped, the QR factorisation behind it becomes one batched LAPACK call that waits for
    helper tasks on XLA's CPU thread pool; two such calls running at once can hold every
    thread of a small pool and deadlock (seen with 2 seeds of the Nature CNN on 2 cores).
    ``sequential_vmap`` turns the batch into a loop of single QRs, which never wait on the
    pool; the values are the same as initialising each seed alone.
    """
    base = nn.initializers.orthogonal(scale)

    def init(key, shape, dtype=jnp.float32):
        return jax.custom_batching.sequential_vmap(lambda k: base(k, shape, dtype))(key)

    return init


def hidden_init() -> nn.initializers.Initializer:
    # Orthogonal init with gain sqrt(2), as in the PPO implementation study of Andrychowicz et
    # al. (2021) and Huang et al. (2022, "37 implementation details").
    return orthogonal(np.sqrt(2))


class MLP(nn.Module):
    """Fully connected torso; flattens each observation first."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    dtype: Any = jnp.float32
    layer_norm: bool = False
    """Normalise each hidden layer's pre-activations (LayerNorm, as PQN's networks do)."""
    orthogonal_init: bool = True
    """Orthogonal hidden weights (gain sqrt 2); False keeps flax's default (LeCun normal)."""

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        x = obs.reshape(obs.shape[0], -1).astype(self.dtype)
        act = ACTIVATIONS[self.activation]
        init = hidden_init() if self.orthogonal_init else nn.linear.default_kernel_init
        for size in self.hidden_sizes:
            x = nn.Dense(size, kernel_init=init, dtype=self.dtype)(x)
            if self.layer_norm:
                x = nn.LayerNorm(dtype=self.dtype)(x)
            x = act(x)
        return x


class Conv(nn.Module):
    """A ``VALID`` square convolution plus bias on ``[N, H, W, C]``, with the parameters of
    ``nn.Conv`` (``kernel [k, k, C_in, C_out]``, ``bias``); it computes with ``ops.conv.conv2d``,
    whose gradients stay fast inside XLA:CPU loops."""

    features: int
    size: int
    stride: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: Array) -> Array:
        shape = (self.size, self.size, x.shape[-1], self.features)
        kernel = self.param("kernel", hidden_init(), shape)
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        y = conv2d(x.astype(self.dtype), kernel.astype(self.dtype), self.stride)
        return y + bias.astype(self.dtype)


class NatureCNN(nn.Module):
    """The convolutional torso of Mnih et al. (2015, Methods): 32 8x8/4, 64 4x4/2, 64 3x3/1
    convolutions and a 512-unit layer, all ReLU.

    Takes uint8 frames ``[N, C, H, W]`` (EnvPool's channel-first stacks) and scales them to
    [0, 1] here, so rollouts and replay buffers keep the 4x smaller uint8. With ``layer_norm``
    each layer's pre-activations are normalised over all of its outputs (a whole feature map
    for a convolution), as in PQN's Atari network.
    """

    dtype: Any = jnp.float32
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        x = jnp.transpose(obs, (0, 2, 3, 1)).astype(self.dtype) / 255.0
        for features, size, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
            x = nn.relu(self.norm(Conv(features, size, stride, self.dtype)(x), (-3, -2, -1)))
        x = x.reshape(x.shape[0], -1)
        x = nn.Dense(512, kernel_init=hidden_init(), dtype=self.dtype)(x)
        return nn.relu(self.norm(x, (-1,)))

    def norm(self, x: Array, axes: tuple[int, ...]) -> Array:
        if not self.layer_norm:
            return x
        return nn.LayerNorm(reduction_axes=axes, feature_axes=axes, dtype=self.dtype)(x)


class GridCNN(nn.Module):
    """A small convolutional torso for grids ``[N, H, W, C]`` (channels last, as Jumanji's and
    XLand-MiniGrid's): two 3x3 ``VALID`` convolutions of 16 and 32 channels, ReLU, flattened."""

    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, grid: Array) -> Array:
        x = grid.astype(self.dtype)
        for features in (16, 32):
            x = nn.relu(Conv(features, 3, 1, self.dtype)(x))
        return x.reshape(x.shape[0], -1)


GRID_MIN_SIZE = 5
"""Height and width from which a rank-3 leaf is a grid for ``GridCNN`` (two 3x3 convolutions
leave it at least 1x1); smaller ones are flattened."""


def leaf_encoder(leaf: Array, dtype: Any, layer_norm: bool) -> nn.Module | None:
    """How ``StructuredTorso`` encodes one leaf ``[N, ...]``: the Nature CNN for stacked uint8
    frames ``[C, H, W]``, ``GridCNN`` for other rank-3 leaves of at least ``GRID_MIN_SIZE``
    squares ``[H, W, C]``, None (flattened) for the rest."""
    shape = leaf.shape[1:]
    if len(shape) != 3:
        return None
    if leaf.dtype == jnp.uint8 and shape[1] >= 36:
        return NatureCNN(dtype, layer_norm)
    return GridCNN(dtype) if min(shape[:2]) >= GRID_MIN_SIZE else None


class StructuredTorso(nn.Module):
    """The torso of structured observations (dicts, NamedTuples, pytree dataclasses): each leaf
    but the ``action_mask`` encoded (``leaf_encoder``: images and grids through convolutions,
    the rest flattened), the encodings concatenated in the tree's order, then an MLP."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    dtype: Any = jnp.float32
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: Any) -> Array:
        parts = []
        for _, leaf in encoder_leaves(obs):
            encoder = leaf_encoder(leaf, self.dtype, self.layer_norm)
            x = leaf.reshape(leaf.shape[0], -1) if encoder is None else encoder(leaf)
            parts.append(x.astype(self.dtype))
        mlp = MLP(tuple(self.hidden_sizes), self.activation, self.dtype, self.layer_norm)
        return mlp(jnp.concatenate(parts, axis=-1))


def action_range(space: Box) -> tuple[np.ndarray, np.ndarray]:
    """Middle and half-width of each bounded dimension of ``space`` (0 and 1 where a bound is
    infinite), flat float32 arrays."""
    low, high = np.asarray(space.low, np.float64), np.asarray(space.high, np.float64)
    bounded = np.isfinite(low) & np.isfinite(high) & (high > low)
    low, high = np.where(bounded, low, -1.0), np.where(bounded, high, 1.0)
    center, half_width = (high + low) / 2, (high - low) / 2
    return center.astype(np.float32), half_width.astype(np.float32)


class PolicyHead(nn.Module):
    """Maps features to an action distribution for ``action_space``.

    Discrete spaces get a categorical; continuous ones a diagonal Gaussian whose log standard
    deviation is a learned, state-independent parameter. The Gaussian works in units of the
    action range: the network's output 0 is the middle of the bounds and 1 half their width, and
    the standard deviation scales alike. A policy then reaches the bounds as readily on
    Pendulum's [-2, 2] as on [-1, 1] (where nothing changes).
    """

    action_space: ActionSpace

    @nn.compact
    def __call__(self, features: Array, mask: Array | None = None) -> Distribution:
        """The distribution at ``features`` ``[N, F]``; ``mask`` (discrete actions, ``[..., A]``
        reshaped to ``[N, A]``) leaves only legal actions their probability."""
        # A small final-layer gain starts the policy near uniform (Andrychowicz et al. 2021).
        init = orthogonal(0.01)
        dtype = features.dtype
        if isinstance(self.action_space, Discrete):
            logits = nn.Dense(self.action_space.num_actions, kernel_init=init, dtype=dtype)
            return Categorical(mask_values(logits(features).astype(jnp.float32), mask))
        action_dim = int(np.prod(self.action_space.shape))
        center, half_width = action_range(self.action_space)
        mean = nn.Dense(action_dim, kernel_init=init, dtype=dtype)(features)
        log_std = self.param("log_std", nn.initializers.zeros, (action_dim,))
        return DiagGaussian(
            center + half_width * mean.astype(jnp.float32), log_std + np.log(half_width)
        )


class ValueHead(nn.Module):
    @nn.compact
    def __call__(self, features: Array) -> Array:
        dense = nn.Dense(1, kernel_init=orthogonal(1.0), dtype=features.dtype)
        return dense(features)[..., 0].astype(jnp.float32)


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
        return self.policy(features, action_mask(obs)), self.value_head(critic_features)

    def critic(self, obs: Array) -> Array:
        """The value alone, without computing the policy."""
        torso = self.actor_torso if self.critic_torso is None else self.critic_torso
        return self.value_head(torso(obs))


Torso = str | nn.Module
"""``network``: one of purerl's torsos by name (``mlp``; ``gru`` or ``lstm``, a flax GRU cell or
its LSTM cell, in ``RECURRENT``), or the user's module mapping observations to features."""


def initial_hidden(kind: str, size: int, batch: int) -> Any:
    """A recurrent cell's state at the start of an episode: zeros, ``[batch, size]`` (a GRU's
    hidden state) or a pair of them (an LSTM's cell and hidden states)."""
    zeros = jnp.zeros((batch, size), jnp.float32)
    return (zeros, zeros) if kind == "lstm" else zeros


def reset_hidden(hidden: Any, start: Array) -> Any:
    """``hidden`` ``[N, ...]`` back at its initial value where ``start`` ``[N]`` is set."""
    return jax.tree.map(lambda h: jnp.where(start[:, None], jnp.zeros_like(h), h), hidden)


class ResettingCell(nn.Module):
    """One step of a recurrent cell over a batch, reset first where an episode starts:
    ``(hidden [N, ...], (inputs [N, F], start [N])) -> (hidden, outputs [N, size])``."""

    kind: str
    size: int

    @nn.compact
    def __call__(self, hidden: Any, inputs: tuple[Array, Array]) -> tuple[Any, Array]:
        x, start = inputs
        hidden = reset_hidden(hidden, start)
        # purerl's orthogonal initialiser (flax's values, safe under vmap over seeds).
        cls = nn.GRUCell if self.kind == "gru" else nn.OptimizedLSTMCell
        cell = cls(self.size, recurrent_kernel_init=orthogonal(1.0), name="cell")
        return cell(hidden, x.astype(jnp.float32))


class RecurrentTorso(nn.Module):
    """A feed-forward torso (``embed``: MLP or Nature CNN) applied to every step at once, then a
    recurrent cell run along time: observations ``[L, N, *obs_shape]`` and episode starts
    ``[L, N]`` from the cell's state ``hidden`` ``[N, ...]`` to the final state and features
    ``[L * N, size]`` (time-major). The cell resets to its initial state at each episode start,
    so one sequence can span several episodes."""

    kind: str
    size: int
    embed: nn.Module

    @nn.compact
    def __call__(self, hidden: Any, obs: Array, start: Array) -> tuple[Any, Array]:
        steps, batch = start.shape
        x = self.embed(jax.tree.map(lambda o: o.reshape((steps * batch,) + o.shape[2:]), obs))
        scan = nn.scan(
            ResettingCell,
            variable_broadcast="params",
            split_rngs={"params": False},
            in_axes=0,
            out_axes=0,
        )
        hidden, features = scan(self.kind, self.size, name="rnn")(
            hidden, (x.reshape(steps, batch, -1), start)
        )
        return hidden, features.reshape(steps * batch, -1)


class RecurrentActorCritic(nn.Module):
    """Policy and state value over one shared recurrent torso. Every method takes the cell's
    state ``[N, ...]``, observations ``[L, N, ...]`` and episode starts ``[L, N]`` and returns the
    cell's final state first; outputs are flat over ``L * N`` (time-major)."""

    action_space: ActionSpace
    torso: RecurrentTorso

    def setup(self):
        self.policy = PolicyHead(self.action_space)
        self.value_head = ValueHead()

    def __call__(self, hidden: Any, obs: Array, start: Array) -> tuple[Any, Distribution, Array]:
        hidden, features = self.torso(hidden, obs, start)
        return hidden, self.policy(features, action_mask(obs)), self.value_head(features)


class QNetwork(nn.Module):
    """Action values ``[N, num_actions]`` (float32) from a torso's features; ``ILLEGAL`` at the
    actions an observation's ``action_mask`` forbids."""

    num_actions: int
    torso: nn.Module

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        features = self.torso(obs)
        q_values = nn.Dense(self.num_actions, dtype=features.dtype)(features)
        return mask_values(q_values.astype(jnp.float32), action_mask(obs))


class RecurrentQNetwork(nn.Module):
    """Action values ``[L * N, num_actions]`` over a recurrent torso (see
    ``RecurrentActorCritic`` for the arguments); returns the cell's final state first."""

    num_actions: int
    torso: RecurrentTorso

    @nn.compact
    def __call__(self, hidden: Any, obs: Array, start: Array) -> tuple[Any, Array]:
        hidden, features = self.torso(hidden, obs, start)
        q_values = nn.Dense(self.num_actions, dtype=features.dtype)(features)
        return hidden, mask_values(q_values.astype(jnp.float32), action_mask(obs))


def is_pixels(spec: EnvSpec) -> bool:
    """Stacked uint8 frames ``[C, H, W]``, the Nature CNN's input."""
    return spec.obs_dtype == "uint8" and len(spec.obs_shape) == 3 and spec.obs_shape[1] >= 36


def make_torso(
    spec: EnvSpec,
    hidden_sizes: Sequence[int],
    activation: str,
    precision: str,
    layer_norm: bool = False,
    network: Torso = "mlp",
) -> nn.Module:
    """A feed-forward torso: a fresh copy of the user's module ``network`` (so that each network
    using it has its own parameters); for ``mlp`` the Nature CNN for pixels, a
    ``StructuredTorso`` for structured observations, else an MLP of ``hidden_sizes``."""
    if isinstance(network, nn.Module):
        return network.clone()
    if network != "mlp":
        raise ValueError(
            f"network {network!r} names a torso of yours: build with its module (AlgoSpec.make "
            "finds it)"
        )
    dtype = PRECISIONS[precision]
    if spec.structure is not None:
        return StructuredTorso(tuple(hidden_sizes), activation, dtype, layer_norm)
    if is_pixels(spec):
        return NatureCNN(dtype, layer_norm)
    return MLP(tuple(hidden_sizes), activation, dtype, layer_norm)


def make_recurrent_torso(
    spec: EnvSpec,
    hidden_sizes: Sequence[int],
    activation: str,
    precision: str,
    layer_norm: bool,
    network: str,
    rnn_size: int,
) -> RecurrentTorso:
    """``make_torso``'s torso, then a ``network`` cell (``gru`` or ``lstm``) of ``rnn_size``."""
    if network not in RECURRENT:
        raise ValueError(f"network must be mlp or one of {RECURRENT}, got {network!r}")
    embed = make_torso(spec, hidden_sizes, activation, precision, layer_norm)
    return RecurrentTorso(network, rnn_size, embed)


def make_actor_critic(
    spec: EnvSpec,
    hidden_sizes: Sequence[int],
    activation: str,
    precision: str = "fp32",
    layer_norm: bool = False,
    network: Torso = "mlp",
    rnn_size: int = 128,
) -> ActorCritic | RecurrentActorCritic:
    """Separate torsos for actor and critic (MLPs, or copies of the user's module), or one
    shared CNN torso for pixels; with a recurrent ``network``, one shared recurrent torso
    (``make_recurrent_torso``)."""
    if not isinstance(spec.action_space, Discrete | Box):
        raise TypeError(f"unsupported action space {spec.action_space}")
    if spec.masked and not spec.discrete:
        raise InvalidEnvError(f"{spec.id}: an action_mask needs a discrete action space")
    if isinstance(network, str) and network in RECURRENT:
        torso = make_recurrent_torso(
            spec, hidden_sizes, activation, precision, layer_norm, network, rnn_size
        )
        return RecurrentActorCritic(spec.action_space, torso)

    def torso():
        return make_torso(spec, hidden_sizes, activation, precision, layer_norm, network)

    actor = torso()
    shared = is_pixels(spec) and not isinstance(network, nn.Module)
    return ActorCritic(
        spec.action_space, actor_torso=actor, critic_torso=None if shared else torso()
    )


def make_q_network(
    spec: EnvSpec,
    hidden_sizes: Sequence[int],
    activation: str,
    precision: str = "fp32",
    layer_norm: bool = False,
    network: Torso = "mlp",
    rnn_size: int = 128,
) -> QNetwork | RecurrentQNetwork:
    """A Q-network (recurrent for a recurrent ``network``); value-based methods need a discrete
    action space."""
    if not isinstance(spec.action_space, Discrete):
        raise TypeError(f"a Q-network needs discrete actions, got {spec.action_space}")
    if isinstance(network, str) and network in RECURRENT:
        torso = make_recurrent_torso(
            spec, hidden_sizes, activation, precision, layer_norm, network, rnn_size
        )
        return RecurrentQNetwork(spec.action_space.num_actions, torso)
    torso = make_torso(spec, hidden_sizes, activation, precision, layer_norm, network)
    return QNetwork(spec.action_space.num_actions, torso)


LOG_STD_BOUNDS = (-5.0, 2.0)
"""Range of the squashed Gaussian's log standard deviation (CleanRL's sac_continuous_action)."""


def box_dim(spec: EnvSpec) -> int:
    """Flat action dimension of a continuous (Box) action space."""
    if not isinstance(spec.action_space, Box):
        raise TypeError(
            f"continuous-action networks need a Box action space, got {spec.action_space}"
        )
    return int(np.prod(spec.action_space.shape))


class SquashedGaussianActor(nn.Module):
    """SAC's policy: an MLP torso, then a mean and a state-dependent log standard deviation,
    squashed by tanh into the action bounds. The log std passes through tanh and is rescaled to
    ``LOG_STD_BOUNDS`` (CleanRL's sac_continuous_action, after Haarnoja et al.'s reference)."""

    action_space: Box
    torso: nn.Module

    @nn.compact
    def __call__(self, obs: Array) -> SquashedGaussian:
        features = self.torso(obs)
        action_dim = int(np.prod(self.action_space.shape))
        mean = nn.Dense(action_dim, dtype=features.dtype)(features).astype(jnp.float32)
        log_std = jnp.tanh(nn.Dense(action_dim, dtype=features.dtype)(features).astype(jnp.float32))
        low, high = LOG_STD_BOUNDS
        log_std = low + 0.5 * (high - low) * (log_std + 1.0)
        center, half_width = action_range(self.action_space)
        return SquashedGaussian(mean, log_std, center, half_width)


class DeterministicActor(nn.Module):
    """TD3's policy: an MLP torso and a tanh output scaled into the action bounds."""

    action_space: Box
    torso: nn.Module

    @nn.compact
    def __call__(self, obs: Array) -> Array:
        features = self.torso(obs)
        action_dim = int(np.prod(self.action_space.shape))
        out = nn.Dense(action_dim, dtype=features.dtype)(features).astype(jnp.float32)
        center, half_width = action_range(self.action_space)
        return center + half_width * jnp.tanh(out)


class Critic(nn.Module):
    """``Q(s, a)`` ``[N]`` from an MLP over the concatenated observation (or a torso's features
    of it) and action."""

    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    dtype: Any = jnp.float32
    torso: nn.Module | None = None
    """The user's torso, reading the observation before the action joins it (None: the
    observation as it is, flattened)."""

    @nn.compact
    def __call__(self, obs: Array, action: Array) -> Array:
        x = obs.reshape(obs.shape[0], -1) if self.torso is None else self.torso(obs)
        x = jnp.concatenate([x, action.astype(jnp.float32)], axis=-1)
        # Flax's default init, as CleanRL and sbx keep their frameworks' defaults (orthogonal
        # init, a QR per matrix, would also sit under two vmaps here: seeds and critics).
        mlp = MLP(tuple(self.hidden_sizes), self.activation, self.dtype, orthogonal_init=False)
        features = mlp(x)
        return nn.Dense(1, dtype=self.dtype)(features)[..., 0].astype(jnp.float32)


class Critics(nn.Module):
    """An ensemble of ``num_critics`` independent critics (twin critics for 2), evaluated in one
    vmapped pass: ``Q_e(s, a)`` ``[E, N]``. Parameters carry a leading ``[E]`` axis (a ``torso``'s
    too: each critic has its own)."""

    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    dtype: Any = jnp.float32
    num_critics: int = 2
    torso: nn.Module | None = None
    """The user's torso (``Critic.torso``), its parameters one copy per critic."""

    @nn.compact
    def __call__(self, obs: Array, action: Array) -> Array:
        ensemble = nn.vmap(
            Critic,
            variable_axes={"params": 0},
            split_rngs={"params": True},
            in_axes=None,
            axis_size=self.num_critics,
        )
        critic = ensemble(tuple(self.hidden_sizes), self.activation, self.dtype, self.torso)
        return critic(obs, action)


def make_continuous_nets(
    spec: EnvSpec,
    hidden_sizes: Sequence[int],
    activation: str,
    precision: str = "fp32",
    stochastic: bool = True,
    network: Torso = "mlp",
) -> tuple[nn.Module, Critics]:
    """An actor (squashed Gaussian when ``stochastic``, else deterministic) and twin critics,
    each with its own MLP of ``hidden_sizes``, all with flax's default initialisation. With the
    user's module as ``network``, the actor's torso and each critic's, before its MLP, are
    copies of it; purerl's own (``mlp``) take vector observations only."""
    box_dim(spec)
    dtype = PRECISIONS[precision]
    actor_cls = SquashedGaussianActor if stochastic else DeterministicActor
    if isinstance(network, nn.Module):
        critics = Critics(tuple(hidden_sizes), activation, dtype, torso=network.clone())
        return actor_cls(spec.action_space, network.clone()), critics
    if network != "mlp":
        raise ValueError(f"continuous-action networks take mlp or a module, got {network!r}")
    if is_pixels(spec):
        raise TypeError("continuous-action networks take vector observations, not pixels")
    if spec.structure is not None:
        raise InvalidEnvError(
            f"{spec.id}: continuous-action networks take one vector observation, not a "
            f"structure ({spec.structure.describe()})"
        )
    torso = MLP(tuple(hidden_sizes), activation, dtype, orthogonal_init=False)
    return actor_cls(spec.action_space, torso), Critics(tuple(hidden_sizes), activation, dtype)
