"""The best return any policy can get on Pendulum-v1, by dynamic programming.

    python -m benchmarks.pendulum_ceiling
    python -m benchmarks.pendulum_ceiling --theta-cells 360 --omega-cells 161 --episodes 2000

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

The dynamics and reward are gymnax 1.0.1's ``Pendulum.step_env`` written out in NumPy (float64);
``benchmarks/tests/test_pendulum_ceiling.py`` checks them against gymnax. The script prints one
table and exits 0; the default grid takes about 80 s and 2 GiB on two cores.
"""

from __future__ import annotations

import dataclasses
import time
from typing import NamedTuple

import numpy as np
import tyro

MAX_SPEED = 8.0
MAX_TORQUE = 2.0
DT = 0.05
GRAVITY = 10.0
MASS = 1.0
LENGTH = 1.0
EPISODE_STEPS = 200


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
    returns = np.zeros_like(theta)
    for t in range(EPISODE_STEPS):
        th, om, u = theta[:, None], omega[:, None], torques[None, :]
        next_value = interpolate(values[t + 1], stencil(grid, *step(th, om, u)))
        lookahead = reward(th, om, u) + gamma * next_value
        torque = torques[np.argmax(lookahead, axis=1)]
        returns += reward(theta, omega, torque)
        theta, omega = step(theta, omega, torque)
    return returns


def main(args: Args) -> int:
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
    returns = simulate_greedy(grid, values, policy_torques, theta0, omega0, args.gamma)
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main(tyro.cli(Args)))
