"""The Jumanji bounds' knapsack solvers against brute force on small instances."""

import numpy as np
import pytest

from benchmarks.jumanji_bounds import (
    knapsack_brute_force,
    knapsack_greedy,
    knapsack_optimum,
    knapsack_random,
)

pytest.importorskip("scipy")


def test_the_optimum_is_brute_force_and_bounds_the_heuristics():
    rng = np.random.default_rng(0)
    for _ in range(20):
        weights, values = rng.uniform(0, 1, (2, 10))
        budget = 2.5
        best = knapsack_brute_force(weights, values, budget)
        assert knapsack_optimum(weights, values, budget) == pytest.approx(best, abs=1e-9)
        assert knapsack_greedy(weights, values, budget) <= best + 1e-9
        assert knapsack_random(weights, values, budget, rng) <= best + 1e-9


def test_greedy_takes_the_best_ratios_that_fit():
    weights = np.array([0.5, 0.6, 0.5, 0.7])
    values = np.array([0.7, 0.9, 0.7, 0.2])
    # Ratios 1.4, 1.5, 1.4, 0.29: item 1 first; items 0 and 2 no longer fit in the 0.4 left,
    # nor item 3. Items 0 and 2 together pay more.
    assert knapsack_greedy(weights, values, 1.0) == pytest.approx(0.9)
    assert knapsack_optimum(weights, values, 1.0) == pytest.approx(1.4)
