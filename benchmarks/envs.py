"""Environment throughput: JAX Snake and gymnax CartPole against NumPy baselines, as a table.

    python -m benchmarks.envs --num-envs 1 16 64 256 1024 4096

A JAX row steps N games with uniformly random actions for many steps inside one jitted
``lax.scan``: actions are drawn inside the scan, the games are ``vmap``ped over per-game keys
(as ``envs.Vectorize`` does) and observations are carried from step to step, so building them
is part of the cost. Snake is ``purerl.envs.snake`` itself, CartPole-v1 the raw gymnax
environment; neither has purerl's wrappers. Each family has a single-game NumPy baseline: for
Snake the reference of tests/envs/snake_numpy.py (building the same observation each step),
for CartPole gymnasium's ``CartPoleEnv`` (plain Python and NumPy, installed with gymnax).

Following docs/measuring.md: compile is timed on its own (AOT), then a warm-up call and
``--repeats`` timed calls on fresh keys. For each N the four runners (JAX and NumPy, Snake and
CartPole) alternate call by call, and a speed-up is the median of the per-call ratios to the
NumPy baseline timed beside it. Steps count environment steps of all games together.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
import tyro

from benchmarks.timing import Runner, measure, peak_rss_mib
from purerl.envs.snake import make_snake
from purerl.runtime import configure_jax
from tests.envs.snake_numpy import SnakeReference


@dataclasses.dataclass(frozen=True)
class EnvBenchArgs:
    num_envs: tuple[int, ...] = (1, 16, 64, 256, 1024, 4096)
    """Numbers of parallel games to measure, one row each."""
    steps_per_call: int = 1_000_000
    """Environment steps per timed call, all games together (see --max-scan-steps)."""
    max_scan_steps: int = 50_000
    """Cap on the steps of one scan, so that few games still time in about a second."""
    repeats: int = 3
    """Timed calls after the warm-up call."""
    height: int = 10
    """Snake board height."""
    width: int = 10
    """Snake board width."""
    obs_mode: str = "grid"
    """Snake observations: grid ([H, W, 3] float32) or features."""
    numpy_steps: int = 20_000
    """Steps of one timed call of the NumPy reference."""


"""``run(call_index) -> seconds`` for one call on fresh keys or a fresh seed."""


class JaxGame(NamedTuple):
    """A single-game environment as pure functions of a key."""

    reset: Callable[[jax.Array], tuple[Any, jax.Array]]
    """``reset(key) -> (state, obs)``."""
    step: Callable[[jax.Array, Any, jax.Array], tuple[Any, jax.Array]]
    """``step(key, state, action) -> (state, obs)``, auto-resetting."""
    num_actions: int


class Family(NamedTuple):
    """One environment: its JAX version and the single-game NumPy baseline it is compared to."""

    name: str
    game: JaxGame
    baseline: Runner
    baseline_name: str


def snake_family(args: EnvBenchArgs) -> Family:
    env = make_snake("Snake", args.height, args.width, args.obs_mode)
    params = env.default_params

    def step(key, state, action):
        state, out = env.step(key, state, action, params)
        return state, out.obs

    game = JaxGame(lambda key: env.reset(key, params), step, env.spec.action_space.num_actions)
    name = f"Snake {args.height}x{args.width}"
    return Family(name, game, snake_numpy_runner(args), "NumPy reference")


def cartpole_family(args: EnvBenchArgs) -> Family:
    import gymnax

    env, params = gymnax.make("CartPole-v1")

    def reset(key):
        obs, state = env.reset(key, params)
        return state, obs

    def step(key, state, action):
        obs, state, *_ = env.step(key, state, action, params)
        return state, obs

    game = JaxGame(reset, step, env.action_space(params).n)
    return Family("CartPole-v1", game, cartpole_numpy_runner(args), "gymnasium")


def jax_runner(game: JaxGame, num_envs: int, num_steps: int) -> tuple[Runner, float]:
    """Compiles ``num_steps`` steps of ``num_envs`` games; returns the runner and compile s."""

    def rollout(key: jax.Array) -> Any:
        reset_key, steps_key = jax.random.split(key)
        carry = jax.vmap(game.reset)(jax.random.split(reset_key, num_envs))

        def step(carry, key):
            state, obs = carry
            action_key, env_key = jax.random.split(key)
            action = jax.random.randint(action_key, (num_envs,), 0, game.num_actions)
            step_fn = jax.vmap(game.step)
            return step_fn(jax.random.split(env_key, num_envs), state, action), None

        return jax.lax.scan(step, carry, jax.random.split(steps_key, num_steps))[0]

    start = time.perf_counter()
    compiled = jax.jit(rollout).lower(jax.random.key(0)).compile()
    compile_s = time.perf_counter() - start

    def run(call: int) -> float:
        key = jax.block_until_ready(jax.random.key(call + 1))
        start = time.perf_counter()
        jax.block_until_ready(compiled(key))
        return time.perf_counter() - start

    return run, compile_s


def snake_numpy_runner(args: EnvBenchArgs) -> Runner:
    """One NumPy game for ``numpy_steps`` steps with random actions and auto-reset."""
    game = SnakeReference(args.height, args.width)
    observe = game.grid_obs if args.obs_mode == "grid" else game.features

    def run(call: int) -> float:
        rng = np.random.default_rng(call)
        start = time.perf_counter()
        actions = rng.integers(0, 4, args.numpy_steps)
        uniforms = rng.random((args.numpy_steps, 3), np.float32)
        game.reset(uniforms[0])
        for action, u in zip(actions, uniforms, strict=True):
            _, terminated, truncated = game.step(action, u[0])
            if terminated or truncated:
                game.reset(u)
            observe()
        return time.perf_counter() - start

    return run


def cartpole_numpy_runner(args: EnvBenchArgs) -> Runner:
    """gymnasium's CartPole for ``numpy_steps`` steps, reset at 500 steps like CartPole-v1."""
    from gymnasium.envs.classic_control import CartPoleEnv

    env = CartPoleEnv()

    def run(call: int) -> float:
        actions = np.random.default_rng(call).integers(0, 2, args.numpy_steps)
        start = time.perf_counter()
        env.reset(seed=call)
        episode_steps = 0
        for action in actions:
            _, _, terminated, _, _ = env.step(int(action))
            episode_steps += 1
            if terminated or episode_steps == 500:
                env.reset()
                episode_steps = 0
        return time.perf_counter() - start

    return run


def print_header(args: EnvBenchArgs) -> None:
    print(
        f"# Snake {args.height}x{args.width} ({args.obs_mode} observations) and gymnax "
        f"CartPole-v1, uniformly random actions\n"
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, "
        f"{jax.device_count()} {jax.default_backend()} device(s), jax {jax.__version__}; "
        f"median of {args.repeats} calls after a warm-up\n"
    )
    print("| env | impl | games | scan steps | compile s | steps/s | steps/s per game | vs NumPy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")


def main(args: EnvBenchArgs) -> None:
    print_header(args)
    families = [snake_family(args), cartpole_family(args)]
    baseline_sps: dict[str, list[float]] = {family.name: [] for family in families}
    for num_envs in args.num_envs:
        num_steps = max(1, min(args.steps_per_call // num_envs, args.max_scan_steps))
        runners: dict[str, Runner] = {}
        compiles = {}
        for family in families:
            runners[f"{family.name} numpy"] = family.baseline
            runners[family.name], compiles[family.name] = jax_runner(
                family.game, num_envs, num_steps
            )
        times = measure(runners, args.repeats)
        for family in families:
            ours = [num_envs * num_steps / t for t in times[family.name]]
            theirs = [args.numpy_steps / t for t in times[f"{family.name} numpy"]]
            baseline_sps[family.name].extend(theirs)
            sps = num_envs * num_steps / statistics.median(times[family.name])
            ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
            print(
                f"| {family.name} | JAX | {num_envs} | {num_steps} | "
                f"{compiles[family.name]:.1f} | {sps:,.0f} | {sps / num_envs:,.0f} | "
                f"{ratio:,.1f}x |",
                flush=True,
            )
    for family in families:
        sps = statistics.median(baseline_sps[family.name])
        print(f"| {family.name} | {family.baseline_name} | 1 | - | - | {sps:,.0f} | - | 1x |")
    print(f"\npeak resident memory: {peak_rss_mib():,.0f} MiB")


if __name__ == "__main__":
    configure_jax()
    main(tyro.cli(EnvBenchArgs, description=__doc__))
