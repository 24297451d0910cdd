"""Gymnasium environments inside the compiled loop, stepped through the host callback.

``--env gymnasium/<id>`` trains on any id Gymnasium's registry knows (its own, and those of
installed packages that register theirs); ``--env-options`` go to ``gymnasium.make``, except
``vector``: ``sync`` (the default: Gymnasium's ``SyncVectorEnv``, every environment in this
process, one after another) or ``async`` (its ``AsyncVectorEnv``, a spawned process per
environment, for environments whose step is slow). From Python, ``env=`` also takes a
``gymnasium.Env`` (copied for each environment), its class, a ``gymnasium.vector.VectorEnv`` of
exactly ``num_seeds * num_envs`` environments, or a function returning either.

The vector environment is a ``HostPool`` (``envs/host.py``): one pool serves every seed, agent
``s`` owning environments ``s * B .. s * B + B - 1``, reset with seeds ``(seed + s) * B + j``.
Gymnasium's own autoreset (``AutoresetMode.NEXT_STEP``) is EnvPool's: the step after an episode
ends resets it, ignores its action and is masked out of learning; the step that ended it carries
the final observation, which truncated episodes bootstrap from. Observations are one ``Box``
(uint8 frames stay uint8, the rest become float32); actions one ``Discrete`` or one ``Box``.
A Python environment's state cannot be saved: a resumed run starts fresh episodes.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from purerl.core.env import Discrete, EnvSpec, InvalidEnvError, action_space_from
from purerl.envs.host import HostPool

PREFIX = "gymnasium/"
VECTOR_MODES = ("sync", "async")
VIDEO_OPTIONS = (("render_mode", "rgb_array"),)


def is_gymnasium_id(env_id: str) -> bool:
    return env_id.startswith(PREFIX)


@dataclasses.dataclass(frozen=True, eq=False)
class GymnasiumEnv(HostPool):
    """A Gymnasium vector environment of ``num_seeds * spec.num_envs`` environments."""

    vector: Any
    spec: EnvSpec
    num_seeds: int
    seeds: tuple[int, ...]
    """The seed each environment is reset with (``_host_reset``)."""
    render_mode: str | None = None
    handle: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((), np.uint8))
    pure: bool = False

    @property
    def draws_frames(self) -> bool:
        return self.render_mode == "rgb_array"

    def render_live(self, index: int = 0) -> np.ndarray:
        """uint8 RGB frame ``[H, W, 3]`` of environment ``index`` as it is now (built with
        ``render_mode="rgb_array"``)."""
        try:
            frame = self.vector.call("render")[index]
        except Exception as err:  # a renderer's missing package, most often
            raise InvalidEnvError(
                f"{self.spec.id} cannot draw frames here ({type(err).__name__}: {err})"
            ) from err
        if frame is None:
            raise InvalidEnvError(f"{self.spec.id} drew no frame (render_mode rgb_array)")
        return np.asarray(frame, np.uint8)

    def _host_reset(self) -> np.ndarray:
        obs, _ = self.vector.reset(seed=list(self.seeds))
        return np.asarray(obs, self.spec.obs_dtype)

    def _host_step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        space = self.vector.single_action_space
        actions = np.asarray(actions).astype(space.dtype if space.dtype is not None else np.int64)
        obs, reward, terminated, truncated, _ = self.vector.step(actions)
        reward = np.asarray(reward, np.float32)
        terminated = np.asarray(terminated, bool)
        return (
            np.asarray(obs, self.spec.obs_dtype),
            reward,
            terminated,
            np.asarray(truncated, bool),
            reward,
            terminated,
        )

    def close(self) -> None:
        self.vector.close()


def import_gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError as err:  # a dependency of purerl: only a broken install lacks it
        raise ImportError(
            f"Gymnasium environments need gymnasium: pip install gymnasium ({err})"
        ) from err
    return gymnasium


def make_gymnasium(
    env_id: str,
    num_envs: int | None,
    seed: int = 0,
    num_seeds: int = 1,
    vector: str = "sync",
    **kwargs: Any,
) -> GymnasiumEnv:
    """``num_seeds * num_envs`` copies of registered id ``gymnasium/<id>``, ``kwargs`` passed to
    ``gymnasium.make``.

    Raises:
        InvalidEnvError: an id Gymnasium does not know, options it refuses, or spaces purerl
            cannot drive.
    """
    gymnasium = import_gymnasium()
    if num_envs is None:
        raise ValueError(f"{env_id} is a Gymnasium vector environment; give num_envs")
    name = env_id.removeprefix(PREFIX)
    make_one = functools.partial(gymnasium.make, name, **kwargs)
    try:
        gymnasium.spec(name)
        probe = make_one()  # options Gymnasium refuses fail here, in one line
    except Exception as err:
        raise InvalidEnvError(
            f"{env_id}: Gymnasium cannot make {name!r} ({type(err).__name__}: {err})"
        ) from err
    probe.close()
    return from_functions(env_id, [make_one] * (num_seeds * num_envs), num_envs, seed,
                          num_seeds, vector, kwargs.get("render_mode"))  # fmt: skip


def from_functions(
    env_id: str,
    functions: list[Callable[[], Any]],
    num_envs: int,
    seed: int,
    num_seeds: int,
    vector: str,
    render_mode: str | None = None,
) -> GymnasiumEnv:
    """Gymnasium's ``SyncVectorEnv`` or ``AsyncVectorEnv`` over ``functions``, one per
    environment."""
    gymnasium = import_gymnasium()
    if vector not in VECTOR_MODES:
        raise ValueError(f"vector must be one of {', '.join(VECTOR_MODES)}, got {vector!r}")
    mode = gymnasium.vector.AutoresetMode.NEXT_STEP
    cls = gymnasium.vector.SyncVectorEnv if vector == "sync" else gymnasium.vector.AsyncVectorEnv
    # Processes are spawned, not forked: a fork of a process running JAX's threads can hang.
    kwargs = {} if vector == "sync" else {"context": "spawn"}
    try:
        pool = cls(functions, autoreset_mode=mode, **kwargs)
    except InvalidEnvError:
        raise
    except Exception as err:
        raise InvalidEnvError(
            f"{env_id}: Gymnasium's {cls.__name__} could not be built ({type(err).__name__}: {err})"
        ) from err
    return from_vector(env_id, pool, num_envs, seed, num_seeds, render_mode)


def from_vector(
    env_id: str,
    pool: Any,
    num_envs: int,
    seed: int,
    num_seeds: int,
    render_mode: str | None = None,
) -> GymnasiumEnv:
    """The adapter of vector environment ``pool``, checked: its size, autoreset and spaces."""
    gymnasium = import_gymnasium()
    total = num_seeds * num_envs
    if pool.num_envs != total:
        raise InvalidEnvError(
            f"{env_id}: the vector environment has {pool.num_envs} environments where "
            f"{num_seeds} seed(s) x {num_envs} envs need {total}; build it with "
            f"num_envs={total}, or pass one environment or a function returning one"
        )
    autoreset = pool.metadata.get("autoreset_mode", gymnasium.vector.AutoresetMode.NEXT_STEP)
    if autoreset != gymnasium.vector.AutoresetMode.NEXT_STEP:
        raise InvalidEnvError(
            f"{env_id}: the vector environment resets in mode {autoreset}; purerl takes "
            "autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP (Gymnasium's default)"
        )
    obs_space = pool.single_observation_space
    if not isinstance(obs_space, gymnasium.spaces.Box):
        raise InvalidEnvError(
            f"{env_id}: observation space {type(obs_space).__name__} is not one purerl takes: "
            "one Box; flatten it with gymnasium.wrappers.FlattenObservation (Dict, Tuple, "
            "Discrete)"
        )
    action_space = action_space_from(pool.single_action_space)
    if isinstance(action_space, Discrete) and getattr(pool.single_action_space, "start", 0):
        raise InvalidEnvError(
            f"{env_id}: a Discrete action space starting at "
            f"{pool.single_action_space.start} is not one purerl takes: it acts in 0..n-1"
        )
    spec = EnvSpec(
        id=env_id,
        obs_shape=tuple(obs_space.shape),
        obs_dtype="uint8" if obs_space.dtype == np.uint8 else "float32",
        action_space=action_space,
        num_envs=num_envs,
        autoreset="next_step",
    )
    seeds = tuple(seed * num_envs + i for i in range(total))
    return GymnasiumEnv(pool, spec, num_seeds, seeds, render_mode)


# ---------------------------------------------------------------- objects from Python


def is_gymnasium_object(source: Any) -> bool:
    """``source`` is a ``gymnasium.Env`` or a ``gymnasium.vector.VectorEnv``."""
    try:
        gymnasium = import_gymnasium()
    except ImportError:
        return False
    return isinstance(source, gymnasium.Env | gymnasium.vector.VectorEnv)


def is_gymnasium_source(source: Any) -> bool:
    """A ``gymnasium.Env`` or ``VectorEnv``, a subclass of ``gymnasium.Env``, or a function of
    no arguments that returns one of the first two (called once to tell, ``made_by``)."""
    if is_gymnasium_object(source):
        return True
    if isinstance(source, type):
        return issubclass(source, import_gymnasium().Env)
    if not callable(source) or hasattr(source, "step") or hasattr(source, "env_id"):
        return False
    return made_class(source) is not None


@functools.lru_cache(maxsize=64)
def made_by(function: Callable[[], Any]) -> str | None:
    """The class name of the Gymnasium environment ``function`` makes (None: it makes none or
    fails), found by calling it once and closing what it made; remembered, so that telling
    what a function is and naming it cost one call between them."""
    try:
        made = function()
    except Exception:
        return None
    if not is_gymnasium_object(made):
        return None
    made.close()
    return type(getattr(made, "unwrapped", made)).__name__


def made_class(function: Callable[[], Any]) -> str | None:
    """``made_by``, uncached for a callable that cannot be a dictionary key."""
    try:
        return made_by(function)
    except TypeError:
        return made_by.__wrapped__(function)


def object_name(source: Any) -> str:
    """What a run on a Gymnasium object records (``object:`` ids are asked for again): the class
    of the environment it is, is, or makes."""
    if isinstance(source, type):
        return f"gymnasium:{source.__name__}"
    if is_gymnasium_object(source):
        return f"gymnasium:{type(getattr(source, 'unwrapped', source)).__name__}"
    return f"gymnasium:{made_class(source)}"


def from_object(
    source: Any,
    env_id: str,
    num_envs: int | None,
    seed: int = 0,
    num_seeds: int = 1,
    vector: str = "sync",
    **options: Any,
) -> GymnasiumEnv:
    """The adapter of a ``gymnasium.Env``, a ``VectorEnv`` or a function returning either.

    One environment is copied (``copy.deepcopy``) for every further one a run needs; a vector
    environment is used as it is and must hold exactly ``num_seeds * num_envs``.
    """
    gymnasium = import_gymnasium()
    if options:
        raise ValueError(
            f"{env_id}: an environment object takes no options ({', '.join(sorted(options))}); "
            "build it with them"
        )
    num_envs = 1 if num_envs is None else num_envs
    total = num_seeds * num_envs
    made = source
    if not is_gymnasium_object(source):  # a class or a function making one
        made = source()
        if isinstance(made, gymnasium.vector.VectorEnv):
            return from_vector(env_id, made, num_envs, seed, num_seeds)
        if not isinstance(made, gymnasium.Env):
            raise InvalidEnvError(
                f"{env_id}: the function returned {type(made).__name__}, not a gymnasium.Env "
                "or gymnasium.vector.VectorEnv"
            )
        first = made
        functions = [lambda: first] + [source] * (total - 1)
        return from_functions(env_id, functions, num_envs, seed, num_seeds, vector,
                              first.render_mode)  # fmt: skip
    if isinstance(source, gymnasium.vector.VectorEnv):
        return from_vector(env_id, source, num_envs, seed, num_seeds)
    copies = [source]
    try:
        copies += [copy.deepcopy(source) for _ in range(total - 1)]
    except Exception as err:
        raise InvalidEnvError(
            f"{env_id}: {total} environments are needed and this one cannot be copied "
            f"({type(err).__name__}: {err}); pass a function that makes one (env=MyEnv) or a "
            f"vector environment of {total}"
        ) from err
    functions = [functools.partial(lambda env: env, env) for env in copies]
    return from_functions(env_id, functions, num_envs, seed, num_seeds, vector,
                          source.render_mode)  # fmt: skip


def registered_ids() -> list[str]:
    """Every id Gymnasium's registry knows, with purerl's prefix."""
    return sorted(PREFIX + name for name in import_gymnasium().registry)
