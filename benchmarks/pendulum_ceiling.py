"""The best return any policy can get on Pendulum-v1, by dynamic programming.

    python -m benchmarks.pendulum_ceiling
    python -m benchmarks.pendulum_ceiling --theta-cells 360 --omega-cells 161 --episodes 2000
    python -m benchmarks.pendulum_ceiling --run-seeds 0 1 2 3     # the table's seeds, too

Issue #18 asks PPO to reach -150 at 1M steps and quotes "about -130" as published. Whether
either figure is reachable depends on the best achievable mean return over Pendulum's random
starts (angle uniform in [-pi, pi], angular velocity uniform in [-1, 1]), which this script
estimates from both sides:

- **DP value**: backward induction over the 200-step episode on a (angle, angular velocity)
  grid with a discrete set of torques, the value between grid points read by bilinear
  interpolation. Its mean over the start distribution estimates the optimum.
- **DP policy, simulated**: the greedy policy of that value function (a one-step lookahead
  over a finer set of torques) run on the exact dynamics of gymnax's Pendulum-v1 from random
  starts. This is a return a real policy achieves, so the optimum is at least this.

With ``--run-seeds``, it also reports the best return on the exact starts of the episodes a
seed's training run is scored on: the last 100 or more episodes of the Pendulum-v1 PPO preset,
as the benchmark table's statistic takes them. Pendulum's episodes all last 200 steps and its
resets do not depend on the actions, so ``episode_starts`` replays a run's environment stream
(its keys as PPO draws them, zero torque) instead of training.

The dynamics and reward are gymnax 1.0.1's ``Pendulum.step_env`` written out in NumPy (float64);
``benchmarks/tests/test_pendulum_ceiling.py`` checks them against gymnax. The script prints one
table (two with ``--run-seeds``) and exits 0; the default grid takes about 80 s and 2 GiB on
two cores.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from purerl import algos
from purerl.core.program import init_agent
from purerl.core.rollout import PolicyStep, collect
from purerl.core.stats import FINAL_WINDOW_EPISODES

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
GRAVITY = 10.0
MASS = 1.0
LENGTH = 1.0
EPISODE_STEPS = 200
SETTLED_ANGLE = 0.2
"""Radians from upright within which the pole counts as balanced (``settle_step``)."""
SHORTFALL_STEPS = (25, 50, 100, EPISODE_STEPS)
WORST_FRACTION = 0.1
EARLY_STEPS = 25
NEAR_BOTTOM_ANGLE = 0.4
"""Radians from hanging straight down that ``near_bottom`` covers, either side."""
NEAR_BOTTOM_SPEED = 0.5
"""Angular velocities (either sign) that ``near_bottom`` covers."""
NEAR_BOTTOM_POINTS = 21


@dataclasses.dataclass(frozen=True)
class Args:
    """Grid, torques and the number of simulated episodes."""

    theta_cells: int = 720
    """Grid points over the angle's period [-pi, pi)."""
    omega_cells: int = 321
    """Grid points over the angular velocity's range [-8, 8]."""
    torques: int = 41
    """Evenly spaced torques in [-2, 2] that the backward induction maximises over."""
    policy_torques: int = 401
    """Evenly spaced torques the simulated greedy policy chooses from."""
    episodes: int = 10_000
    """Simulated episodes from random starts (the sampled policy returns' mean and spread)."""
    gamma: float = 1.0
    """Discount of the objective the backward induction maximises (1: the episode's return,
    which is what the table reports). Below 1 it gives the best policy for the objective a
    discounted learner optimises, still scored by its undiscounted return."""
    seed: int = 0
    run_seeds: tuple[int, ...] = ()
    """Seeds of the Pendulum-v1 PPO preset whose scored episodes to rate (the table reports 0-3)."""
    run_timesteps: int | None = None
    """Agent steps of the rated runs (default: the preset's 1M)."""
    compare_run: Path | None = None
    """A Pendulum-v1 run directory: each seed's greedy policy (its latest checkpoint) and the
    best policy on the same random starts, where the former falls short of the latter, and how
    their torques compare on states near hanging straight down."""


def angle_normalize(theta: np.ndarray) -> np.ndarray:
    return ((theta + np.pi) % (2 * np.pi)) - np.pi


def reward(theta: np.ndarray, omega: np.ndarray, torque: np.ndarray) -> np.ndarray:
    return -(angle_normalize(theta) ** 2 + 0.1 * omega**2 + 0.001 * torque**2)


def step(theta: np.ndarray, omega: np.ndarray, torque: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """gymnax Pendulum-v1's semi-implicit Euler step (the torque already within [-2, 2])."""
    accel = 3 * GRAVITY / (2 * LENGTH) * np.sin(theta) + 3.0 / (MASS * LENGTH**2) * torque
    new_omega = np.clip(omega + accel * DT, -MAX_SPEED, MAX_SPEED)
    return theta + new_omega * DT, new_omega


class Grid(NamedTuple):
    theta: np.ndarray  # [n_theta], spacing 2 pi / n_theta, periodic
    omega: np.ndarray  # [n_omega], from -MAX_SPEED to MAX_SPEED inclusive


def make_grid(theta_cells: int, omega_cells: int) -> Grid:
    theta = -np.pi + 2 * np.pi * np.arange(theta_cells) / theta_cells
    return Grid(theta, np.linspace(-MAX_SPEED, MAX_SPEED, omega_cells))


class Stencil(NamedTuple):
    """Where each query point falls on the periodic-padded value grid, and its weights."""

    flat: np.ndarray  # index of the lower-left corner in the padded, flattened grid
    w_theta: np.ndarray
    w_omega: np.ndarray


def stencil(grid: Grid, theta: np.ndarray, omega: np.ndarray) -> Stencil:
    n_theta, n_omega = len(grid.theta), len(grid.omega)
    pos_theta = (angle_normalize(theta) + np.pi) / (2 * np.pi) * n_theta
    i0 = np.clip(np.floor(pos_theta).astype(np.int64), 0, n_theta - 1)
    pos_omega = (
        (np.clip(omega, -MAX_SPEED, MAX_SPEED) + MAX_SPEED) / (2 * MAX_SPEED) * (n_omega - 1)
    )
    j0 = np.clip(np.floor(pos_omega).astype(np.int64), 0, n_omega - 2)
    return Stencil(
        flat=i0 * n_omega + j0,
        w_theta=(pos_theta - i0).astype(np.float32),
        w_omega=(pos_omega - j0).astype(np.float32),
    )


def interpolate(value: np.ndarray, where: Stencil) -> np.ndarray:
    """Bilinear read of ``value`` [n_theta, n_omega]; the angle wraps around."""
    n_omega = value.shape[1]
    padded = np.concatenate([value, value[:1]], axis=0).ravel()

    def along_omega(flat: np.ndarray) -> np.ndarray:
        return (1 - where.w_omega) * padded[flat] + where.w_omega * padded[flat + 1]

    low, high = along_omega(where.flat), along_omega(where.flat + n_omega)
    return (1 - where.w_theta) * low + where.w_theta * high


def backward_induction(grid: Grid, torques: np.ndarray, gamma: float = 1.0) -> list[np.ndarray]:
    """Optimal values V_t of the ``gamma``-discounted objective on the grid for
    t = 0..EPISODE_STEPS (V_200 = 0), float32."""
    theta, omega = np.meshgrid(grid.theta, grid.omega, indexing="ij")
    theta, omega, torque = theta[..., None], omega[..., None], torques[None, None, :]
    immediate = reward(theta, omega, torque).astype(np.float32)
    where = stencil(grid, *step(theta, omega, torque))
    values = [np.zeros(theta.shape[:2], np.float32)]
    for _ in range(EPISODE_STEPS):
        values.append(np.max(immediate + gamma * interpolate(values[-1], where), axis=-1))
    return values[::-1]


class Episodes(NamedTuple):
    """Per-step records of a batch of simulated episodes."""

    rewards: np.ndarray
    """[EPISODE_STEPS, E]"""
    theta: np.ndarray
    """[EPISODE_STEPS, E] the angle each step starts from."""
    torque: np.ndarray
    """[EPISODE_STEPS, E] the torque applied (within [-2, 2])."""


TorqueFn = Callable[[int, np.ndarray, np.ndarray], np.ndarray]
"""``(step, theta, omega) -> torque`` in [-2, 2], a policy on the true state."""


def simulate(torque_fn: TorqueFn, theta: np.ndarray, omega: np.ndarray) -> Episodes:
    """Episodes of ``torque_fn`` from the starts ``(theta, omega)`` on the exact dynamics."""
    rewards, angles, torques = [], [], []
    for t in range(EPISODE_STEPS):
        torque = torque_fn(t, theta, omega)
        rewards.append(reward(theta, omega, torque))
        angles.append(theta)
        torques.append(torque)
        theta, omega = step(theta, omega, torque)
    return Episodes(np.stack(rewards), np.stack(angles), np.stack(torques))


def greedy_torque(
    grid: Grid, values: list[np.ndarray], torques: np.ndarray, gamma: float = 1.0
) -> TorqueFn:
    """The one-step lookahead on ``values`` (discounted by ``gamma``) over ``torques``."""

    def torque_fn(t: int, theta: np.ndarray, omega: np.ndarray) -> np.ndarray:
        th, om, u = theta[:, None], omega[:, None], torques[None, :]
        next_value = interpolate(values[t + 1], stencil(grid, *step(th, om, u)))
        return torques[np.argmax(reward(th, om, u) + gamma * next_value, axis=1)]

    return torque_fn


def simulate_greedy(
    grid: Grid,
    values: list[np.ndarray],
    torques: np.ndarray,
    theta: np.ndarray,
    omega: np.ndarray,
    gamma: float = 1.0,
) -> np.ndarray:
    """Undiscounted returns of the one-step lookahead on ``values`` (discounted by ``gamma``)
    on the exact dynamics."""
    return simulate(greedy_torque(grid, values, torques, gamma), theta, omega).rewards.sum(0)


def observation(theta: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """gymnax Pendulum-v1's observation of the state: [E, 3] (cos, sin, angular velocity)."""
    return np.stack([np.cos(theta), np.sin(theta), omega], axis=-1).astype(np.float32)


def trained_torque(policy: Callable[[np.ndarray], np.ndarray]) -> TorqueFn:
    """A trained policy's action (clipped to [-2, 2], as the environment clips it)."""

    def torque_fn(t: int, theta: np.ndarray, omega: np.ndarray) -> np.ndarray:
        action = np.asarray(policy(observation(theta, omega)), np.float64).reshape(len(theta))
        return np.clip(action, -MAX_TORQUE, MAX_TORQUE)

    return torque_fn


def settle_step(episodes: Episodes, tolerance: float = SETTLED_ANGLE) -> np.ndarray:
    """[E] the first step from which the pole stays within ``tolerance`` of upright to the
    end of the episode (EPISODE_STEPS when it is not upright at the end)."""
    upright = np.abs(angle_normalize(episodes.theta)) < tolerance
    stays = np.cumprod(upright[::-1], axis=0)[::-1].astype(bool)  # upright from t to the end
    return np.where(stays.any(axis=0), np.argmax(stays, axis=0), EPISODE_STEPS)


class Shortfall(NamedTuple):
    """Where a policy's return falls short of the best policy's on the same starts."""

    trained: float
    """Mean return of the policy."""
    best: float
    """Mean return of the DP greedy policy."""
    by_step: dict[int, float]
    """Mean shortfall accumulated over the first k steps, for each k in SHORTFALL_STEPS."""
    worst_share: float
    """Fraction of the shortfall carried by the WORST_FRACTION of starts with the largest."""
    worst_abs_angle: float
    """Median |start angle| of those starts (pi: hanging straight down)."""
    settle: tuple[float, float]
    """Mean settle step of the policy and of the best policy."""
    settle_worst: tuple[float, float]
    """The same on the worst starts."""
    early_torque_worst: tuple[float, float]
    """Mean |torque| over the first EARLY_STEPS steps from the worst starts, of the policy and
    of the best policy (2: full torque throughout)."""


def shortfall(trained: Episodes, best: Episodes, theta0: np.ndarray) -> Shortfall:
    per_step = (best.rewards - trained.rewards).mean(axis=1)
    per_episode = (best.rewards - trained.rewards).sum(axis=0)
    worst = np.argsort(per_episode)[-max(1, int(WORST_FRACTION * len(per_episode))) :]
    settle_trained, settle_best = settle_step(trained), settle_step(best)
    return Shortfall(
        trained=float(trained.rewards.sum(0).mean()),
        best=float(best.rewards.sum(0).mean()),
        by_step={k: float(per_step[:k].sum()) for k in SHORTFALL_STEPS},
        worst_share=float(per_episode[worst].sum() / per_episode.sum()),
        worst_abs_angle=float(np.median(np.abs(angle_normalize(theta0[worst])))),
        settle=(float(settle_trained.mean()), float(settle_best.mean())),
        settle_worst=(float(settle_trained[worst].mean()), float(settle_best[worst].mean())),
        early_torque_worst=(
            float(np.abs(trained.torque[:EARLY_STEPS, worst]).mean()),
            float(np.abs(best.torque[:EARLY_STEPS, worst]).mean()),
        ),
    )


class NearBottom(NamedTuple):
    """How a policy's first torque compares with the best policy's on a grid of states near
    hanging straight down, where swing-ups from the hardest starts begin."""

    torque: tuple[float, float]
    """Mean |torque| of the policy and of the best policy."""
    same_direction: float
    """Share of the states where the policy pushes the way the best policy does."""
    gap: float
    """Mean |policy torque - best torque| (4: the opposite full torque everywhere)."""


def near_bottom(trained: TorqueFn, best: TorqueFn) -> NearBottom:
    """Both policies' torque at step 0 on a grid of NEAR_BOTTOM_POINTS x NEAR_BOTTOM_POINTS
    states within NEAR_BOTTOM_ANGLE of the bottom and NEAR_BOTTOM_SPEED of rest."""
    offset = np.linspace(-NEAR_BOTTOM_ANGLE, NEAR_BOTTOM_ANGLE, NEAR_BOTTOM_POINTS)
    speed = np.linspace(-NEAR_BOTTOM_SPEED, NEAR_BOTTOM_SPEED, NEAR_BOTTOM_POINTS)
    offset, speed = (grid.reshape(-1) for grid in np.meshgrid(offset, speed))
    theta = angle_normalize(np.pi + offset)
    ours, theirs = trained(0, theta, speed), best(0, theta, speed)
    return NearBottom(
        torque=(float(np.abs(ours).mean()), float(np.abs(theirs).mean())),
        same_direction=float((np.sign(ours) == np.sign(theirs)).mean()),
        gap=float(np.abs(ours - theirs).mean()),
    )


class ScoredStarts(NamedTuple):
    """Where the episodes a run is scored on start, and when each one ended."""

    theta: np.ndarray
    """[E] start angles of every finished episode."""
    omega: np.ndarray
    """[E] start angular velocities."""
    update: np.ndarray
    """[E] index of the update in which the episode finished."""
    num_updates: int


def episode_starts(seed: int, total_timesteps: int | None = None) -> ScoredStarts:
    """The start of every episode the Pendulum-v1 PPO preset's run of ``seed`` finishes
    (``total_timesteps``: a shorter run's, the preset's budget by default).

    Replays the run's environment stream: the agent's reset, then each update's rollout key
    drawn as ``make_ppo``'s update draws it from the loop's key, with zero torque (Pendulum's
    resets and episode lengths do not depend on the actions). The observation normalisation is
    left out so that the observations are the raw (cos, sin, angular velocity); it draws no
    random numbers. ``benchmarks/tests/test_pendulum_ceiling.py`` checks the replay against
    the starts a real PPO run acts on.
    """
    spec = algos.get("ppo")
    cfg = dataclasses.replace(spec.base_config("Pendulum-v1"), normalize_obs=False)
    if total_timesteps is not None:
        cfg = dataclasses.replace(cfg, total_timesteps=total_timesteps)
    env, algo = spec.make(cfg)
    agent = init_agent(algo, jnp.int32(seed))

    def zero_torque(obs, key):
        return PolicyStep(jnp.zeros((obs.shape[0], *env.spec.action_space.shape), jnp.float32))

    def one_update(carry, step):
        env_state, obs = carry
        rollout_key, _ = jax.random.split(jax.random.fold_in(agent.key, step))
        rollout = collect(
            env, env.default_params, zero_torque, env_state, obs, rollout_key, cfg.rollout_len
        )
        traj = rollout.transitions
        return (rollout.env_state, rollout.obs), (traj.obs, traj.terminated | traj.truncated)

    steps = jnp.arange(cfg.num_updates, dtype=jnp.int32)
    carry = (agent.state.env_state, agent.state.obs)
    _, (obs, done) = jax.jit(lambda c: jax.lax.scan(one_update, c, steps))(carry)
    obs = np.asarray(obs).reshape(-1, *obs.shape[2:])  # [U * T, B, 3]
    done = np.asarray(done).reshape(-1, done.shape[-1])  # [U * T, B]
    theta, omega, update = [], [], []
    for env_index in range(done.shape[1]):
        ends = np.nonzero(done[:, env_index])[0]
        begins = np.concatenate([[0], ends[:-1] + 1])
        start_obs = obs[begins, env_index]
        theta.append(np.arctan2(start_obs[:, 1], start_obs[:, 0]))
        omega.append(start_obs[:, 2])
        update.append(ends // cfg.rollout_len)
    return ScoredStarts(
        np.concatenate(theta).astype(np.float64),
        np.concatenate(omega).astype(np.float64),
        np.concatenate(update),
        cfg.num_updates,
    )


def scored(starts: ScoredStarts) -> np.ndarray:
    """[E] whether each episode is among those the table's statistic averages: the whole
    final updates that hold at least ``FINAL_WINDOW_EPISODES`` (as ``recent_mean_return``)."""
    counts = np.bincount(starts.update, minlength=starts.num_updates)
    from_end = np.cumsum(counts[::-1])
    reached = np.nonzero(from_end >= FINAL_WINDOW_EPISODES)[0]
    window = int(reached[0] + 1 if reached.size else starts.num_updates)
    return starts.update >= starts.num_updates - window


def main(args: Args) -> int:
    # A bad run directory fails at once, not after the backward induction.
    compared = None if args.compare_run is None else load_pendulum_run(args.compare_run)
    rng = np.random.default_rng(args.seed)
    theta0 = rng.uniform(-np.pi, np.pi, args.episodes)
    omega0 = rng.uniform(-1.0, 1.0, args.episodes)
    grid = make_grid(args.theta_cells, args.omega_cells)

    started = time.perf_counter()
    torques = np.linspace(-MAX_TORQUE, MAX_TORQUE, args.torques)
    values = backward_induction(grid, torques, args.gamma)
    dp_seconds = time.perf_counter() - started
    dp_value = interpolate(values[0], stencil(grid, theta0, omega0))

    started = time.perf_counter()
    policy_torques = np.linspace(-MAX_TORQUE, MAX_TORQUE, args.policy_torques)
    best_torque = greedy_torque(grid, values, policy_torques, args.gamma)
    best = simulate(best_torque, theta0, omega0)
    returns = best.rewards.sum(axis=0)
    sim_seconds = time.perf_counter() - started

    sem = returns.std() / np.sqrt(len(returns))
    print(
        f"Pendulum-v1, {args.episodes} random starts (seed {args.seed}), gamma {args.gamma}; grid "
        f"{args.theta_cells} x {args.omega_cells}, {args.torques} torques in the backward "
        f"induction ({dp_seconds:.0f} s), {args.policy_torques} in the policy "
        f"({sim_seconds:.0f} s)\n"
    )
    print("| estimate | mean return | per-episode std | std of a 100-episode mean |")
    print("|---|---:|---:|---:|")
    if args.gamma == 1.0:  # otherwise the value is of another objective than the return
        print(
            f"| DP value at the starts | {dp_value.mean():.1f} | {dp_value.std():.1f} | "
            f"{dp_value.std() / 10:.1f} |"
        )
    print(
        f"| DP greedy policy, simulated | {returns.mean():.1f} +- {sem:.1f} (s.e.) | "
        f"{returns.std():.1f} | {returns.std() / 10:.1f} |"
    )
    if args.run_seeds:
        print(
            "\nThe episodes each seed of the Pendulum-v1 PPO preset is scored on (its last 100 or "
            "more), rated with the table's statistic:\n"
        )
        print("| seed | scored episodes | DP value at their starts | DP greedy policy on them |")
        print("|---:|---:|---:|---:|")
        for seed in args.run_seeds:
            starts = episode_starts(seed, args.run_timesteps)
            window = scored(starts)
            theta, omega = starts.theta[window], starts.omega[window]
            value = interpolate(values[0], stencil(grid, theta, omega))
            achieved = simulate_greedy(grid, values, policy_torques, theta, omega, args.gamma)
            # Below gamma 1 the value is of the discounted objective, not a return.
            value_text = f"{value.mean():.1f}" if args.gamma == 1.0 else "-"
            print(
                f"| {seed} | {int(window.sum())} | {value_text} | {achieved.mean():.1f} |",
                flush=True,
            )
    if compared is not None:
        print_shortfalls(compared, args.compare_run, best, best_torque, theta0, omega0)
    return 0


def load_pendulum_run(run_dir: Path):
    """The latest checkpoint of a Pendulum-v1 run (``--compare-run``).

    Raises:
        SystemExit: with one line naming the problem, for a missing or unreadable run or one on
            another environment.
    """
    from purerl.config import ConfigError
    from purerl.run.checkpoint import CheckpointError
    from purerl.run.evaluate import load_agents

    try:
        run = load_agents(run_dir, "latest")
    except (CheckpointError, ConfigError) as err:
        raise SystemExit(f"error: --compare-run: {err}") from None
    if run.cfg.env != "Pendulum-v1":
        raise SystemExit(
            f"error: --compare-run needs a Pendulum-v1 run; {run_dir} trained {run.cfg.env}"
        )
    return run


def print_shortfalls(
    run,
    run_dir: Path,
    best: Episodes,
    best_torque: TorqueFn,
    theta0: np.ndarray,
    omega0: np.ndarray,
):
    """The tables of ``--compare-run``: one row per seed of the run in each."""
    from purerl.run.policy import Policy

    worst = f"worst {WORST_FRACTION:.0%}"
    print(
        f"\nThe greedy policy of each seed of {run_dir} (latest checkpoint, update {run.step}) "
        f"against the best policy, on the same {len(theta0)} starts. Shortfall: best minus "
        f"trained return, accumulated over the first k steps; the {worst} of starts are those "
        f"with the largest; settle: the first step from which the pole stays within "
        f"{SETTLED_ANGLE} rad of upright (trained / best); torque: mean |torque| over the first "
        f"{EARLY_STEPS} steps from the {worst} of starts (trained / best; 2 is full torque).\n"
    )
    by_step = " | ".join(f"shortfall by step {k}" for k in SHORTFALL_STEPS)
    print(
        f"| seed | trained | best | {by_step} | share of the {worst} | their median |start "
        f"angle| | settle | settle, {worst} | torque, {worst} |"
    )
    print("|---:" * (8 + len(SHORTFALL_STEPS)) + "|")
    seeds = np.asarray(run.agents.seed).tolist()
    near = []
    for seed_index, seed in enumerate(seeds):
        policy = trained_torque(
            Policy.from_agents(run.spec, run.cfg, run.algo, run.agents, seed_index)
        )
        near.append(near_bottom(policy, best_torque))
        found = shortfall(simulate(policy, theta0, omega0), best, theta0)
        steps = " | ".join(f"{found.by_step[k]:.1f}" for k in SHORTFALL_STEPS)
        print(
            f"| {seed} | {found.trained:.1f} | {found.best:.1f} | {steps} | "
            f"{found.worst_share:.0%} | {found.worst_abs_angle:.2f} | "
            f"{found.settle[0]:.1f} / {found.settle[1]:.1f} | "
            f"{found.settle_worst[0]:.1f} / {found.settle_worst[1]:.1f} | "
            f"{found.early_torque_worst[0]:.2f} / {found.early_torque_worst[1]:.2f} |",
            flush=True,
        )

    points = NEAR_BOTTOM_POINTS**2
    print(
        f"\nThe first torque of each seed's greedy policy and of the best policy on {points} "
        f"states within {NEAR_BOTTOM_ANGLE} rad of hanging straight down and "
        f"{NEAR_BOTTOM_SPEED} rad/s of rest (an even grid), where the swing-ups from the "
        f"hardest starts begin. Same direction: the share of those states where the trained "
        f"policy pushes the way the best one does; gap: mean |trained - best| torque.\n"
    )
    print("| seed | mean \\|torque\\| (trained / best) | same direction | gap |")
    print("|---:|---:|---:|---:|")
    for seed, found in zip(seeds, near, strict=True):
        print(
            f"| {seed} | {found.torque[0]:.2f} / {found.torque[1]:.2f} | "
            f"{found.same_direction:.0%} | {found.gap:.2f} |"
        )


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
