"""Adapter from Brax (>= 0.14) physics environments to the purerl interface.

Brax environments are pure JAX: ``reset(key)`` and ``step(state, action)`` return a
``brax.envs.State`` pytree, so one environment steps under ``jit``, ``vmap`` and ``lax.scan``
like a gymnax one, and ``envs.make`` vectorises it with ``Vectorize``. The adapter wraps the
bare environment (not Brax's training wrappers) and does the episode bookkeeping itself:

- the episode length limit (Brax's ``EpisodeWrapper``, 1000 steps by default): reaching it
  with the physics still healthy is a *truncation* (Brax's ``info["truncation"]``), bootstrapped
  from ``final_obs``; Brax's own ``done`` (a fallen hopper, say) is a *termination*;
- auto-reset in the same step, as Brax's ``AutoResetWrapper`` does it (option
  ``autoreset="first"``, the default): each environment keeps the state its first ``reset``
  drew, and every episode of it starts there again. The start states are as random as Brax's
  ``reset`` makes them across environments (and seeds), not across one environment's episodes.
  ``autoreset="fresh"`` draws a new start state with a new key for every episode instead; under
  ``vmap`` that reset is computed for every environment at every step and selected where an
  episode ended, about a fifth of the raw stepping time of inverted_double_pendulum on a CPU.

Actions are a ``Box`` of ``action_size`` in ``[-1, 1]``, the control range Brax's environments
are written for (``envs.make`` clips into it); observations are float32 vectors.

Brax is imported only when an environment is built (``pip install 'purerl[brax]'``); the ids
below are registered without it. Frames for videos are drawn as Brax draws them
(``brax.io.image``: MuJoCo's OpenGL renderer), which needs a GL backend: ``MUJOCO_GL=egl``
(what ``purerl eval --video`` picks when none is set) or ``osmesa``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import io
import warnings
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import ConfigError
from purerl.core.env import Box, EnvSpec, Step, no_episodes
from purerl.core.types import Array, Key

BRAX_ENVS = (
    "ant", "fast", "halfcheetah", "hopper", "humanoid", "humanoidstandup",
    "inverted_double_pendulum", "inverted_pendulum", "pusher", "reacher", "swimmer", "walker2d",
)  # fmt: skip
"""The environments of ``brax.envs`` 0.14.2 (ids ``brax/<name>``), listed so ids resolve
without importing Brax."""
PREFIX = "brax/"
BACKENDS = ("generalized", "positional", "spring", "mjx")
"""Brax's physics pipelines; ``generalized`` is the default of every Brax environment."""
DEFAULT_EPISODE_LENGTH = 1000
"""Brax's ``envs.create`` default, the episode length of its published training runs."""
FRAME_SIZE = (240, 320)
"""Height and width of rendered frames (``brax.io.image``'s default)."""


class BraxState(NamedTuple):
    """One environment's state."""

    brax_state: Any
    """``brax.envs.State`` of the episode in progress (physics, observation, reward, done), or
    the ``State`` of the same shape of another JAX physics suite (MuJoCo Playground's)."""
    steps: Array
    """int32 steps taken in the episode so far."""
    first: Any = None
    """The state of the environment's first ``reset``, where its episodes start again
    (``autoreset="first"``); None with ``autoreset="fresh"``."""


@dataclasses.dataclass(frozen=True, eq=False)
class BraxEnv:
    """One Brax environment, episodes capped at ``episode_length`` steps.

    The bookkeeping uses only ``reset(key)``, ``step(state, action)`` and the returned state's
    ``obs``, ``reward``, ``done`` and ``replace``, so ``envs/playground.py`` reuses it and
    overrides only where frames come from (``mj_model``, ``joint_state``).
    """

    env: Any
    """The bare ``brax.envs.Env``."""
    spec: EnvSpec
    episode_length: int = DEFAULT_EPISODE_LENGTH
    autoreset: str = "first"
    """Where a finished episode's successor starts: ``first``, the environment's first state
    (Brax's ``AutoResetWrapper``); ``fresh``, a new ``reset``. One of ``AUTORESETS``."""
    pure: bool = True

    @property
    def default_params(self) -> Any:
        return None

    def reset(self, key: Key, params: Any) -> tuple[BraxState, Array]:
        """Returns the state and float32 observation ``[obs_size]`` of a fresh episode."""
        del params
        state = self.env.reset(key)
        state = state.replace(obs=state.obs.astype(jnp.float32))
        first = state if self.autoreset == "first" else None
        return BraxState(state, jnp.zeros((), jnp.int32), first), state.obs

    def step(self, key: Key, state: BraxState, action: Array, params: Any) -> tuple[Any, Step]:
        """Advances one step with ``action`` ``[action_size]``, resetting a finished episode.

        ``key`` only seeds a ``fresh`` reset: Brax's dynamics are deterministic. The ``Step``'s
        fields are scalars, its ``obs`` and ``final_obs`` float32 ``[obs_size]``.
        """
        del params
        chex.assert_shape(action, self.spec.action_space.shape)
        nxt = self.env.step(state.brax_state, action)
        nxt = nxt.replace(obs=nxt.obs.astype(jnp.float32))
        steps = state.steps + 1
        terminated = nxt.done > 0.5
        truncated = (steps >= self.episode_length) & ~terminated
        done = terminated | truncated
        if self.autoreset == "first":
            start = BraxState(state.first, jnp.zeros((), jnp.int32), state.first)
            first_obs = state.first.obs
        else:
            start, first_obs = self.reset(key, None)
        going = BraxState(nxt, steps, state.first)
        new = jax.tree.map(lambda r, s: jnp.where(done, r, s), start, going)
        reward = jnp.asarray(nxt.reward, jnp.float32)
        return new, Step(
            obs=jnp.where(done, first_obs, nxt.obs),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            final_obs=nxt.obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )

    def render(self, state: BraxState, params: Any = None) -> np.ndarray:
        """uint8 RGB frame ``[240, 320, 3]`` of one environment, drawn by MuJoCo's renderer.

        The drawing is ``brax.io.image.render_array``'s: the physics state's joint positions
        and velocities are loaded into MuJoCo's data, forwarded, and drawn from the default
        free camera. Brax's function builds a new ``mujoco.Renderer`` (an OpenGL context) per
        call, about 0.4 s each, so one renderer is kept for all the frames of a video instead.

        Raises:
            RenderError: MuJoCo's OpenGL renderer cannot start (no GL backend).
        """
        del params
        import mujoco

        model = self.mj_model
        data = mujoco.MjData(model)
        data.qpos, data.qvel = self.joint_state(state)
        mujoco.mj_forward(model, data)
        self.renderer.update_scene(data, camera=-1)
        return np.asarray(self.renderer.render(), np.uint8)

    @property
    def mj_model(self) -> Any:
        """The ``mujoco.MjModel`` frames are drawn from."""
        return self.env.sys.mj_model

    def joint_state(self, state: BraxState) -> tuple[np.ndarray, np.ndarray]:
        """Joint positions and velocities (``qpos``, ``qvel``) of one environment's physics."""
        pipeline_state = jax.device_get(state.brax_state.pipeline_state)
        return pipeline_state.q, pipeline_state.qd

    @functools.cached_property
    def renderer(self) -> Any:
        """The ``mujoco.Renderer`` of this environment's model, made on first use."""
        import mujoco

        # GLFW reports why it cannot start (no display) as Python warnings; they belong in
        # the one error line rather than above it.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                renderer = mujoco.Renderer(self.mj_model, *FRAME_SIZE)
            except Exception as err:  # MuJoCo raises FatalError, ImportError or RuntimeError
                raise RenderError(render_failure(err, [str(w.message) for w in caught])) from err
        # Freed with this environment or at exit, while the GL libraries are still loaded
        # (the renderer's own __del__ fails once interpreter shutdown has begun).
        weakref.finalize(self, renderer.close)
        return renderer


class RenderError(ConfigError, RuntimeError):
    """MuJoCo's renderer cannot draw on this machine (a ``ConfigError``: the command line
    reports it in one line, as the fix is a setting or a system package)."""


def render_failure(err: BaseException, notes: list[str] | None = None) -> str:
    """One line saying why MuJoCo could not render (``notes``: what the GL library warned
    first) and what to set."""
    import os

    chosen = os.environ.get("MUJOCO_GL") or "unset (glfw, needs a display)"
    why = " ".join(str(err).split())[:200] or type(err).__name__
    if notes:
        why = f"{' '.join(notes[0].split())[:120]}; {why}"
    return (
        f"Frames need MuJoCo's OpenGL renderer, which failed with MUJOCO_GL {chosen}: {why}; "
        "set MUJOCO_GL=egl (libEGL, e.g. apt-get install libegl1) or MUJOCO_GL=osmesa "
        "(apt-get install libosmesa6) before starting"
    )


def import_brax_envs(env_id: str) -> Any:
    """``brax.envs``, or a one-line ``MissingExtraError`` naming the extra to install."""
    from purerl.extras import import_extra

    # mujoco's MJX prints "Failed to import warp" on stdout when the optional NVIDIA Warp
    # backend is absent; stdout carries tables (`purerl envs`), so the notice is dropped.
    with contextlib.redirect_stdout(io.StringIO()):
        return import_extra("brax.envs", "'purerl[brax]'", env_id)


def make_brax(
    env_id: str,
    backend: str = "generalized",
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    autoreset: str = "first",
    **env_kwargs: Any,
) -> BraxEnv:
    """Builds one Brax environment; the keyword arguments are ``envs.make`` options.

    Args:
        env_id: ``brax/<name>`` with ``<name>`` one of ``BRAX_ENVS``.
        backend: physics pipeline, one of ``BACKENDS``.
        episode_length: steps after which an episode is truncated.
        autoreset: where a new episode starts: ``first`` (the environment's first state, as
            Brax's trainer does) or ``fresh`` (a new random state).
        **env_kwargs: keyword arguments of the Brax environment's constructor (e.g.
            ``ctrl_cost_weight`` of ``ant``, ``n_frames``), checked against its signature.

    Raises:
        MissingExtraError: Brax is not installed (``pip install 'purerl[brax]'``).
        ValueError: an unknown backend or option, or an option of the wrong kind.
    """
    brax_envs = import_brax_envs(env_id)
    name = env_id.removeprefix(PREFIX)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    check_autoreset(autoreset)
    check_env_kwargs(env_id, brax_envs._envs[name], env_kwargs)
    with warnings.catch_warnings(), mujoco_warnings_to_python():
        # Brax warns on every system it loads that its pipelines are no longer developed.
        warnings.filterwarnings("ignore", message="Brax System", category=UserWarning)
        try:
            env = brax_envs.get_environment(name, backend=backend, **env_kwargs)
        except ValueError as err:  # e.g. a backend this environment's model does not support
            raise ValueError(f"{env_id}: {' '.join(str(err).split())}") from err
    check_runs_here(env_id)
    return wrap_brax(env, env_id, episode_length, autoreset)


@contextlib.contextmanager
def mujoco_warnings_to_python() -> Iterator[None]:
    """Routes MuJoCo's warnings to Python's ``warnings`` while models load.

    MuJoCo otherwise prints them on stdout (which carries ``purerl envs``'s table) and appends
    them to ``MUJOCO_LOG.TXT`` in the working directory; Brax's own humanoid model triggers a
    deprecation one (``settotalmass``), shown like other deprecations only where asked for.
    """
    import mujoco

    def warn(message: str) -> None:
        category = DeprecationWarning if "deprecated" in message else UserWarning
        warnings.warn(f"MuJoCo: {message.strip()}", category, stacklevel=2)

    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(warn)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def wrap_brax(
    env: Any,
    env_id: str,
    episode_length: int = DEFAULT_EPISODE_LENGTH,
    autoreset: str = "first",
) -> BraxEnv:
    """Adapts any bare ``brax.envs.Env`` with flat observations (your own too) to purerl.

    Raises:
        ValueError: ``episode_length`` is not a whole number of at least 1, ``autoreset`` not
            one of ``AUTORESETS``, or the observations are not one flat array.
    """
    check_episode_length(episode_length)
    check_autoreset(autoreset)
    return BraxEnv(env, box_spec(env, env_id), episode_length, autoreset)


AUTORESETS = ("first", "fresh")
"""Where a new episode starts (``BraxEnv.autoreset``)."""


def check_autoreset(autoreset: Any) -> None:
    """Raises ``ValueError`` unless ``autoreset`` is one of ``AUTORESETS``."""
    if autoreset not in AUTORESETS:
        raise ValueError(f"autoreset must be one of {', '.join(AUTORESETS)}, got {autoreset!r}")


def check_episode_length(episode_length: Any) -> None:
    """Raises ``ValueError`` unless ``episode_length`` is a whole number of at least 1."""
    if isinstance(episode_length, bool) or not isinstance(episode_length, int):
        raise ValueError(f"episode_length must be a whole number, got {episode_length!r}")
    if episode_length < 1:
        raise ValueError(f"episode_length must be at least 1, got {episode_length}")


def box_spec(env: Any, env_id: str) -> EnvSpec:
    """The spec of a JAX physics environment with ``reset(key) -> State(obs, ...)`` and
    ``action_size`` (Brax's, MuJoCo Playground's): float32 vector observations, a ``Box`` of
    ``action_size`` in ``[-1, 1]``.

    Raises:
        ValueError: the observations are a dict or not one flat array.
    """
    size = int(env.action_size)
    # Brax's observation_size runs a reset op by op (half a minute for humanoid on a CPU);
    # tracing one gives the shape in under a second.
    obs = jax.eval_shape(env.reset, jax.random.key(0)).obs
    if isinstance(obs, dict):
        raise ValueError(
            f"{env_id}: purerl takes one flat observation array, but this environment's "
            f"observations are a dict ({', '.join(map(str, obs))})"
        )
    if len(obs.shape) != 1:
        raise ValueError(f"{env_id}: purerl takes flat observations, got shape {obs.shape}")
    return EnvSpec(
        id=env_id,
        obs_shape=tuple(obs.shape),
        obs_dtype="float32",
        action_space=Box((-1.0,) * size, (1.0,) * size, (size,)),
    )


def env_options(env_class: type) -> dict[str, Any]:
    """The constructor arguments of a Brax environment that ``--env-options`` can set, with
    their defaults: numbers, booleans and tuples of numbers (``backend`` is separate)."""
    from purerl.envs.gymnax import param_problem

    params = inspect.signature(env_class.__init__).parameters
    options = {
        name: p.default
        for name, p in params.items()
        if p.kind is p.POSITIONAL_OR_KEYWORD and name not in ("self", "backend")
    }
    options["n_frames"] = 1  # PipelineEnv's physics steps per environment step
    return {
        name: default
        for name, default in options.items()
        if isinstance(default, int | float | bool | tuple)
        and param_problem(default, default) is None
    }


def check_env_kwargs(env_id: str, env_class: type, env_kwargs: dict[str, Any]) -> None:
    """Raises ``ValueError`` for an option the Brax environment's constructor does not take, or
    a value of another kind than its default."""
    from purerl.envs.gymnax import param_problem

    defaults = env_options(env_class)
    unknown = sorted(set(env_kwargs) - set(defaults))
    if unknown:
        names = ", ".join(["autoreset", "backend", "episode_length", *sorted(defaults)])
        raise ValueError(f"{env_id} has no option {', '.join(unknown)}; its options are: {names}")
    for name, value in env_kwargs.items():
        problem = param_problem(value, defaults[name])
        if name == "n_frames" and problem is None and not (isinstance(value, int) and value >= 1):
            problem = f"must be a whole number of at least 1, got {value!r}"
        if problem:
            raise ValueError(f"{env_id} option {name} {problem}")


def check_runs_here(env_id: str) -> None:
    """Refuses what the installed Brax cannot step under the installed JAX, before a long trace.

    Brax 0.14.2's fluid model (used only by ``swimmer``, whose model supports only the
    ``generalized`` backend) calls ``jnp.clip(a_min=...)``, an argument current JAX removed.
    """
    if env_id.removeprefix(PREFIX) != "swimmer":
        return
    import jax.numpy as jnp
    from brax import fluid

    if (
        "a_min" in inspect.getsource(fluid)
        and "a_min" not in inspect.signature(jnp.clip).parameters
    ):
        raise ValueError(
            f"{env_id} cannot step with this Brax and JAX {jax.__version__}: Brax's fluid model "
            "calls jnp.clip(a_min=...), which JAX no longer accepts"
        )
