"""Atari throughput: PPO training frames/s beside the raw EnvPool rate, in one process.

    python -m benchmarks.atari --env Breakout-v5 --num-envs 16 --updates 2

Rows, each timed as docs/measuring.md asks (compile on its own, a warm-up call, then the
median of ``--repeats`` calls, alternating the rows call by call):

- ``envpool host``: EnvPool stepped from Python with random actions (``pool.step``), the
  classic way and the ceiling for any learner.
- ``envpool xla``: the same through EnvPool's XLA step inside a jitted ``lax.scan``, as purerl
  steps it, with random actions drawn in JAX.
- ``envpool callback``: the same scan stepping EnvPool's ordinary ``step`` through a JAX host
  callback (``--env-options step_mode=callback``, the path taken where the XLA step fails).
- ``rollout``: PPO's acting loop alone: Nature-CNN policy forward and EnvPool step per step.
- ``ppo update``: whole PPO updates (rollout, critic pass, GAE, epochs x minibatches of SGD).

Frames count emulator frames (steps x frame skip 4). The time split at the end attributes an
update's time to stepping the simulator (``envpool xla`` time for the same steps), acting
(rollout minus that) and learning (update minus rollout).
"""

from __future__ import annotations

import dataclasses
import functools
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from benchmarks.timing import peak_rss_mib, timed
from purerl import envs
from purerl.algos.onpolicy import acting
from purerl.algos.ppo import make_ppo, sample, state_value
from purerl.core.memory import FeedForward
from purerl.core.program import init_agents
from purerl.core.rollout import collect
from purerl.envs.envpool import AtariProtocol
from purerl.presets.ppo import PRESETS as PPO_PRESETS
from purerl.runtime import configure_jax


@dataclasses.dataclass(frozen=True)
class AtariBenchArgs:
    env: str = "Breakout-v5"
    """An Atari id."""
    num_envs: int = 16
    """Environments in the pool."""
    updates: int = 2
    """PPO updates per timed call (rollout_len steps of every environment each)."""
    repeats: int = 3
    """Timed calls per row after the warm-up call."""
    precision: str = "fp32"
    """Network compute precision (fp32 or bf16)."""
    rollout_len: int | None = None
    """Steps per environment per PPO update (default: the preset's 128)."""


@dataclasses.dataclass(frozen=True)
class AtariTimes:
    """Seconds of each timed call per row, compile seconds, and what the rows stepped."""

    cfg: object
    steps: int
    """Steps per environment per call."""
    times: dict[str, list[float]]
    compile_s: dict[str, float]
    step_mode: str
    """How the ``rollout`` and ``ppo update`` rows step EnvPool (``xla`` or ``callback``)."""

    @property
    def frames(self) -> int:
        """Emulator frames per call."""
        return self.steps * self.cfg.num_envs * AtariProtocol().frame_skip

    def frames_per_second(self) -> dict[str, float]:
        return {name: self.frames / statistics.median(v) for name, v in self.times.items()}


def main(args: AtariBenchArgs) -> None:
    report(args, measure(args))


def measure(args: AtariBenchArgs) -> AtariTimes:
    """Times every row (see the module docstring). Where EnvPool's XLA step fails its start-up
    check (``step_mode="auto"`` then takes the callback), the ``envpool xla`` row is left out
    and the PPO rows step through the callback."""
    cfg = dataclasses.replace(
        PPO_PRESETS[args.env], num_envs=args.num_envs, precision=args.precision
    )
    if args.rollout_len is not None:
        cfg = dataclasses.replace(cfg, rollout_len=args.rollout_len)
    steps = args.updates * cfg.rollout_len  # per environment, per call
    env = envs.make(cfg.env, cfg.num_envs, seed=cfg.seed)
    algo = make_ppo(cfg, env)
    agents = init_agents(algo, [cfg.seed])
    state = jax.tree.map(lambda x: x[0], agents.state)
    num_actions = env.spec.action_space.num_actions

    callback_env = envs.make(cfg.env, cfg.num_envs, seed=cfg.seed, step_mode="callback")
    callback_state, _ = jax.jit(callback_env.reset)(jax.random.key(cfg.seed), None)

    def random_steps(env_state, key, env=env):
        def body(env_state, key):
            action = jax.random.randint(key, (cfg.num_envs,), 0, num_actions, jnp.int32)
            env_state, out = env.step(key, env_state, action, None)
            return env_state, out.reward.sum()

        return jax.lax.scan(body, env_state, jax.random.split(key, steps))

    def rollout(state, key):
        from purerl.core.nets import make_actor_critic

        network = make_actor_critic(
            env.spec, cfg.hidden_sizes, cfg.activation, cfg.precision, cfg.layer_norm
        )
        policy = acting(FeedForward(network, state_value), state.params, sample)
        return collect(env, None, policy, state.env_state, state.obs, key, steps, ()).env_state

    def updates(state, key):
        def body(state, key):
            return algo.update(state, key)[0], None

        return jax.lax.scan(body, state, jax.random.split(key, args.updates))[0]

    compiled, compile_s = {}, {}
    rows = [
        ("envpool xla", random_steps, state.env_state),
        ("envpool callback", functools.partial(random_steps, env=callback_env), callback_state),
        ("rollout", rollout, state),
        ("ppo update", updates, state),
    ]
    if env.step_mode != "xla":
        rows = rows[1:]
    for name, fn, first in rows:
        start = time.perf_counter()
        compiled[name] = jax.jit(fn).lower(first, jax.random.key(0)).compile()
        compile_s[name] = time.perf_counter() - start
    inputs = {
        "envpool xla": state.env_state,
        "envpool callback": callback_state,
        "rollout": state,
        "ppo update": state,
    }

    rng = np.random.default_rng(0)

    def host_steps() -> float:
        start = time.perf_counter()
        for _ in range(steps):
            env.pool.step(rng.integers(0, num_actions, cfg.num_envs).astype(np.int32))
        return time.perf_counter() - start

    times: dict[str, list[float]] = {name: [] for name in ["envpool host", *compiled]}
    for call in range(args.repeats + 1):
        seconds = {"envpool host": host_steps()}
        for name, fn in compiled.items():
            seconds[name] = timed(fn, inputs[name], jax.random.key(call + 1))
        if call:
            for name, value in seconds.items():
                times[name].append(value)
    return AtariTimes(cfg, steps, times, compile_s, env.step_mode)


def report(args: AtariBenchArgs, result: AtariTimes) -> None:
    cfg, steps, times, compile_s = result.cfg, result.steps, result.times, result.compile_s
    protocol = AtariProtocol()  # measure() builds its environments with the defaults
    frames = result.frames
    median = {name: statistics.median(values) for name, values in times.items()}
    print(
        f"# {args.env}, {cfg.num_envs} envs, sticky actions {protocol.sticky_actions}, frame "
        f"skip {protocol.frame_skip}; PPO "
        f"{cfg.rollout_len} steps x {cfg.num_envs} envs per update, {cfg.num_epochs} epochs x "
        f"{cfg.num_minibatches} minibatches, Nature CNN ({args.precision})\n"
        f"# {platform.machine()}, {jax.device_count()} {jax.default_backend()} device(s) "
        f"({jax.devices()[0].device_kind}), jax {jax.__version__}; median of {args.repeats} "
        f"calls of {steps} steps per env\n"
    )
    print("| row | compile s | frames/s | vs raw EnvPool (host) |\n|---|---:|---:|---:|")
    raw = frames / median["envpool host"]
    for name, seconds in median.items():
        fps = frames / seconds
        compile_text = f"{compile_s[name]:.1f}" if name in compile_s else "-"
        print(f"| {name} | {compile_text} | {fps:,.0f} | {fps / raw:.3f} |")
    if "envpool xla" in median:
        update = median["ppo update"]
        env_share = median["envpool xla"] / update
        act_share = (median["rollout"] - median["envpool xla"]) / update
        print(
            f"\ntime split of a PPO update: simulator {env_share:.0%}, acting (policy forward) "
            f"{act_share:.0%}, learning {1 - env_share - act_share:.0%}"
        )
    else:
        print(
            f"\nEnvPool's XLA step failed on this device: the PPO rows step through the "
            f"{result.step_mode} path"
        )
    peak = peak_rss_mib()
    print(f"peak resident memory: {peak:,.0f} MiB")


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(AtariBenchArgs, description=__doc__))
