"""A plain NumPy/Python Snake with the rules of ``purerl/envs/snake.py``, one game at a time.

Written the obvious way (a head-first list of cells, Python sets) so that it can check the JAX
version transition by transition. Randomness comes in from outside as uniform numbers in
``[0, 1)``: given the numbers the JAX version drew, both must make the same moves; the
environment benchmark (``python -m benchmarks.envs``) feeds it NumPy's. Never imports JAX.
It lives with the tests, outside the wheel: nothing in the package uses it.
"""

from __future__ import annotations

import numpy as np

DELTAS = ((-1, 0), (0, 1), (1, 0), (0, -1))
"""(d_row, d_col) of up, right, down, left."""


def scaled_index(u: float, n: int) -> int:
    """``floor(u * n)`` computed in float32 like the JAX version, capped at ``n - 1``."""
    return min(int(np.floor(np.float32(u) * np.float32(n))), n - 1)


class SnakeReference:
    """One game. ``body`` lists the snake's ``(row, col)`` cells, head first."""

    def __init__(
        self,
        height: int = 10,
        width: int = 10,
        action_mode: str = "absolute",
        step_penalty: float = 0.0,
        max_steps_without_food: int | None = None,
    ):
        self.height, self.width = height, width
        self.action_mode = action_mode
        self.step_penalty = np.float32(step_penalty)
        self.max_steps_without_food = max_steps_without_food or 4 * height * width

    def cell(self, row: int, col: int) -> int:
        return row * self.width + col

    def free_cells(self) -> list[int]:
        taken = {self.cell(r, c) for r, c in self.body}
        return [c for c in range(self.height * self.width) if c not in taken]

    def reset(self, uniforms) -> None:
        """Starts a game from three uniforms: food cell, start cell, direction."""
        start = scaled_index(uniforms[1], self.height * self.width)
        self.body = [divmod(start, self.width)]
        self.direction = scaled_index(uniforms[2], 4)
        self.food = self.free_cells()[scaled_index(uniforms[0], self.height * self.width - 1)]
        self.time = 0
        self.steps_since_food = 0

    def turn(self, action: int) -> int:
        """Direction of the next move; reversing is ignored (the snake goes straight on)."""
        if self.action_mode == "relative":
            return (self.direction + (-1, 0, 1)[action]) % 4
        return self.direction if action == (self.direction + 2) % 4 else action

    def step(self, action: int, food_uniform: float) -> tuple[np.float32, bool, bool]:
        """Moves once: ``(reward, terminated, truncated)``; does not reset."""
        direction = self.turn(int(action))
        d_row, d_col = DELTAS[direction]
        row, col = self.body[0][0] + d_row, self.body[0][1] + d_col
        self.time += 1
        self.steps_since_food += 1
        ate = self.food is not None and (row, col) == divmod(self.food, self.width)
        # The tail moves on unless the snake grows; the head may take its place.
        rest = self.body if ate else self.body[:-1]
        on_board = 0 <= row < self.height and 0 <= col < self.width
        died = not on_board or (row, col) in rest
        won = False
        if not died:
            self.body = [(row, col), *rest]
            self.direction = direction
            if ate:
                self.steps_since_food = 0
                free = self.free_cells()
                won = not free
                self.food = None if won else free[scaled_index(food_uniform, len(free))]
        reward = np.float32(ate) - np.float32(died) - self.step_penalty
        terminated = died or won
        truncated = not terminated and self.steps_since_food >= self.max_steps_without_food
        return reward, terminated, truncated

    def grid_obs(self, dtype=np.float32) -> np.ndarray:
        """``[H, W, 3]`` planes: body (head included), head, food."""
        obs = np.zeros((self.height, self.width, 3), dtype)
        for row, col in self.body:
            obs[row, col, 0] = 1
        obs[self.body[0][0], self.body[0][1], 1] = 1
        if self.food is not None:
            obs[self.food // self.width, self.food % self.width, 2] = 1
        return obs

    def features(self) -> np.ndarray:
        """float32 ``[14]`` in the order of ``purerl.envs.snake.FEATURE_NAMES``."""
        row, col = self.body[0]
        dangers = []
        for turn in (0, -1, 1):
            d_row, d_col = DELTAS[(self.direction + turn) % 4]
            to = (row + d_row, col + d_col)
            on_board = 0 <= to[0] < self.height and 0 <= to[1] < self.width
            # The tail's cell is safe: the tail moves on, as it is never the food.
            dangers.append(not on_board or (to in self.body and to != self.body[-1]))
        food_row, food_col = (row, col) if self.food is None else divmod(self.food, self.width)
        direction = [d == self.direction for d in range(4)]
        food_side = [food_row < row, food_col > col, food_row > row, food_col < col]
        # Scaled by float32 reciprocals, as the JAX version does.
        offsets = [
            np.float32(food_row - row) * np.float32(1 / self.height),
            np.float32(food_col - col) * np.float32(1 / self.width),
            np.float32(len(self.body)) * np.float32(1 / (self.height * self.width)),
        ]
        return np.array([*dangers, *direction, *food_side, *offsets], np.float32)
