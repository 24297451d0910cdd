"""What bounds the returns of the Jumanji presets: the optimum and two baselines on the instances
the environments draw.

    python -m benchmarks.jumanji_bounds                       # 1,000 instances each
    python -m benchmarks.jumanji_bounds --instances 200

- **Knapsack-v1** (50 items, weights and values uniform in [0, 1], a budget of 12.5; the return is
  the value packed): the exact optimum of each instance (an integer program, ``scipy.optimize.
  milp``), the greedy heuristic (items by value per weight, each that still fits) and random
  play (a uniformly random item among those that fit, until none does). Bello et al. (2016,
  "Neural Combinatorial Optimization with Reinforcement Learning", Table 5) report 20.07 optimal
  and 19.24 greedy on 1,000 instances of the same distribution (their KNAP50).
- **Game2048-v1** (the return is the score: the sum of the tiles merged): random play, a
  uniformly random legal move each step until no move is legal.

Instances are the environments' own resets (``jax.random.key(i)`` for instance ``i``), so the
figures hold for what ``purerl train ppo --env jumanji/<Name>`` trains on. Needs
``pip install 'purerl[jumanji]'`` and scipy. Prints one table; exit 0.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import tyro


def knapsack_optimum(weights: np.ndarray, values: np.ndarray, budget: float) -> float:
    """The largest total value of items whose weights sum to at most ``budget`` (0-1 knapsack,
    solved exactly as an integer program)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(weights)
    result = milp(
        c=-np.asarray(values, float),
        constraints=LinearConstraint(np.asarray(weights, float)[None, :], -np.inf, budget),
        integrality=np.ones(n),
        bounds=Bounds(0, 1),
    )
    if not result.success:
        raise RuntimeError(f"milp failed: {result.message}")
    chosen = np.round(result.x).astype(bool)
    return float(np.asarray(values)[chosen].sum())


def knapsack_brute_force(weights: np.ndarray, values: np.ndarray, budget: float) -> float:
    """``knapsack_optimum`` by enumerating every subset (small instances only: the test's
    reference)."""
    best = 0.0
    for chosen in itertools.product((0, 1), repeat=len(weights)):
        mask = np.array(chosen, bool)
        if weights[mask].sum() <= budget:
            best = max(best, float(values[mask].sum()))
    return best


def knapsack_greedy(weights: np.ndarray, values: np.ndarray, budget: float) -> float:
    """Items in decreasing value per weight, each packed if it still fits."""
    total, left = 0.0, budget
    for i in np.argsort(-values / weights, kind="stable"):
        if weights[i] <= left:
            total += float(values[i])
            left -= float(weights[i])
    return total


def knapsack_random(weights: np.ndarray, values: np.ndarray, budget: float, rng) -> float:
    """A uniformly random item among those that still fit, until none does."""
    total, left = 0.0, budget
    free = np.ones(len(weights), bool)
    while True:
        fits = np.flatnonzero(free & (weights <= left))
        if fits.size == 0:
            return total
        i = rng.choice(fits)
        free[i] = False
        total += float(values[i])
        left -= float(weights[i])


def knapsack_instances(count: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Weights and values ``[count, items]`` of Jumanji's Knapsack-v1 resets, and its budget."""
    import jumanji

    env = jumanji.make("Knapsack-v1")
    keys = jax.vmap(jax.random.key)(jnp.arange(count))
    state, _ = jax.vmap(env.reset)(keys)
    return np.asarray(state.weights), np.asarray(state.values), float(env.total_budget)


def game2048_random_scores(count: int, max_steps: int = 20_000) -> np.ndarray:
    """Final scores of uniformly random legal play on Game2048-v1, one game per key."""
    import jumanji

    env = jumanji.make("Game2048-v1")

    def play(key):
        state, timestep = env.reset(key)

        def cond(carry):
            _, timestep, _, steps = carry
            return ~timestep.last() & (steps < max_steps)

        def body(carry):
            state, timestep, score, steps = carry
            key = jax.random.fold_in(state.key, steps)
            mask = timestep.observation.action_mask
            action = jax.random.choice(key, mask.shape[0], p=mask / mask.sum())
            state, timestep = env.step(state, action)
            return state, timestep, score + timestep.reward, steps + 1

        carry = (state, timestep, jnp.float32(0), jnp.int32(0))
        return jax.lax.while_loop(cond, body, carry)[2]

    keys = jax.vmap(jax.random.key)(jnp.arange(count))
    return np.asarray(jax.jit(jax.vmap(play))(keys))


@dataclasses.dataclass(frozen=True)
class BoundsArgs:
    instances: int = 1_000
    """Instances (resets) per environment."""


def main(args: BoundsArgs) -> None:
    weights, values, budget = knapsack_instances(args.instances)
    rng = np.random.default_rng(0)
    rows = {"optimum": [], "greedy": [], "random play": []}
    for w, v in zip(weights, values, strict=True):
        rows["optimum"].append(knapsack_optimum(w, v, budget))
        rows["greedy"].append(knapsack_greedy(w, v, budget))
        rows["random play"].append(knapsack_random(w, v, budget, rng))
    scores = game2048_random_scores(args.instances)
    print(f"| env | policy | mean return over {args.instances} instances | std |")
    print("|---|---|---:|---:|")
    for name, got in rows.items():
        print(f"| Knapsack-v1 | {name} | {np.mean(got):.2f} | {np.std(got):.2f} |")
    print(f"| Game2048-v1 | random play | {scores.mean():.1f} | {scores.std():.1f} |")


if __name__ == "__main__":
    main(tyro.cli(BoundsArgs, description=__doc__))
