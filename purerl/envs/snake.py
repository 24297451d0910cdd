"""Snake on an ``H x W`` grid as a pure JAX environment (ids ``Snake-v0``, ``Snake-6x6-v0`` ...).

Rules (the repository's ``tests/envs/snake_numpy.py`` implements the same ones in NumPy, step by
step):

- Cells are numbered row-major, ``cell = row * W + col``, row 0 at the top.
- Start: a snake of length 1 on a uniformly random cell, facing a uniformly random direction,
  food on a uniformly random other cell.
- Absolute actions (default): 0 up, 1 right, 2 down, 3 left. The direction opposite to the
  current one is ignored and the snake goes straight on: reversing into the neck would be an
  instant death, and ignoring it at length 1 too keeps one rule for every length. Relative
  actions (``action_mode="relative"``): 0 turn left, 1 straight on, 2 turn right.
- Each step the head moves one cell. On the food the snake grows by one (its tail stays), gets
  +1 and new food appears. Otherwise the tail leaves its cell in the same step, so the head may
  enter the cell the tail is leaving. Leaving the grid or entering any other body cell ends the
  episode (terminated) with -1; the snake does not move on that step. Filling the board ends
  it too (terminated, with the food's +1).
- ``max_steps_without_food`` steps in a row without eating truncate the episode (default
  ``4 H W``: ample to reach any free cell, short enough to end a policy that circles forever).
- Every step also costs ``step_penalty`` (default 0).
- Food goes on the ``k``-th free cell in row-major order, ``k = floor(u * num_free)`` with ``u``
  uniform in ``[0, 1)``: uniform over the free cells, from a single random number.

Observations: ``obs_mode="grid"`` gives ``[H, W, 3]`` planes (body including the head, head,
food) of 0/1 in ``obs_dtype`` (float32 or uint8); ``obs_mode="features"`` gives the float32
vector of ``FEATURE_NAMES``. Auto-resets in ``step``: ``Step.obs`` is then the first observation
of the next episode and ``Step.final_obs`` the one that ended the episode.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.env import Discrete, EnvSpec, Step, no_episodes
from purerl.core.types import Array, Key

DIRECTION_DELTAS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)
"""``(d_row, d_col)`` of up, right, down, left: clockwise, so a right turn is ``+1 mod 4``."""
RELATIVE_TURNS = np.array([-1, 0, 1], np.int32)
"""Direction change of the relative actions: left, straight on, right."""
FEATURE_NAMES = (
    *("danger_straight", "danger_left", "danger_right"),
    *("dir_up", "dir_right", "dir_down", "dir_left"),
    *("food_up", "food_right", "food_down", "food_left"),
    *("food_drow", "food_dcol", "length"),
)
"""Feature observation: danger = that move would end the episode; ``food_d*`` is the food's
offset from the head over the board size; ``length`` is the snake's length over ``H W``."""
PALETTE = np.array([[24, 24, 24], [46, 160, 67], [250, 204, 21], [220, 38, 38]], np.uint8)
"""Render colours of empty cells, body, head and food."""
NUM_UNIFORMS = 3
"""Random numbers a step or a reset uses: food cell, start cell, start direction."""


class SnakeParams(NamedTuple):
    """Parameters that may change without recompiling (traced under ``jit``)."""

    step_penalty: float = 0.0
    """Subtracted from the reward of every step."""
    max_steps_without_food: int = 400
    """Steps in a row without eating that truncate the episode."""


class SnakeState(NamedTuple):
    """One game; every field is a fixed-shape int32 array except ``occupied``.

    ``body[(head - i) % (H W)]`` is the i-th cell of the snake counted from the head, for
    ``i < length``: a ring buffer, so a move writes one slot instead of shifting the body.
    """

    body: Array
    """int32 ``[H W]`` ring buffer of body cells."""
    head: Array
    """int32 slot of the head in ``body``."""
    length: Array
    """int32 cells in the snake."""
    direction: Array
    """int32 direction of the last move (0 up, 1 right, 2 down, 3 left)."""
    food: Array
    """int32 food cell; -1 once the board is full."""
    occupied: Array
    """bool ``[H W]`` row-major occupancy grid of the body (head included), for O(1) checks."""
    time: Array
    """int32 steps taken in this episode."""
    steps_since_food: Array
    """int32 steps since the snake last ate (or since the start)."""


def draw_uniforms(key: Key) -> Array:
    """float32 ``[NUM_UNIFORMS]`` in ``[0, 1)``: food cell, start cell, start direction.

    A step uses the first to place food and all three for an auto-reset: it never needs both,
    as a step that ends the episode either did not eat or filled the board. They come from two
    random 32-bit words (24 bits each for the cells, 8 for the direction): each word costs about
    one Threefry evaluation, so two words halve the random numbers four uniforms would draw.
    """
    words = jax.random.bits(key, (2,))
    fields = jnp.stack([words[0] >> 8, words[1] >> 8, words[1] & 0xFF])
    return fields.astype(jnp.float32) * jnp.asarray([2**-24, 2**-24, 2**-8], jnp.float32)


def scaled_index(u: Array, n: Array | int) -> Array:
    """``floor(u * n)`` as int32, in ``[0, n)`` for ``u`` in ``[0, 1)`` (float32 arithmetic)."""
    return jnp.minimum(jnp.floor(u * jnp.float32(n)).astype(jnp.int32), n - 1)


def inclusive_prefix_sum(x: Array) -> Array:
    """Prefix sums along the last axis of a short int32 ``[..., n]`` as one masked reduce.

    ``jnp.cumsum`` lowers to a ``reduce_window`` spanning the whole axis, ``O(n^2)`` work on
    XLA:CPU too; on the short axes used here a masked sum does it in a single fusion.
    """
    n = x.shape[-1]
    lower = np.tril(np.ones((n, n), bool))
    return jnp.sum(jnp.where(lower, x[..., None, :], 0), axis=-1, dtype=jnp.int32)


def nth_free_cell(occupied: Array, u: Array, height: int, width: int) -> Array:
    """The ``floor(u * num_free)``-th free cell of a bool ``[H W]`` grid in row-major order.

    Finds the row first and then the column within it, so the cost is ``O(H W + H^2 + W^2)``
    rather than ``O((H W)^2)`` for a prefix sum over all cells (``jnp.cumsum`` over the flat
    grid, see ``inclusive_prefix_sum``).

    Returns:
        int32 cell, or -1 when no cell is free.
    """
    chex.assert_shape(occupied, (height * width,))
    free = (~occupied).reshape(height, width).astype(jnp.int32)
    row_counts = jnp.sum(free, axis=1, dtype=jnp.int32)
    rows_upto = inclusive_prefix_sum(row_counts)
    num_free = rows_upto[-1]
    k = scaled_index(u, num_free)
    # The k-th free cell is in the first row whose inclusive count exceeds k, so its index is
    # the number of rows whose count is still <= k; likewise for the column within the row.
    row = jnp.sum(rows_upto <= k, dtype=jnp.int32)
    k_in_row = k - jnp.sum(jnp.where(jnp.arange(height) < row, row_counts, 0))
    cols_upto = inclusive_prefix_sum(free[jnp.minimum(row, height - 1)])
    col = jnp.sum(cols_upto <= k_in_row, dtype=jnp.int32)
    return jnp.where(num_free > 0, row * width + col, -1)


@dataclasses.dataclass(frozen=True)
class SnakeEnv:
    """Snake on a ``height x width`` board; see the module docstring for the rules."""

    spec: EnvSpec
    height: int = 10
    width: int = 10
    obs_mode: str = "grid"
    obs_dtype: str = "float32"
    action_mode: str = "absolute"
    params: SnakeParams = SnakeParams()
    pure: bool = True

    @property
    def num_cells(self) -> int:
        return self.height * self.width

    @property
    def default_params(self) -> SnakeParams:
        return self.params

    def reset(self, key: Key, params: SnakeParams) -> tuple[SnakeState, Array]:
        state = self.initial_state(draw_uniforms(key))
        return state, self.observe(state)

    def initial_state(self, uniforms: Array) -> SnakeState:
        """A fresh game from ``draw_uniforms``' numbers (food, start cell, direction)."""
        start = scaled_index(uniforms[1], self.num_cells)
        # Food on the k-th of the other cells: skip over the start cell.
        food = scaled_index(uniforms[0], self.num_cells - 1)
        cells = jnp.arange(self.num_cells, dtype=jnp.int32)
        return SnakeState(
            body=jnp.zeros(self.num_cells, jnp.int32).at[0].set(start),
            head=jnp.int32(0),
            length=jnp.int32(1),
            direction=scaled_index(uniforms[2], 4),
            food=food + (food >= start),
            occupied=cells == start,
            time=jnp.int32(0),
            steps_since_food=jnp.int32(0),
        )

    def step(
        self, key: Key, state: SnakeState, action: Array, params: SnakeParams
    ) -> tuple[SnakeState, Step]:
        """One move of one game, auto-resetting when the episode ends."""
        chex.assert_rank(action, 0)
        uniforms = draw_uniforms(key)
        moved, reward, terminated, truncated = self.transition(state, action, uniforms[0], params)
        done = terminated | truncated
        fresh = self.initial_state(uniforms)
        next_state = jax.tree.map(lambda f, m: jnp.where(done, f, m), fresh, moved)
        final_obs = self.observe(moved)
        return next_state, Step(
            obs=self.observe(next_state),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            valid=jnp.ones((), bool),
            episode=no_episodes(reward),
        )

    def next_direction(self, direction: Array, action: Array) -> Array:
        """The direction of this move: the action, except that reversing goes straight on."""
        if self.action_mode == "relative":
            return (direction + jnp.asarray(RELATIVE_TURNS)[action]) % 4
        action = jnp.asarray(action, jnp.int32)
        return jnp.where(action == (direction + 2) % 4, direction, action)

    def transition(
        self, state: SnakeState, action: Array, food_u: Array, params: SnakeParams
    ) -> tuple[SnakeState, Array, Array, Array]:
        """One move without reset: ``(state, reward, terminated, truncated)``, scalars.

        On a fatal move the board stays as it was (only the counters advance), so the final
        observation shows the position the snake died from.
        """
        size = self.num_cells
        direction = self.next_direction(state.direction, action)
        head_cell = state.body[state.head]
        row = head_cell // self.width + jnp.asarray(DIRECTION_DELTAS[:, 0])[direction]
        col = head_cell % self.width + jnp.asarray(DIRECTION_DELTAS[:, 1])[direction]
        off_board = (row < 0) | (row >= self.height) | (col < 0) | (col >= self.width)
        cell = jnp.clip(row, 0, self.height - 1) * self.width + jnp.clip(col, 0, self.width - 1)
        ate = (cell == state.food) & ~off_board
        tail = state.body[(state.head - state.length + 1) % size]
        # The tail leaves its cell in this move unless the snake grows.
        occupied = state.occupied.at[tail].set(ate)
        died = off_board | occupied[cell]
        occupied = occupied.at[cell].set(True)
        length = state.length + ate
        food = jnp.where(ate, nth_free_cell(occupied, food_u, self.height, self.width), state.food)
        steps_since_food = jnp.where(ate, 0, state.steps_since_food + 1)
        moved = SnakeState(
            # Slot head + 1 is outside the live body unless the board is full, so writing it
            # unconditionally is harmless on a fatal move.
            body=state.body.at[(state.head + 1) % size].set(cell),
            head=jnp.where(died, state.head, (state.head + 1) % size),
            length=jnp.where(died, state.length, length),
            direction=jnp.where(died, state.direction, direction),
            food=jnp.where(died, state.food, food),
            occupied=jnp.where(died, state.occupied, occupied),
            time=state.time + 1,
            steps_since_food=steps_since_food,
        )
        terminated = died | (length == size)
        truncated = ~terminated & (steps_since_food >= params.max_steps_without_food)
        reward = ate.astype(jnp.float32) - died.astype(jnp.float32) - params.step_penalty
        return moved, jnp.asarray(reward, jnp.float32), terminated, truncated

    def observe(self, state: SnakeState) -> Array:
        """``[H, W, 3]`` planes in ``obs_dtype``, or float32 ``[len(FEATURE_NAMES)]``."""
        if self.obs_mode == "features":
            return self.features(state)
        cells = jnp.arange(self.num_cells, dtype=jnp.int32)
        head_cell = state.body[state.head]
        planes = jnp.stack([state.occupied, cells == head_cell, cells == state.food], axis=-1)
        return planes.reshape(self.height, self.width, 3).astype(self.obs_dtype)

    def features(self, state: SnakeState) -> Array:
        """float32 ``[len(FEATURE_NAMES)]`` summary of the head's surroundings and the food."""
        head_cell = state.body[state.head]
        tail = state.body[(state.head - state.length + 1) % self.num_cells]
        row, col = head_cell // self.width, head_cell % self.width
        straight_left_right = (state.direction + np.array([0, -1, 1])) % 4
        deltas = jnp.asarray(DIRECTION_DELTAS)[straight_left_right]
        to_row, to_col = row + deltas[:, 0], col + deltas[:, 1]
        off_board = (to_row < 0) | (to_row >= self.height) | (to_col < 0) | (to_col >= self.width)
        target = jnp.clip(to_row, 0, self.height - 1) * self.width
        target = target + jnp.clip(to_col, 0, self.width - 1)
        # Entering the tail's cell is safe: it is never the food, so the tail always moves on.
        danger = off_board | (state.occupied[target] & (target != tail))
        has_food = state.food >= 0
        food_row = jnp.where(has_food, state.food // self.width, row)
        food_col = jnp.where(has_food, state.food % self.width, col)
        return jnp.concatenate(
            [
                danger,
                jnp.arange(4) == state.direction,
                jnp.stack([food_row < row, food_col > col, food_row > row, food_col < col]),
                # Multiplying by float32 reciprocals (rather than dividing) is what XLA would
                # do anyway; spelling it out lets the NumPy reference match bit for bit.
                jnp.stack([food_row - row, food_col - col, state.length]).astype(jnp.float32)
                * jnp.asarray([1 / self.height, 1 / self.width, 1 / self.num_cells], jnp.float32),
            ]
        ).astype(jnp.float32)

    def render(
        self, state: SnakeState, params: SnakeParams | None = None, scale: int = 16
    ) -> Array:
        """uint8 RGB image ``[H * scale, W * scale, 3]`` of one game (``PALETTE`` colours)."""
        del params
        cells = jnp.arange(self.num_cells, dtype=jnp.int32)
        colour = jnp.where(state.occupied, 1, jnp.where(cells == state.food, 3, 0))
        colour = jnp.where(cells == state.body[state.head], 2, colour)
        image = jnp.asarray(PALETTE)[colour].reshape(self.height, 1, self.width, 1, 3)
        image = jnp.broadcast_to(image, (self.height, scale, self.width, scale, 3))
        return image.reshape(self.height * scale, self.width * scale, 3)


OBS_MODES = ("grid", "features")
ACTION_MODES = ("absolute", "relative")


MAX_BOARD = 256
"""Largest board side accepted (a 256 x 256 grid observation is 786k floats per game)."""


def make_snake(
    env_id: str,
    height: int = 10,
    width: int = 10,
    obs_mode: str = "grid",
    obs_dtype: str = "float32",
    action_mode: str = "absolute",
    step_penalty: float = 0.0,
    max_steps_without_food: int | None = None,
) -> SnakeEnv:
    """Builds one Snake game; the keyword arguments are ``envs.make`` options.

    Args:
        env_id: the id to report in the spec.
        height, width: board size (each at least 2).
        obs_mode: ``grid`` (``[H, W, 3]`` planes) or ``features`` (``FEATURE_NAMES``).
        obs_dtype: dtype of grid observations, ``float32`` or ``uint8`` (both hold 0/1).
        action_mode: ``absolute`` (4 directions) or ``relative`` (left, straight, right).
        step_penalty: subtracted from every step's reward.
        max_steps_without_food: truncation limit; None for ``4 * height * width``.
    """
    sizes = (height, width)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in sizes):
        raise ValueError(f"height and width must be whole numbers, got {height!r} x {width!r}")
    if not 2 <= min(sizes) <= max(sizes) <= MAX_BOARD:
        raise ValueError(
            f"the board must be 2 x 2 to {MAX_BOARD} x {MAX_BOARD}, got {height} x {width}"
        )
    if not isinstance(step_penalty, int | float) or isinstance(step_penalty, bool):
        raise ValueError(f"step_penalty must be a number, got {step_penalty!r}")
    if max_steps_without_food is not None and not (
        isinstance(max_steps_without_food, int) and max_steps_without_food >= 1
    ):
        raise ValueError(
            "max_steps_without_food must be a positive whole number, got "
            f"{max_steps_without_food!r}"
        )
    if obs_mode not in OBS_MODES or action_mode not in ACTION_MODES:
        raise ValueError(
            f"obs_mode must be one of {OBS_MODES} and action_mode one of {ACTION_MODES}, "
            f"got {obs_mode!r} and {action_mode!r}"
        )
    if obs_dtype not in ("float32", "uint8") or (obs_mode == "features" and obs_dtype != "float32"):
        raise ValueError(f"obs_dtype must be float32, or uint8 for grid observations: {obs_dtype}")
    limit = 4 * height * width if max_steps_without_food is None else max_steps_without_food
    if limit < 1:
        raise ValueError(f"max_steps_without_food must be positive, got {limit}")
    grid = obs_mode == "grid"
    spec = EnvSpec(
        id=env_id,
        obs_shape=(height, width, 3) if grid else (len(FEATURE_NAMES),),
        obs_dtype=obs_dtype,
        action_space=Discrete(4 if action_mode == "absolute" else 3),
    )
    params = SnakeParams(float(step_penalty), int(limit))
    return SnakeEnv(spec, height, width, obs_mode, obs_dtype, action_mode, params)
