"""Observations that are not one array, and the legal-action masks they may carry.

An observation is one array, or a structure of arrays: a dict, a NamedTuple or a dataclass
registered as a pytree (``flax.struct.dataclass``, ``chex.dataclass``), nested as deep as it
likes. Rollouts, replay buffers, checkpoints and policies carry the structure as it is;
networks encode each leaf and concatenate the encodings (``purerl.core.nets``).

A top-level field named ``action_mask`` (``MASK_FIELD``), bool ``[num_actions]``, marks the
actions that are legal in that state (Jumanji's observations have one). The networks then mask
their outputs (``mask_values``): an illegal action's logit or Q-value is ``ILLEGAL``, so every
sample, argmax and max over them is over legal actions, and epsilon-greedy's uniform draw reads
legality back from the values (``allowed``). A row with no legal action counts every action as
legal, so nothing divides by zero and no NaN appears. The mask is not an input to the encoder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.env import InvalidEnvError
from purerl.core.types import Array, PyTree

MASK_FIELD = "action_mask"
"""The observation field holding the legal actions, bool ``[num_actions]``."""
ILLEGAL = float(np.finfo(np.float32).min)
"""The logit or Q-value of an illegal action: finite, so log-softmax, entropy and their
gradients stay finite (``exp`` of it is 0, and ``0 * ILLEGAL`` is 0, not NaN)."""


@dataclasses.dataclass(frozen=True)
class Structure:
    """The layout of one structured observation: its tree, and each leaf's shape and dtype."""

    treedef: Any
    leaves: tuple[jax.ShapeDtypeStruct, ...]
    names: tuple[str, ...]
    """Each leaf's path, as ``jax.tree_util.keystr`` writes it (``.grid``, ``['pos']``)."""
    masked: bool
    """The observation has an ``action_mask`` field."""

    def example(self) -> PyTree:
        """The observation as a tree of ``jax.ShapeDtypeStruct``."""
        return jax.tree.unflatten(self.treedef, self.leaves)

    def describe(self) -> str:
        """``.grid 12x12x5 float32, .action_mask 4 bool``: for listings and messages."""
        return ", ".join(
            f"{name} {'x'.join(map(str, leaf.shape)) or 'scalar'} {leaf.dtype}"
            for name, leaf in zip(self.names, self.leaves, strict=True)
        )


def is_structured(obs: Any) -> bool:
    """Whether ``obs`` is a structure of arrays rather than one array."""
    return not hasattr(obs, "shape") or not hasattr(obs, "dtype")


def structure_of(obs: PyTree, num_actions: int | None, where: str) -> Structure:
    """The ``Structure`` of one (unbatched) observation ``obs`` (arrays or shape structs).

    Raises:
        InvalidEnvError: a leaf that is not a numeric or bool array (a Python object, a plain
            dataclass that is not a pytree, a PRNG key), an empty structure, or an
            ``action_mask`` that is not bool ``[num_actions]`` for a discrete action space.
    """
    flat, treedef = jax.tree_util.tree_flatten_with_path(obs)
    if not flat:
        raise InvalidEnvError(f"{where} gives an empty observation structure")
    names, leaves = [], []
    for path, leaf in flat:
        name = jax.tree_util.keystr(path)
        dtype = getattr(leaf, "dtype", None)
        if not (hasattr(leaf, "shape") and dtype is not None and encodable(dtype)):
            kind = type(leaf).__name__ if dtype is None else f"an array of {dtype}"
            raise InvalidEnvError(
                f"{where} gives observation field {name or 'obs'} as {kind}, which purerl cannot "
                "encode: use numeric or bool arrays in dicts, NamedTuples or pytree dataclasses "
                "(flax.struct.dataclass)"
            )
        names.append(name)
        leaves.append(jax.ShapeDtypeStruct(tuple(leaf.shape), np.dtype(dtype)))
    mask = action_mask(obs)
    if mask is not None and (num_actions is None or tuple(mask.shape) != (num_actions,)):
        expected = "a discrete action space" if num_actions is None else f"shape ({num_actions},)"
        raise InvalidEnvError(
            f"{where} gives an {MASK_FIELD} of shape {tuple(mask.shape)}; a mask needs "
            f"{expected}, one entry per action"
        )
    return Structure(treedef, tuple(leaves), tuple(names), mask is not None)


def encodable(dtype: Any) -> bool:
    """Numbers and bools; not PRNG keys, strings or objects."""
    if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
        return False
    return np.dtype(dtype).kind in "biuf"


def action_mask(obs: Any) -> Array | None:
    """The ``action_mask`` field of an observation (any batch shape), or None."""
    if isinstance(obs, Mapping):
        return obs.get(MASK_FIELD)
    if is_structured(obs):
        return getattr(obs, MASK_FIELD, None)
    return None


def encoder_leaves(obs: PyTree) -> list[tuple[str, Array]]:
    """Each leaf of an observation with its path, the ``action_mask`` left out: what a
    network encodes."""
    flat = jax.tree_util.tree_flatten_with_path(obs)[0]
    return [
        (jax.tree_util.keystr(path), leaf)
        for path, leaf in flat
        if not (len(path) == 1 and key_name(path[0]) == MASK_FIELD)
    ]


def key_name(entry: Any) -> Any:
    """The field or key a path entry names (``DictKey.key``, ``GetAttrKey.name``)."""
    return getattr(entry, "key", getattr(entry, "name", None))


def legal(mask: Array) -> Array:
    """``mask`` ``[..., A]`` as bool, with every action legal in rows that allow none."""
    mask = jnp.asarray(mask).astype(bool)
    return mask | ~mask.any(axis=-1, keepdims=True)


def mask_values(values: Array, mask: Array | None) -> Array:
    """Logits or Q-values ``[N, A]`` with ``ILLEGAL`` at the actions ``mask`` ``[..., A]``
    forbids (reshaped to ``[N, A]``); ``values`` unchanged when ``mask`` is None."""
    if mask is None:
        return values
    allowed_ = legal(mask).reshape(values.shape)
    return jnp.where(allowed_, values, jnp.asarray(ILLEGAL, values.dtype))


def allowed(values: Array) -> Array:
    """The actions a masked output (``mask_values``) allows: where it is not ``ILLEGAL``."""
    return values > ILLEGAL


def spec_fields(obs: PyTree, num_actions: int | None, where: str) -> dict[str, Any]:
    """The ``EnvSpec`` fields that describe observations like ``obs`` (unbatched): shape and
    dtype of one array, or the ``Structure`` of a structured one."""
    if not is_structured(obs):
        return {"obs_shape": tuple(obs.shape), "obs_dtype": np.dtype(obs.dtype).name}
    structure = structure_of(obs, num_actions, where)
    return {"obs_shape": (), "obs_dtype": "structured", "structure": structure}
