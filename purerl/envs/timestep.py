"""Adapter from timestep-style JAX environments: Jumanji, XLand-MiniGrid and your own.

These suites return a *timestep* from ``reset`` and ``step`` rather than gymnax's tuple: its
``observation``, ``reward``, ``discount`` and ``step_type`` (2, dm_env's ``StepType.LAST``, on an
episode's last step). One adapter, ``TimestepEnv``, serves them all; each suite supplies only how
to call its ``reset`` and ``step`` and how it draws a frame (a ``Suite``):

- Jumanji (``jumanji/<Name>``, ``pip install 'purerl[jumanji]'``): ``reset(key) -> (state,
  timestep)``, ``step(state, action) -> (state, timestep)``; frames from the environment's own
  matplotlib viewer.
- XLand-MiniGrid (``xminigrid/<Name>``, ``pip install 'purerl[xminigrid]'``): ``reset(params,
  key) -> timestep``, ``step(params, timestep, action) -> timestep``, the timestep holding the
  state; frames from its RGB renderer.
- Navix (``navix/<Name>``, ``pip install 'purerl[navix]'``; its releases after 0.7.4 need
  Python 3.12, so Python 3.11 gets 0.7.4): ``reset(key) -> timestep``, ``step(timestep, action)
  -> timestep``, whose ``step_type`` is 1 on a truncation and 2 on a termination and which has
  no discount (``navix_view`` gives the adapter dm_env's terms); frames from its RGB renderer.
- your own environment of Jumanji's interface (``--env module:factory``, or an object): an
  object with ``reset``, ``step`` and ``action_spec.num_values``; it needs no Jumanji installed.

An episode's last step is a termination where its discount is 0, a truncation (bootstrapped
from ``final_obs``) where it is not, as both suites mark time limits. Keys reach the suite as
raw ``uint32`` key data (``jax.random.key_data``), the keys these suites were written for.
``envs.make`` adds ``AutoReset``: a finished episode is replaced by a fresh ``reset`` in the
same step. The whole state is a pytree of arrays, so it is checkpointed and a resumed run
continues bit for bit.

Actions: a discrete space of ``num_values`` actions, or a multi-discrete one (``num_values`` an
array) flattened into one discrete space of their product (row-major, ``jnp.unravel_index``
back), where its ``action_mask`` is the joint one (``num_values``'s shape) or absent; per-agent
masks (Connector, Cleaner, ...) and continuous actions are refused in one line. Observations
come as the suite gives them (Jumanji's NamedTuples; ``core/observations.py``); a multi-discrete
mask is flattened alongside the actions.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.env import Discrete, EnvSpec, InvalidEnvError, Step, no_episodes
from purerl.core.observations import MASK_FIELD, action_mask, spec_fields
from purerl.core.types import Array, Key

JUMANJI_PREFIX = "jumanji/"
XMINIGRID_PREFIX = "xminigrid/"
NAVIX_PREFIX = "navix/"
JUMANJI_ENVS = (
    "BinPack-v2", "CVRP-v1", "Cleaner-v0", "Connector-v3", "FlatPack-v0", "Game2048-v1",
    "GraphColoring-v1", "JobShop-v0", "Knapsack-v1", "LevelBasedForaging-v0", "MMST-v0",
    "Maze-v0", "Minesweeper-v0", "MultiCVRP-v0", "PacMan-v1", "RobotWarehouse-v0",
    "RubiksCube-partly-scrambled-v0", "RubiksCube-v0", "SearchAndRescue-v0",
    "SlidingTilePuzzle-v0", "Snake-v1", "Sokoban-v0", "Sudoku-v0", "Sudoku-very-easy-v0",
    "TSP-v1", "Tetris-v0",
)  # fmt: skip
"""``jumanji.registered_environments()`` of Jumanji 1.1.2, listed so ids resolve without it."""
XMINIGRID_ENVS = (
    *(f"XLand-MiniGrid-R{r}-{n}x{n}" for r in (1, 2, 4) for n in (9, 11, 13, 15, 17)),
    *(f"XLand-MiniGrid-R6-{n}x{n}" for n in (13, 17, 19)),
    *(f"XLand-MiniGrid-R9-{n}x{n}" for n in (16, 19, 25)),
    "MiniGrid-BlockedUnlockPickUp",
    *(f"MiniGrid-DoorKey-{n}x{n}" for n in (5, 6, 8, 16)),
    *(f"MiniGrid-Empty-{n}x{n}" for n in (5, 6, 8, 16)),
    *(f"MiniGrid-EmptyRandom-{n}x{n}" for n in (5, 6, 8, 16)),
    "MiniGrid-FourRooms", "MiniGrid-LockedRoom",
    *(f"MiniGrid-MemoryS{n}" for n in (8, 16, 32, 64, 128)),
    "MiniGrid-Playground", "MiniGrid-Unlock", "MiniGrid-UnlockPickUp",
)  # fmt: skip
"""``xminigrid.registered_environments()`` of XLand-MiniGrid 0.9.3 (the ``XLand-MiniGrid-R*``
ones run with their default, empty ruleset: pass benchmark rulesets through your own factory)."""
NAVIX_ENVS = (
    "Navix-DistShift1-v0", "Navix-DistShift2-v0",
    *(f"Navix-DoorKey-{n}x{n}-v0" for n in (5, 6, 8, 16)),
    *(f"Navix-DoorKey-Random-{n}x{n}-v0" for n in (5, 6, 8, 16)),
    "Navix-Dynamic-Obstacles-16x16-v0", "Navix-Dynamic-Obstacles-5x5-Random-v0",
    "Navix-Dynamic-Obstacles-5x5-v0", "Navix-Dynamic-Obstacles-6x6-Random-v0",
    "Navix-Dynamic-Obstacles-6x6-v0", "Navix-Dynamic-Obstacles-8x8-v0",
    *(f"Navix-Empty-{n}x{n}-v0" for n in (5, 6, 8, 16)),
    *(f"Navix-Empty-Random-{n}x{n}-v0" for n in (5, 6, 8, 16)),
    "Navix-FourRooms-v0",
    *(f"Navix-GoToDoor-{n}x{n}-v0" for n in (5, 6, 8)),
    *(f"Navix-KeyCorridorS{s}R{r}-v0" for s, r in ((3, 1), (3, 2), (3, 3), (4, 3), (5, 3), (6, 3))),
    *(f"Navix-LavaGapS{n}-v0" for n in (5, 6, 7)),
    "Navix-SimpleCrossingS11N5-v0",
    *(f"Navix-SimpleCrossingS9N{n}-v0" for n in (1, 2, 3)),
)  # fmt: skip
"""``navix.registry()`` of Navix 0.7.4 (the last release for Python 3.11)."""
NAVIX_TRUNCATION, NAVIX_TERMINATION = 1, 2
"""Navix's ``step_type`` of an episode's last step, cut by its time limit or ended."""
LAST = 2
"""``step_type`` of an episode's last step (dm_env's, Jumanji's and XLand-MiniGrid's LAST)."""
FIGURE_INCHES = (3.0, 3.0)
"""Size of Jumanji's matplotlib figures for video frames (300x300 pixels at 100 dpi)."""


class Suite(NamedTuple):
    """How to drive one suite: ``reset(env, params, key_data) -> (state, timestep)``,
    ``step(env, params, state, action) -> (state, timestep)``, and ``frame(env, params, state)``,
    an RGB frame ``[H, W, 3]`` uint8 or None."""

    reset: Callable[[Any, Any, Array], tuple[Any, Any]]
    step: Callable[[Any, Any, Any, Array], tuple[Any, Any]]
    frame: Callable[[Any, Any, Any], np.ndarray | None]


def jumanji_reset(env: Any, params: Any, key: Array) -> tuple[Any, Any]:
    return env.reset(key)


def jumanji_step(env: Any, params: Any, state: Any, action: Array) -> tuple[Any, Any]:
    return env.step(state, action)


def jumanji_frame(env: Any, params: Any, state: Any) -> np.ndarray | None:
    """A frame from the environment's own matplotlib viewer, switched to RGB arrays."""
    from jumanji.viewer import MatplotlibViewer

    viewer = getattr(env.unwrapped, "_viewer", None)
    if not isinstance(viewer, MatplotlibViewer):
        return None
    if viewer._display != viewer._display_rgb_array:
        viewer.figure_size = FIGURE_INCHES
        viewer._display = viewer._display_rgb_array
    state = jax.tree.map(jnp.asarray, state)  # the viewers index with .at[]: JAX arrays
    with warnings.catch_warnings():  # showing a figure on a non-interactive backend
        warnings.simplefilter("ignore", UserWarning)
        # A copy: the viewer's buffer is its canvas, which the next frame draws over.
        return np.array(viewer.render(state)[..., :3])


def xminigrid_reset(env: Any, params: Any, key: Array) -> tuple[Any, Any]:
    timestep = env.reset(params, key)
    return timestep, timestep


def xminigrid_step(env: Any, params: Any, state: Any, action: Array) -> tuple[Any, Any]:
    timestep = env.step(params, state, action)
    return timestep, timestep


def xminigrid_frame(env: Any, params: Any, state: Any) -> np.ndarray:
    return np.asarray(env.render(params, state))


class NavixView(NamedTuple):
    """A Navix timestep in dm_env's terms, as the adapter reads them."""

    observation: Any
    reward: Array
    discount: Array
    step_type: Array


def navix_view(timestep: Any) -> NavixView:
    kind = jnp.asarray(timestep.step_type)
    return NavixView(
        observation=timestep.observation,
        reward=timestep.reward,
        discount=jnp.where(kind == NAVIX_TERMINATION, 0.0, 1.0),
        step_type=jnp.where(kind > 0, LAST, 1),
    )


def navix_reset(env: Any, params: Any, key: Array) -> tuple[Any, Any]:
    timestep = env.reset(key)
    return timestep, navix_view(timestep)


def navix_step(env: Any, params: Any, state: Any, action: Array) -> tuple[Any, Any]:
    # Navix's ``step`` first resets a finished episode (a ``lax.cond``, which under ``vmap``
    # computes the reset on every step); ``AutoReset`` resets here, so the transition alone.
    timestep = env._step(state, action)
    return timestep, navix_view(timestep)


def navix_frame(env: Any, params: Any, state: Any) -> np.ndarray:
    """The whole grid as Navix draws it (``navix.observations.rgb``)."""
    import navix

    state = jax.tree.map(jnp.asarray, state)  # it draws with .at[]: JAX arrays
    return np.asarray(navix.observations.rgb(state.state))


def own_frame(env: Any, params: Any, state: Any) -> np.ndarray | None:
    """Your environment's ``render(state)``, where it returns an RGB array."""
    frame = env.render(state) if callable(getattr(env, "render", None)) else None
    return None if frame is None else np.asarray(frame)


JUMANJI = Suite(jumanji_reset, jumanji_step, jumanji_frame)
XMINIGRID = Suite(xminigrid_reset, xminigrid_step, xminigrid_frame)
NAVIX = Suite(navix_reset, navix_step, navix_frame)
OWN = Suite(jumanji_reset, jumanji_step, own_frame)


@dataclasses.dataclass(frozen=True, eq=False)
class TimestepEnv:
    """One timestep-style environment; ``step`` does not reset (``envs.make`` adds
    ``AutoReset``). ``action_shape`` holds a multi-discrete space's sizes, whose product is the
    discrete space purerl acts in; ``()`` for a discrete one."""

    env: Any
    params: Any
    spec: EnvSpec | None
    suite: Suite
    action_shape: tuple[int, ...] = ()
    pure: bool = True

    @property
    def default_params(self) -> Any:
        return self.params

    def reset(self, key: Key, params: Any) -> tuple[Any, Any]:
        state, timestep = self.suite.reset(self.env, params, jax.random.key_data(key))
        return state, self.observation(timestep.observation)

    def step(self, key: Key, state: Any, action: Array, params: Any) -> tuple[Any, Step]:
        state, timestep = self.suite.step(self.env, params, state, self.suite_action(action))
        last = jnp.asarray(timestep.step_type) == LAST
        terminated = last & (jnp.asarray(timestep.discount) == 0)
        reward = jnp.asarray(timestep.reward, jnp.float32)
        obs = self.observation(timestep.observation)
        return state, Step(
            obs=obs,
            reward=reward,
            terminated=terminated,
            truncated=last & ~terminated,
            final_obs=obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )

    def render(self, state: Any) -> np.ndarray | None:
        """The suite's own frame of ``state`` (one environment's), or None."""
        return self.suite.frame(self.env, self.params, state)

    def suite_action(self, action: Array) -> Array:
        if not self.action_shape:
            return action
        return jnp.stack(jnp.unravel_index(action, self.action_shape)).astype(jnp.int32)

    def observation(self, obs: Any) -> Any:
        """The suite's observation, a multi-discrete space's joint mask flattened."""
        mask = action_mask(obs)
        if not self.action_shape or mask is None:
            return obs
        return with_field(obs, MASK_FIELD, mask.reshape(-1))


def with_field(obs: Any, name: str, value: Any) -> Any:
    """``obs`` (a dict, NamedTuple or pytree dataclass) with field ``name`` replaced."""
    if isinstance(obs, Mapping):
        return {**obs, name: value}
    if hasattr(obs, "_replace"):
        return obs._replace(**{name: value})
    return dataclasses.replace(obs, **{name: value})


def action_sizes(env_id: str, spec: Any) -> tuple[int, ...]:
    """``(n,)`` of a discrete action spec, the sizes of a multi-discrete one (anything with
    ``num_values``, as Jumanji's ``DiscreteArray`` and ``MultiDiscreteArray``).

    Raises:
        InvalidEnvError: a spec without ``num_values`` (continuous, or not a spec).
    """
    sizes = getattr(spec, "num_values", None)
    if sizes is None:
        raise InvalidEnvError(
            f"{env_id}: actions are {type(spec).__name__}, not a discrete or multi-discrete space "
            "(an action_spec with num_values); purerl drives these suites' discrete actions"
        )
    return tuple(int(n) for n in np.ravel(np.asarray(sizes)))


def adapt_timestep(
    env: Any, params: Any, env_id: str, suite: Suite, sizes: tuple[int, ...], multi: bool
) -> TimestepEnv:
    """``env`` as a ``TimestepEnv`` acting in ``prod(sizes)`` actions (``multi``: a
    multi-discrete space of ``sizes``), checked by tracing ``reset`` and ``step`` (nothing runs).

    Raises:
        InvalidEnvError: a function that fails when traced, a timestep without its fields, a
            multi-discrete mask that is not joint, or observations purerl cannot encode.
    """
    from purerl.envs.gymnax import check_obs, traced

    action_shape = sizes if multi else ()
    draft = TimestepEnv(env, params, None, suite, action_shape)
    key = jax.eval_shape(jax.random.key, 0)
    name = f"{env_id}: {type(env).__name__}"
    raw = traced(f"{name}.reset", lambda k: suite.reset(env, params, jax.random.key_data(k)), key)
    check_timestep(f"{name}.reset", raw)
    mask = action_mask(raw[1].observation)
    if multi and mask is not None and tuple(mask.shape) != sizes:
        parts = sizes if len(sizes) <= 4 else f"of {len(sizes)} parts"
        raise InvalidEnvError(
            f"{env_id}: its action_mask {tuple(mask.shape)} is not one per joint action of its "
            f"multi-discrete actions {parts} (a mask per agent or part); purerl acts in one "
            "discrete space"
        )
    num_actions = math.prod(sizes)
    _, obs = traced(f"{name}.reset", lambda k: draft.reset(k, params), key)
    fields = spec_fields(obs, num_actions, f"{name}.reset")
    spec = EnvSpec(id=env_id, action_space=Discrete(num_actions), **fields)
    adapted = dataclasses.replace(draft, spec=spec)
    action = jax.ShapeDtypeStruct((), jnp.int32)
    out = traced(
        f"{name}.step",
        lambda s, a: suite.step(env, params, s, adapted.suite_action(a)),
        raw[0],
        action,
    )
    check_timestep(f"{name}.step", out)
    _, step = traced(
        f"{name}.step", lambda k, s, a: adapted.step(k, s, a, params), key, raw[0], action
    )
    check_obs(f"{name}.step", step.obs, spec)
    return adapted


def check_timestep(what: str, out: Any) -> None:
    """``out`` is ``(state, timestep)`` with the fields the adapter reads, scalars where they
    must be (one environment: purerl vectorises it itself)."""
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise InvalidEnvError(f"{what} must return (state, timestep)")
    timestep = out[1]
    for field in ("observation", "reward", "discount", "step_type"):
        if not hasattr(timestep, field):
            raise InvalidEnvError(
                f"{what} returns a timestep without {field}; a timestep has observation, reward, "
                "discount and step_type (2 on an episode's last step)"
            )
        if field != "observation" and getattr(getattr(timestep, field), "shape", None) != ():
            raise InvalidEnvError(
                f"{what} returns a {field} of shape {getattr(timestep, field).shape}; one "
                "environment's is a scalar (purerl drives one agent)"
            )


def construct(env_id: str, make: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """``make(*args, **options)``: options it does not take raise ``TypeError`` or
    ``ValueError`` as they are; anything else becomes one line naming ``env_id``."""
    try:
        return make(*args, **options)
    except (TypeError, ValueError):
        raise
    except Exception as err:
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise InvalidEnvError(
            f"{env_id}: building it raised {type(err).__name__}: {first}"
        ) from err


def make_jumanji(env_id: str, **options: Any) -> TimestepEnv:
    """A Jumanji environment; ``options`` go to its constructor (``jumanji.make``)."""
    from purerl.extras import import_extra

    jumanji = import_extra("jumanji", "'purerl[jumanji]'", env_id)
    env = construct(env_id, jumanji.make, env_id.removeprefix(JUMANJI_PREFIX), **options)
    spec = env.action_spec
    multi = np.ndim(getattr(spec, "num_values", 0)) > 0
    return adapt_timestep(env, None, env_id, JUMANJI, action_sizes(env_id, spec), multi)


def make_xminigrid(env_id: str, **options: Any) -> TimestepEnv:
    """An XLand-MiniGrid environment; ``options`` replace fields of its ``EnvParams``
    (``max_steps``, ``view_size``...)."""
    from purerl.extras import import_extra

    xminigrid = import_extra("xminigrid", "'purerl[xminigrid]'", env_id)
    env, params = construct(env_id, xminigrid.make, env_id.removeprefix(XMINIGRID_PREFIX))
    if options:
        params = construct(env_id, params.replace, **options)
    sizes = (int(env.num_actions(params)),)
    return adapt_timestep(env, params, env_id, XMINIGRID, sizes, multi=False)


def make_navix(env_id: str, **options: Any) -> TimestepEnv:
    """A Navix environment; ``options`` go to ``navix.make`` (``max_steps``...)."""
    from purerl.extras import import_extra

    navix = import_extra("navix", "'purerl[navix]'", env_id)
    env = construct(env_id, navix.make, env_id.removeprefix(NAVIX_PREFIX), **options)
    return adapt_timestep(env, None, env_id, NAVIX, (int(env.action_space.n),), multi=False)


def is_timestep_env(env: Any) -> bool:
    """An object of Jumanji's interface: ``reset``, ``step`` and an ``action_spec``."""
    return all(callable(getattr(env, n, None)) for n in ("reset", "step")) and hasattr(
        env, "action_spec"
    )


def adapt_own(env: Any, env_id: str) -> TimestepEnv:
    """Your own environment of Jumanji's interface (see the module docstring)."""
    spec = env.action_spec
    multi = np.ndim(getattr(spec, "num_values", 0)) > 0
    return adapt_timestep(env, None, env_id, OWN, action_sizes(env_id, spec), multi)
