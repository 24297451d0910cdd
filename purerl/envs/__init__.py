"""Environments: one ``make`` for every registered id, and ``from_config`` for a run's config.

>>> env = make("CartPole-v1", num_envs=4)
>>> state, obs = env.reset(jax.random.key(0), env.default_params)        # obs: [4, 4]
>>> state, step = env.step(key, state, actions, env.default_params)      # step.obs: [4, 4]

Ids come from backends: every gymnax id (classic control, MinAtar, bsuite, misc), purerl's
probe environments (``envs/probes.py``), Snake (``envs/snake.py``), partially observable
variants of gymnax tasks (``envs/partial.py``), EnvPool's Atari games, MuJoCo tasks and
classic control (``envs/envpool.py``), Brax's physics environments (``envs/brax.py``) and
MuJoCo Playground's DeepMind Control suite (``envs/playground.py``), Jumanji's,
XLand-MiniGrid's and Navix's environments as ``jumanji/<Name>``, ``xminigrid/<Name>`` and
``navix/<Name>`` (``envs/timestep.py``), and every id of Gymnasium's registry as ``gymnasium/<id>``
(``envs/gymnasium_env.py``).
Your own environments come as ``module:factory`` strings or as objects (``envs/custom.py``).
Nothing is imported until it is needed: importing this package loads no environment library
and creates no JAX backend; gymnax's ids are read the first time an id outside the static lists
is looked up.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable
from typing import Any

from purerl.config import ConfigError
from purerl.core.env import Box, Discrete, Environment, EnvSpec, InvalidEnvError, Step
from purerl.envs import custom, gymnasium_env
from purerl.envs.wrappers import (
    AutoReset,
    ClipAction,
    NormalizeObservation,
    RecordEpisodeStats,
    ScaleReward,
    Vectorize,
)

__all__ = [
    "Box",
    "Discrete",
    "EnvSpec",
    "Environment",
    "InvalidEnvError",
    "Step",
    "UnknownEnvError",
    "from_config",
    "list_envs",
    "lookup",
    "make",
    "register",
]


class UnknownEnvError(ConfigError, ValueError):
    """An environment id that no backend provides."""


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """How to build one id.

    ``factory(env_id, num_envs, **options)`` returns either a single auto-resetting pure
    environment (``batched=False``; ``make`` vectorises it) or an already batched one, which
    also receives ``seed`` and ``num_seeds`` (impure backends are seeded when built).
    ``needs_reset_wrapper`` marks single environments whose ``step`` does not reset.
    """

    factory: Callable[..., Environment]
    family: str
    """What kind of environment, for listings (``classic control``, ``Atari (EnvPool)``...)."""
    batched: bool = False
    needs_reset_wrapper: bool = False
    reports_episodes: bool = False
    """The adapter fills ``Step.episode`` itself (EnvPool: raw score over whole games)."""
    video_options: tuple[tuple[str, Any], ...] = ()
    """Options that make the environment draw frames for evaluation videos (MuJoCo through
    EnvPool draws with MuJoCo's renderer only when built to)."""


_REGISTRY: dict[str, EnvEntry] = {}
_gymnax_loaded = False


def register(env_id: str, entry: EnvEntry) -> None:
    _REGISTRY[env_id] = entry


def list_envs() -> list[str]:
    """All registered ids, sorted (imports gymnax and Gymnasium to read their ids)."""
    from purerl.envs.gymnasium_env import registered_ids

    _load_gymnax()
    return sorted([*_REGISTRY, *registered_ids()])


def _gymnax_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.gymnax import make_gymnax

    return make_gymnax(env_id, **options)


def _gymnax_family(env_id: str) -> str:
    suffix = env_id.rpartition("-")[2]
    return {"MinAtar": "MinAtar", "bsuite": "bsuite", "misc": "gymnax misc"}.get(
        suffix, "classic control"
    )


def _load_gymnax() -> None:
    global _gymnax_loaded
    if _gymnax_loaded:
        return
    from purerl.envs.gymnax import import_gymnax

    gymnax = import_gymnax()

    for env_id in gymnax.registered_envs:
        _REGISTRY.setdefault(env_id, EnvEntry(_gymnax_factory, _gymnax_family(env_id)))
    _gymnax_loaded = True


def _probe_factory(env_id: str, num_envs: int | None) -> Environment:
    from purerl.envs.probes import make_probe

    return make_probe(env_id)


SNAKE_SIZES = {
    "Snake-v0": (10, 10),
    "Snake-6x6-v0": (6, 6),
    "Snake-8x8-v0": (8, 8),
    "Snake-16x16-v0": (16, 16),
}
"""Board ``(height, width)`` of each Snake id; ``height``/``width`` options override it."""


def _snake_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.snake import make_snake

    height, width = SNAKE_SIZES[env_id]
    return make_snake(env_id, **{"height": height, "width": width, **options})


def _partial_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.partial import make_partial

    return make_partial(env_id, **options)


def _envpool_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.envpool import make_envpool

    if num_envs is None:
        raise ValueError(f"{env_id} is an EnvPool batch; give num_envs")
    return make_envpool(env_id, num_envs, **options)


def _gymnasium_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.gymnasium_env import make_gymnasium

    return make_gymnasium(env_id, num_envs, **options)


GYMNASIUM = EnvEntry(
    _gymnasium_factory,
    "Gymnasium",
    batched=True,
    reports_episodes=True,
    video_options=(("render_mode", "rgb_array"),),
)
"""Every ``gymnasium/<id>``: Gymnasium's registry answers for the id when it is made."""


def _brax_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.brax import make_brax

    return make_brax(env_id, **options)


def _playground_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.playground import make_playground

    return make_playground(env_id, **options)


def _jumanji_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.timestep import make_jumanji

    return make_jumanji(env_id, **options)


def _xminigrid_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.timestep import make_xminigrid

    return make_xminigrid(env_id, **options)


def _navix_factory(env_id: str, num_envs: int | None, **options: Any) -> Environment:
    from purerl.envs.timestep import make_navix

    return make_navix(env_id, **options)


def _register_static() -> None:
    """Backends whose ids are known without importing anything heavy."""
    from purerl.envs import brax, playground, timestep
    from purerl.envs.envpool import ATARI_GAMES, CLASSIC_IDS, PREFIX
    from purerl.envs.mujoco import MUJOCO_IDS, MUJOCO_VIDEO_SIZE
    from purerl.envs.partial import PARTIAL_ENVS
    from purerl.envs.probes import PROBES

    for env_id in PROBES:
        register(env_id, EnvEntry(_probe_factory, "probe", needs_reset_wrapper=True))
    for env_id in SNAKE_SIZES:
        register(env_id, EnvEntry(_snake_factory, "Snake"))
    for env_id in PARTIAL_ENVS:
        register(env_id, EnvEntry(_partial_factory, "partially observable"))
    atari = EnvEntry(_envpool_factory, "Atari (EnvPool)", batched=True, reports_episodes=True)
    for game in ATARI_GAMES:
        register(f"{game}-v5", atari)
        register(f"{PREFIX}{game}-v5", atari)
    mujoco = dataclasses.replace(
        atari, family="MuJoCo (EnvPool)", video_options=(("render_size", MUJOCO_VIDEO_SIZE),)
    )
    for env_id in MUJOCO_IDS:
        register(env_id, mujoco)
        register(PREFIX + env_id, mujoco)
    classic = dataclasses.replace(atari, family="classic control (EnvPool)")
    for env_id in CLASSIC_IDS:
        register(PREFIX + env_id, classic)
    for name in brax.BRAX_ENVS:
        register(brax.PREFIX + name, EnvEntry(_brax_factory, "Brax"))
    for name in playground.PLAYGROUND_ENVS:
        register(playground.PREFIX + name, EnvEntry(_playground_factory, "MuJoCo Playground"))
    jumanji = EnvEntry(_jumanji_factory, "Jumanji", needs_reset_wrapper=True)
    for name in timestep.JUMANJI_ENVS:
        register(timestep.JUMANJI_PREFIX + name, jumanji)
    xminigrid = EnvEntry(_xminigrid_factory, "XLand-MiniGrid", needs_reset_wrapper=True)
    for name in timestep.XMINIGRID_ENVS:
        register(timestep.XMINIGRID_PREFIX + name, xminigrid)
    navix = EnvEntry(_navix_factory, "Navix", needs_reset_wrapper=True)
    for name in timestep.NAVIX_ENVS:
        register(timestep.NAVIX_PREFIX + name, navix)


_register_static()


def lookup(env_id: str) -> EnvEntry:
    """The registry entry for ``env_id``, or for ``module:factory`` (its module imported).

    Raises:
        UnknownEnvError: with the closest registered ids in the message.
        InvalidEnvError: a factory that cannot be imported, or the id of an environment object.
    """
    if env_id in _REGISTRY:
        return _REGISTRY[env_id]
    if env_id.startswith("gymnasium/"):
        return GYMNASIUM
    if custom.is_object_id(env_id):
        raise custom.object_needed(env_id)
    if custom.is_factory_id(env_id):
        return EnvEntry(custom.factory_builder(env_id), "custom")
    _load_gymnax()
    if env_id in _REGISTRY:
        return _REGISTRY[env_id]
    by_lower = {name.lower(): name for name in _REGISTRY}
    close = [
        by_lower[m] for m in difflib.get_close_matches(env_id.lower(), by_lower, n=4, cutoff=0.6)
    ]
    hint = (
        f"did you mean {' or '.join(close)}?"
        if close
        else "`purerl envs` (purerl.envs.list_envs()) lists them; your own: module:factory"
    )
    raise UnknownEnvError(f"unknown environment id {env_id!r}; {hint}")


def make(
    env: str | Any,
    num_envs: int | None = None,
    *,
    normalize_obs: bool = False,
    scale_reward_gamma: float | None = None,
    clip_actions: bool = True,
    seed: int = 0,
    num_seeds: int = 1,
    **options: Any,
) -> Environment:
    """Builds environment ``env``, vectorised over ``num_envs`` copies.

    Args:
        env: a registered id (``list_envs()``), a ``module:factory`` string (or its imported
            ``custom.Factory``), or an environment object or ``(env, params)`` pair
            (``purerl.envs.custom``).
        num_envs: parallel environments per ``step``; None for one unbatched environment.
        normalize_obs: standardise observations with running statistics (needs ``num_envs``).
        scale_reward_gamma: divide rewards by the running standard deviation of the return
            discounted with this gamma (``ScaleReward``; needs ``num_envs``); None leaves them.
        clip_actions: clip continuous actions into the action space before stepping.
        seed: seed of impure backends, fixed when they are built (EnvPool); pure environments
            take their randomness from the keys given to ``reset`` and ``step`` instead.
        num_seeds: agents an impure backend serves at once (one EnvPool of
            ``num_seeds * num_envs``, stepped under ``vmap`` over seeds); pure ones ignore it.
        **options: backend options (for gymnax: fields of the environment's ``EnvParams``; for
            Atari: fields of ``purerl.envs.envpool.AtariProtocol``; for MuJoCo:
            ``purerl.envs.mujoco.MUJOCO_OPTIONS``; for Brax: ``backend``, ``episode_length``
            and the environment's constructor arguments; for MuJoCo Playground: ``episode_length``
            and ``purerl.envs.playground.CONFIG_OPTIONS``; for Jumanji: its constructor's
            arguments; for XLand-MiniGrid: fields of its ``EnvParams``; for Navix: ``navix.make``'s
            arguments).

    Returns:
        An auto-resetting environment whose steps report finished episodes in ``Step.episode``.
    """
    if isinstance(env, str):
        env_id, entry = env, lookup(env)
    elif isinstance(env, custom.Factory):
        env_id = env.env_id
        entry = EnvEntry(functools.partial(custom.build_from_factory, env.make), "custom")
    elif gymnasium_env.is_gymnasium_source(env):
        env_id = custom.OBJECT_PREFIX + gymnasium_env.object_name(env)
        entry = dataclasses.replace(
            GYMNASIUM, factory=functools.partial(gymnasium_env.from_object, env), video_options=()
        )
    else:
        env_id = custom.object_id(env)
        entry = EnvEntry(functools.partial(custom.build_from_object, env), "custom")
    if num_envs is not None and num_envs < 1:
        raise ValueError(f"num_envs must be positive, got {num_envs}")
    if entry.batched:
        env = entry.factory(env_id, num_envs, seed=seed, num_seeds=num_seeds, **options)
    else:
        env = entry.factory(env_id, num_envs, **options)
    if entry.needs_reset_wrapper:
        env = AutoReset(env)
    if clip_actions and isinstance(env.spec.action_space, Box):
        env = ClipAction(env)
    if num_envs is not None and not entry.batched:
        env = Vectorize(env, num_envs)
    if not entry.reports_episodes:
        env = RecordEpisodeStats(env)
    if scale_reward_gamma is not None:
        if num_envs is None:
            raise ValueError("scale_reward_gamma needs num_envs: statistics are taken over a batch")
        env = ScaleReward(env, gamma=scale_reward_gamma)
    if normalize_obs:
        if num_envs is None:
            raise ValueError("normalize_obs needs num_envs: statistics are taken over a batch")
        env = NormalizeObservation(env)
    return env


def from_config(cfg: Any, num_envs: int | None = None, env: Any = None) -> Environment:
    """The environment a run of ``cfg`` trains on (``num_envs`` per agent, default
    ``cfg.num_envs``): the one construction the command line, the Python API, evaluation and
    sweeps share, so options, observation normalisation and seeds are never dropped. ``env``,
    an environment object (or ``(env, params)``), or the ``custom.Factory`` of ``cfg.env``, is
    built instead of looking ``cfg.env`` up.

    Raises:
        UnknownEnvError: ``cfg.env`` is not a registered id.
        InvalidEnvError: an environment purerl cannot use or find (``envs/custom.py``).
        ConfigError: an ``--env-options`` entry the environment does not take.
    """
    options = cfg.env_kwargs
    try:
        return make(
            cfg.env if env is None else env,
            cfg.num_envs if num_envs is None else num_envs,
            normalize_obs=cfg.normalize_obs,
            scale_reward_gamma=cfg.gamma if cfg.normalize_reward else None,
            seed=cfg.seed,
            num_seeds=cfg.num_seeds,
            **options,
        )
    except (TypeError, ValueError) as err:
        if not options or isinstance(err, UnknownEnvError):
            raise
        raise ConfigError(f"--env-options {' '.join(cfg.env_options)}: {err}") from err
