"""EnvPool adapter: batched Atari, MuJoCo and classic-control simulators stepped inside ``jit``.

EnvPool steps its environments on C++ threads; its XLA interface exposes the step as a custom
call that takes a handle to the pool, so the step sits inside the compiled ``lax.scan`` of a
rollout and the handle travels in the environment state. The pool is seeded when it is built
(keys passed to ``reset``/``step`` are ignored) and is not a JAX value: ``pure`` is False, the
adapter cannot be checkpointed (a resumed run resets it) and it cannot be vmapped like pure
environments. For several seeds, one pool of ``num_seeds x num_envs`` environments is built and
the step and reset carry a custom ``vmap`` rule: under ``vmap`` over seeds the actions of all
agents ``[S, B]`` are concatenated, the pool is stepped once, and its outputs are split back to
``[S, B, ...]``, so the seeds share the pool's threads. Agent ``s`` owns environments
``s * B .. s * B + B - 1``, seeded ``(seed + s) * B + j``, so agent ``s`` of a multi-seed run
sees the same environments as a single run with seed ``seed + s``.

EnvPool resets an environment on the step *after* its episode ended and ignores that step's
action; that step comes back with ``valid`` False and is masked out of learning
(``autoreset="next_step"``). Its ``obs`` is the first of the new episode, and the step before
returned the episode's last observation, which truncated episodes bootstrap from.

Two ways of stepping the pool from inside the compiled rollout, with the same results:

- ``xla``: EnvPool's XLA custom call, which hands the actions to the pool's C++ threads without
  leaving the compiled program (the fast path, checked on CPU);
- ``callback``: EnvPool's ordinary ``step`` through a JAX host callback (``io_callback``),
  which copies actions and frames through the host: the path every host simulator shares
  (``envs/host.py``; Gymnasium's take it too). It is the fallback where the custom call
  is missing or fails, as it has on GPUs with recent JAX (envpool issue 391).

``step_mode="auto"`` (the default) takes ``xla`` on CPU and, on other platforms, only after a
start-up check in a child process has run the custom call inside a compiled scan (a failure
there can abort the process, so it is not tried in this one).

MuJoCo tasks compute in float64: their custom call takes float64 actions and returns float64
observations and rewards. purerl runs with JAX's 64-bit mode off, so the float64 values exist
only inside the step: the actions are widened, the call is traced and its outputs narrowed back
to float32 under a local ``jax.enable_x64`` scope (``_wide_step``), and the rest of the program,
every other run included, keeps its 32-bit numerics.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
import typing
import warnings
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import type_problem
from purerl.core.env import EnvSpec, action_space_from
from purerl.core.types import Array
from purerl.envs.host import HostPool, HostPoolState, RawStep, raw_step
from purerl.envs.mujoco import (
    is_mujoco,
    mujoco_gl_context,
    mujoco_kwargs,
)
from purerl.runtime import child_process_env

ATARI_GAMES = (
    "Adventure", "AirRaid", "Alien", "Amidar", "Assault", "Asterix", "Asteroids", "Atlantis",
    "Atlantis2", "Backgammon", "BankHeist", "BasicMath", "BattleZone", "BeamRider", "Berzerk",
    "Blackjack", "Bowling", "Boxing", "Breakout", "Carnival", "Casino", "Centipede",
    "ChopperCommand", "CrazyClimber", "Crossbow", "Darkchambers", "Defender", "DemonAttack",
    "DonkeyKong", "DoubleDunk", "Earthworld", "ElevatorAction", "Enduro", "Entombed", "Et",
    "FishingDerby", "FlagCapture", "Freeway", "Frogger", "Frostbite", "Galaxian", "Gopher",
    "Gravitar", "Hangman", "HauntedHouse", "Hero", "HumanCannonball", "IceHockey", "Jamesbond",
    "JourneyEscape", "Kaboom", "Kangaroo", "KeystoneKapers", "KingKong", "Klax", "Koolaid",
    "Krull", "KungFuMaster", "LaserGates", "LostLuggage", "MarioBros", "MiniatureGolf",
    "MontezumaRevenge", "MrDo", "MsPacman", "NameThisGame", "Othello", "Pacman", "Phoenix",
    "Pitfall", "Pitfall2", "Pong", "Pooyan", "PrivateEye", "Qbert", "Riverraid", "RoadRunner",
    "Robotank", "Seaquest", "SirLancelot", "Skiing", "Solaris", "SpaceInvaders", "SpaceWar",
    "StarGunner", "Superman", "Surround", "Tennis", "Tetris", "TicTacToe3d", "TimePilot",
    "Trondead", "Turmoil", "Tutankham", "UpNDown", "Venture", "VideoCheckers", "VideoChess",
    "VideoCube", "VideoPinball", "WizardOfWor", "WordZapper", "YarsRevenge", "Zaxxon",
)  # fmt: skip
"""The Atari games of EnvPool 1.2.5 (ids ``<game>-v5``), listed so ids resolve without EnvPool."""
CLASSIC_IDS = (
    "CartPole-v0", "CartPole-v1", "Pendulum-v0", "Pendulum-v1", "MountainCar-v0",
    "MountainCarContinuous-v0", "Acrobot-v1",
)  # fmt: skip
"""EnvPool's classic-control ids; registered with the prefix ``envpool/`` (gymnax owns the bare
ones)."""
PREFIX = "envpool/"


@dataclasses.dataclass(frozen=True)
class AtariProtocol:
    """Atari settings; the defaults are the protocol of the published results the presets are
    compared with (CleanRL's EnvPool scripts, BENCHMARKS.md).

    That is EnvPool's Atari defaults plus the training signal of the DQN and PPO reference
    implementations: no sticky actions, frame skip 4, episodes capped at 108k frames (27k
    steps), 84x84 grayscale frames stacked by 4, up to 30 no-op starts as in Mnih et al. (2015),
    FIRE pressed at reset. Episodic life and reward clipping to [-1, 1] shape the *training*
    signal only; reported returns are always the raw game score over whole games (all lives).
    Machado et al. (2018, "Revisiting the ALE") and Gymnasium's ALE v5 add sticky actions with
    probability 0.25 (``sticky_actions=0.25``), which makes the games stochastic and lowers
    scores, so figures from the two protocols do not compare.
    """

    sticky_actions: float = 0.0
    frame_skip: int = 4
    stack_num: int = 4
    img_size: int = 84
    noop_max: int = 30
    episodic_life: bool = True
    reward_clip: bool = True
    max_episode_steps: int = 27_000
    full_action_space: bool = False

    def __post_init__(self):
        hints = typing.get_type_hints(AtariProtocol)
        for field in dataclasses.fields(self):
            problem = type_problem(getattr(self, field.name), hints[field.name])
            if problem:
                raise ValueError(f"{field.name} {problem}")
        if not 0.0 <= self.sticky_actions <= 1.0:
            raise ValueError(f"sticky_actions must lie in [0, 1], got {self.sticky_actions}")
        for name in ("frame_skip", "stack_num", "img_size", "max_episode_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.noop_max < 0:
            raise ValueError(f"noop_max must be non-negative, got {self.noop_max}")

    def envpool_kwargs(self) -> dict[str, Any]:
        return {
            "repeat_action_probability": self.sticky_actions,
            "frame_skip": self.frame_skip,
            "stack_num": self.stack_num,
            "img_height": self.img_size,
            "img_width": self.img_size,
            "noop_max": self.noop_max,
            "episodic_life": self.episodic_life,
            "reward_clip": self.reward_clip,
            "max_episode_steps": self.max_episode_steps,
            "full_action_space": self.full_action_space,
        }


def is_atari(env_id: str) -> bool:
    return env_id.endswith("-v5") and env_id[: -len("-v5")] in ATARI_GAMES


EnvPoolState = HostPoolState
"""An EnvPool pool's state in the rollout (``purerl.envs.host``)."""


@dataclasses.dataclass(frozen=True, eq=False)
class EnvPoolEnv(HostPool):
    """``num_seeds * num_envs`` EnvPool environments; ``spec.num_envs`` is one agent's share."""

    pool: Any
    xla_step: Any
    """EnvPool's XLA step, or None when stepping through the host callback."""
    handle: np.ndarray
    spec: EnvSpec
    num_seeds: int
    atari: bool
    wide: bool = False
    """The simulator takes float64 actions and returns float64 arrays (MuJoCo)."""
    render_size: int = 0
    """Height and width of ``render_live`` frames; 0 when the pool was built without them."""
    pure: bool = False

    @property
    def draws_frames(self) -> bool:
        return self.render_size > 0

    def render_live(self, index: int = 0) -> np.ndarray:
        """uint8 RGB frame ``[H, W, 3]`` of pool environment ``index`` as it is now, drawn by
        MuJoCo's renderer (pools built with ``render_size``; see ``mujoco_gl_context``)."""
        mujoco_gl_context(self.render_size)
        return np.asarray(self.pool.render(env_ids=[index]))[0]

    @property
    def step_mode(self) -> str:
        return "callback" if self.xla_step is None else "xla"

    def _host_reset(self) -> np.ndarray:
        obs, _ = self.pool.reset()
        return np.asarray(obs, self.spec.obs_dtype)

    def _host_step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """One ``pool.step`` on the host, as the callback path's ``io_callback`` calls it."""
        obs, reward, terminated, truncated, info = self.pool.step(np.asarray(actions))
        score = info["reward"] if self.atari else reward
        lost = info["terminated"] if self.atari else terminated
        return (
            np.asarray(obs, self.spec.obs_dtype),
            np.asarray(reward, np.float32),
            np.asarray(terminated, bool),
            np.asarray(truncated, bool),
            np.asarray(score, np.float32),
            np.asarray(lost, bool),
        )

    def _pool_step(self, handle: Array, actions: Array) -> tuple[Array, RawStep]:
        if self.xla_step is None:
            return super()._pool_step(handle, actions)
        step = _wide_step if self.wide else _plain_step
        handle, (obs, reward, terminated, truncated, info) = step(self.xla_step, handle, actions)
        score = info["reward"] if self.atari else reward
        lost = info["terminated"] if self.atari else terminated
        return handle, raw_step(
            self.spec.obs_dtype, obs, reward, terminated, truncated, score, lost
        )


def _plain_step(xla_step: Any, handle: Array, actions: Array) -> tuple[Array, Any]:
    return xla_step(handle, actions)


def _wide_step(xla_step: Any, handle: Array, actions: Array) -> tuple[Array, Any]:
    """EnvPool's float64 step inside a 32-bit program: float64 values exist only between the
    widened actions and the narrowed outputs, traced under a local 64-bit scope."""
    with jax.enable_x64(True):
        handle, out = xla_step(handle, actions.astype(jnp.float64))
        return handle, jax.tree.map(_narrow, out)


def _narrow(x: Array) -> Array:
    narrow = {np.float64: np.float32, np.int64: np.int32, np.uint64: np.uint32}
    dtype = narrow.get(np.dtype(x.dtype).type)
    return x if dtype is None else x.astype(dtype)


def _spaces(pool: Any) -> tuple[tuple[int, ...], str, Any]:
    with warnings.catch_warnings():
        # Gymnasium warns that float64 bounds become float32 ones; purerl works in float32.
        warnings.filterwarnings("ignore", message=".*precision lowered by casting to float32")
        obs_space, act_space = pool.observation_space, pool.action_space
    dtype = "uint8" if obs_space.dtype == np.uint8 else "float32"
    return tuple(obs_space.shape), dtype, action_space_from(act_space)


StepMode = Literal["auto", "xla", "callback"]
STEP_MODES = typing.get_args(StepMode)


def make_envpool(
    env_id: str,
    num_envs: int,
    seed: int = 0,
    num_seeds: int = 1,
    num_threads: int = 0,
    step_mode: StepMode = "auto",
    render_size: int = 0,
    **options: Any,
) -> EnvPoolEnv:
    """Builds a pool for ``num_seeds`` agents of ``num_envs`` environments each.

    Args:
        env_id: an Atari id (``Breakout-v5``), a MuJoCo id (``HalfCheetah-v4``) or
            ``envpool/<classic id>``.
        seed: the first agent's seed (see the module docstring for the environment seeds).
        num_threads: EnvPool worker threads (0: one per core, capped at the pool size).
        step_mode: ``xla``, ``callback`` or ``auto`` (see the module docstring); an
            environment option (``--env-options step_mode=callback``).
        render_size: for MuJoCo, build the pool to draw ``render_size`` square frames
            (``EnvPoolEnv.render_live``; evaluation videos); 0 draws none.
        **options: ``AtariProtocol`` fields for Atari ids; ``MUJOCO_OPTIONS`` for MuJoCo ids.

    Raises:
        MissingExtraError: EnvPool is not installed (with the command that installs it).
    """
    from purerl.extras import import_extra

    extra = "mujoco" if is_mujoco(env_id.removeprefix(PREFIX)) else "atari"
    envpool = import_extra("envpool", f"'purerl[{extra}]'", env_id)
    if step_mode not in STEP_MODES:
        raise ValueError(f"step_mode must be one of {', '.join(STEP_MODES)}, got {step_mode!r}")
    name = env_id.removeprefix(PREFIX)
    atari, wide = is_atari(name), is_mujoco(name)
    protocol = AtariProtocol(**options) if atari else None
    if atari:
        kwargs = protocol.envpool_kwargs()
    elif wide:
        kwargs = mujoco_kwargs(name, options)
    elif options:
        raise ValueError(f"{env_id} takes no options, got {', '.join(sorted(options))}")
    else:
        kwargs = {}
    if render_size and not wide:
        raise ValueError(f"{env_id} takes no render_size: only MuJoCo tasks render frames")
    if render_size:
        kwargs = {**kwargs, "render_mode": "rgb_array"}
        kwargs.update(render_width=render_size, render_height=render_size)
    pool = envpool.make(
        name,
        env_type="gymnasium",
        num_envs=num_seeds * num_envs,
        # Explicit per-environment seeds: EnvPool's own derivation from ``seed`` depends on
        # the pool size, so agent s would not see a single-seed run's environments.
        env_seed=[seed * num_envs + i for i in range(num_seeds * num_envs)],
        num_threads=num_threads,
        **kwargs,
    )
    handle, xla_step = np.zeros((), np.uint8), None
    if step_mode == "xla" or (step_mode == "auto" and xla_step_works()):
        # In a 64-bit scope EnvPool declares its float64 arrays as such (see _wide_step).
        with jax.enable_x64(wide):
            handle, _, _, xla_step = pool.xla()
    obs_shape, obs_dtype, action_space = _spaces(pool)
    spec = EnvSpec(
        id=env_id,
        obs_shape=obs_shape,
        obs_dtype=obs_dtype,
        action_space=action_space,
        num_envs=num_envs,
        frame_skip=protocol.frame_skip if atari else 1,
        autoreset="next_step",
    )
    handle = np.asarray(handle)
    return EnvPoolEnv(pool, xla_step, handle, spec, num_seeds, atari, wide, render_size)


# The check runs four steps of a two-environment pool: far less than this limit when the custom
# call works, so reaching it means a hang.
XLA_CHECK_TIMEOUT_S = 120

XLA_STEP_CHECK = """
import jax, numpy as np, envpool
pool = envpool.make("Pong-v5", env_type="gymnasium", num_envs=2)
handle, _, _, step = pool.xla()
def run(handle):
    def body(handle, _):
        handle, out = step(handle, np.zeros(2, np.int32))
        return handle, out[1].sum()
    return jax.lax.scan(body, handle, None, length=4)[1]
assert np.isfinite(np.asarray(jax.jit(run)(handle))).all()
"""


@functools.cache
def xla_step_works() -> bool:
    """Whether EnvPool's XLA step runs inside a compiled scan on JAX's default platform.

    Known to on CPU. Elsewhere it is tried once per process in a child process, since the
    custom call has aborted processes on GPUs (envpool issue 391); a failure is reported on
    stderr and the pool steps through the host callback instead.
    """
    platform = jax.default_backend()
    if platform == "cpu":
        return True
    try:
        proc = subprocess.run(
            [sys.executable, "-c", XLA_STEP_CHECK],
            env=child_process_env(),
            capture_output=True,
            text=True,
            timeout=XLA_CHECK_TIMEOUT_S,
        )
        ok, why = proc.returncode == 0, (proc.stderr.strip().splitlines() or ["?"])[-1]
    except subprocess.TimeoutExpired:
        ok, why = False, f"no answer within {XLA_CHECK_TIMEOUT_S} s"
    if not ok:
        print(
            f"EnvPool's XLA step failed its start-up check on {platform} ({why[:160]}); "
            "stepping through a host callback instead",
            file=sys.stderr,
            flush=True,
        )
    return ok
