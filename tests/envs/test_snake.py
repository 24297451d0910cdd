"""Snake: transition-by-transition equality with the NumPy reference, invariants, rendering."""

import functools

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import envs
from purerl.core.env import Discrete
from purerl.envs.snake import (
    FEATURE_NAMES,
    PALETTE,
    SnakeState,
    draw_uniforms,
    make_snake,
    nth_free_cell,
)
from tests.envs.snake_numpy import DELTAS, SnakeReference


def snake_cells(state: SnakeState) -> list[int]:
    """Flat cells of the snake in one unbatched ``state``, head first."""
    size = state.body.shape[0]
    return [int(state.body[(state.head - i) % size]) for i in range(int(state.length))]


def build_state(env, cells, direction, food) -> SnakeState:
    """A game with the snake on ``cells`` ((row, col), head first)."""
    flat = [r * env.width + c for r, c in cells]
    body = np.zeros(env.num_cells, np.int32)
    body[: len(flat)] = flat[::-1]
    occupied = np.zeros(env.num_cells, bool)
    occupied[flat] = True
    return SnakeState(
        *map(jnp.asarray, (body, len(flat) - 1, len(flat), direction)),
        food=jnp.int32(food[0] * env.width + food[1]),
        occupied=jnp.asarray(occupied),
        time=jnp.int32(0),
        steps_since_food=jnp.int32(0),
    )


def hamiltonian_direction(ref: SnakeReference) -> int:
    """Next direction along a cycle through every cell (for an even number of rows).

    Column 0 is the way back up; the other columns are swept row by row in a serpentine.
    """
    row, col = ref.body[0]
    if col == 0:
        return 1 if row == 0 else 0
    if row % 2 == 0:
        return 1 if col < ref.width - 1 else 2
    return 3 if col > 1 or row == ref.height - 1 else 2


def greedy_direction(ref: SnakeReference, rng: np.random.Generator) -> int:
    """A safe direction that gets closest to the food, ties broken at random."""
    row, col = ref.body[0]
    food = divmod(ref.food, ref.width)
    best, best_distance = int(rng.integers(4)), None
    for direction in rng.permutation(4):
        to = (row + DELTAS[direction][0], col + DELTAS[direction][1])
        on_board = 0 <= to[0] < ref.height and 0 <= to[1] < ref.width
        if direction == (ref.direction + 2) % 4 or not on_board or to in ref.body[:-1]:
            continue
        distance = abs(to[0] - food[0]) + abs(to[1] - food[1])
        if best_distance is None or distance < best_distance:
            best, best_distance = int(direction), distance
    return best


def choose_action(ref, rng, epsilon, cycle) -> int:
    if rng.random() < epsilon:
        direction = int(rng.integers(4))
    else:
        direction = hamiltonian_direction(ref) if cycle else greedy_direction(ref, rng)
    if ref.action_mode == "absolute":
        return direction
    turn = (direction - ref.direction) % 4
    return {3: 0, 0: 1, 1: 2}.get(turn, int(rng.integers(3)))


def check_state(state, ref: SnakeReference):
    cells = [divmod(c, ref.width) for c in snake_cells(state)]
    assert cells == ref.body
    assert int(state.direction) == ref.direction
    assert int(state.food) == (-1 if ref.food is None else ref.food)
    assert (int(state.time), int(state.steps_since_food)) == (ref.time, ref.steps_since_food)
    np.testing.assert_array_equal(
        state.occupied.reshape(ref.height, ref.width), ref.grid_obs()[..., 0]
    )


def ref_obs(ref: SnakeReference, obs_mode: str) -> np.ndarray:
    return ref.grid_obs() if obs_mode == "grid" else ref.features()


@functools.cache
def compiled_game(shape, action_mode, obs_mode):
    """``(env, reset, step)``; ``step`` also returns the uniforms it drew from its key.

    Parameters are arguments, so runs with other rewards or limits reuse the compilation.
    """
    env = make_snake("Snake-test", *shape, obs_mode, "float32", action_mode)

    def step(key_data, state, action, params):
        key = jax.random.wrap_key_data(key_data)
        return env.step(key, state, action, params) + (draw_uniforms(key),)

    return env, jax.jit(env.reset), jax.jit(step)


def compare_with_reference(
    shape, action_mode, obs_mode, num_steps, seed, epsilon=0.2, cycle=False, **params
):
    """Steps the JAX game and the reference side by side; returns what the run covered."""
    env, reset_fn, step_fn = compiled_game(shape, action_mode, obs_mode)
    params = make_snake("Snake-test", *shape, **params).default_params
    ref = SnakeReference(*shape, action_mode, *params)
    reset_key, steps_key = jax.random.split(jax.random.key(seed))
    all_key_data = np.asarray(jax.random.key_data(jax.random.split(steps_key, num_steps)))
    state, obs = reset_fn(reset_key, params)
    ref.reset(np.asarray(draw_uniforms(reset_key)))
    rng = np.random.default_rng(seed)
    seen = {"wins": 0, "deaths": 0, "truncations": 0, "reversals": 0, "max_length": 1}
    for t, key_data in enumerate(all_key_data):
        np.testing.assert_array_equal(obs, ref_obs(ref, obs_mode))
        check_state(state, ref)
        action = choose_action(ref, rng, epsilon, cycle)
        seen["reversals"] += action_mode == "absolute" and action == (ref.direction + 2) % 4
        state, step, uniforms = jax.device_get(step_fn(key_data, state, action, params))
        reward, terminated, truncated = ref.step(action, uniforms[0])
        assert (step.reward, step.terminated, step.truncated) == (reward, terminated, truncated), t
        np.testing.assert_array_equal(step.final_obs, ref_obs(ref, obs_mode))
        seen["max_length"] = max(seen["max_length"], len(ref.body))
        seen["wins"] += terminated and reward > 0
        seen["deaths"] += terminated and reward < 0
        seen["truncations"] += truncated
        if terminated or truncated:
            ref.reset(uniforms)
        obs = step.obs
    return seen


@pytest.mark.parametrize(
    "shape, action_mode, obs_mode",
    [((10, 10), "absolute", "grid"), ((6, 6), "relative", "features")],
)
@pytest.mark.slow
def test_matches_reference_under_greedy_and_random_play(shape, action_mode, obs_mode):
    seen = compare_with_reference(shape, action_mode, obs_mode, num_steps=600, seed=sum(shape))
    assert seen["deaths"] >= 3 and seen["max_length"] >= 8, seen
    if action_mode == "absolute":
        assert seen["reversals"] >= 10, seen


@pytest.mark.parametrize(
    "shape, action_mode, obs_mode",
    [
        ((2, 2), "absolute", "grid"),
        ((2, 3), "relative", "features"),
        ((4, 3), "absolute", "features"),
    ],
)
@pytest.mark.slow
def test_matches_reference_through_wins_on_small_boards(shape, action_mode, obs_mode):
    seen = compare_with_reference(
        shape, action_mode, obs_mode, num_steps=400, seed=7, epsilon=0.05, cycle=True
    )
    assert seen["wins"] >= 3 and seen["deaths"] >= 1, seen


def test_matches_reference_with_truncation_and_step_penalty():
    seen = compare_with_reference(
        (4, 3), "absolute", "features", 300, 3, 0.5, step_penalty=0.25, max_steps_without_food=5
    )
    assert seen["truncations"] >= 3, seen


def test_reversing_goes_straight_on_and_the_head_may_enter_the_leaving_tail_cell():
    # On 3 x 3: head (1, 1) moving right, the body curling round to the tail at (2, 1), below it.
    env = make_snake("Snake-test", 3, 3)
    state = build_state(env, [(1, 1), (1, 0), (2, 0), (2, 1)], direction=1, food=(0, 0))
    transition = jax.jit(env.transition)
    moved, reward, terminated, _ = transition(state, 2, 0.5, env.default_params)
    assert not bool(terminated) and float(reward) == 0.0
    assert snake_cells(jax.device_get(moved)) == [7, 4, 3, 6]
    # Left is the reverse of right: the snake goes straight on to (1, 2).
    moved, _, terminated, _ = transition(state, 3, 0.5, env.default_params)
    assert not bool(terminated) and snake_cells(jax.device_get(moved))[0] == 5
    relative = make_snake("Snake-test", 3, 3, action_mode="relative")
    turned, _, terminated, _ = jax.jit(relative.transition)(state, 2, 0.5, env.default_params)
    assert not bool(terminated) and int(turned.direction) == 2
    assert snake_cells(jax.device_get(turned))[0] == 7


def test_fatal_move_keeps_the_board_and_a_win_fills_it():
    env = make_snake("Snake-test", 2, 2)
    transition = jax.jit(env.transition)
    state = build_state(env, [(0, 0)], direction=0, food=(1, 1))
    moved, reward, terminated, truncated = transition(state, 0, 0.5, env.default_params)
    assert (float(reward), bool(terminated), bool(truncated)) == (-1.0, True, False)
    np.testing.assert_array_equal(env.observe(moved), env.observe(state))
    state = build_state(env, [(0, 1), (0, 0), (1, 0)], direction=1, food=(1, 1))
    moved, reward, terminated, _ = transition(state, 2, 0.5, env.default_params)
    assert (float(reward), bool(terminated), int(moved.food)) == (1.0, True, -1)
    assert bool(moved.occupied.all()) and int(moved.length) == 4


def test_nth_free_cell_enumerates_free_cells_in_row_major_order():
    rng = np.random.default_rng(0)
    find = jax.jit(jax.vmap(nth_free_cell, in_axes=(None, 0, None, None)), static_argnums=(2, 3))
    for height, width in [(2, 3), (10, 10), (16, 16)]:
        occupied = rng.random(height * width) < 0.6
        free = np.flatnonzero(~occupied)
        # u in the middle of the k-th of num_free equal intervals picks the k-th free cell.
        u = ((np.arange(free.size) + 0.5) / free.size).astype(np.float32)
        np.testing.assert_array_equal(find(occupied, u, height, width), free)
    assert int(nth_free_cell(jnp.ones(6, bool), jnp.float32(0.3), 2, 3)) == -1


def test_reset_spreads_start_direction_and_food_over_the_board():
    env = make_snake("Snake-test", 3, 4)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    states, _ = reset(jax.random.split(jax.random.key(0), 4000), env.default_params)
    start, food = np.asarray(states.body[:, 0]), np.asarray(states.food)
    assert np.all(start != food)
    # 4000 draws over 12 cells and 4 directions: every count within 20 % of its mean.
    for values, bins in [(start, 12), (food, 12), (np.asarray(states.direction), 4)]:
        counts = np.bincount(values, minlength=bins)
        assert counts.min() > 0.8 * 4000 / bins and counts.max() < 1.2 * 4000 / bins, counts


@functools.cache
def random_play(shape, action_mode, num_envs=8, num_steps=128):
    """``envs.make`` Snake under uniform random actions: ``run(seed, params)`` (jitted) gives
    the inner states, steps and the observations acted on, each ``[T, B, ...]``."""
    env = envs.make("Snake-v0", num_envs, height=shape[0], width=shape[1], action_mode=action_mode)
    num_actions = env.spec.action_space.num_actions

    def run(seed, params):
        reset_key, steps_key = jax.random.split(jax.random.key(seed))
        state, obs = env.reset(reset_key, params)

        def step(carry, key):
            state, obs = carry
            action_key, env_key = jax.random.split(key)
            action = jax.random.randint(action_key, (num_envs,), 0, num_actions)
            state, out = env.step(env_key, state, action, params)
            return (state, out.obs), (state.inner, out)

        return jax.lax.scan(step, (state, obs), jax.random.split(steps_key, num_steps))[1]

    return env, jax.jit(run)


def body_cells(states: SnakeState) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``[..., C]`` of batched states counted from the head, and which are live."""
    size = states.body.shape[-1]
    slots = (states.head[..., None] - np.arange(size)) % size
    return np.take_along_axis(states.body, slots, -1), np.arange(size) < states.length[..., None]


@hypothesis.given(
    game=st.sampled_from([((2, 3), "relative"), ((4, 4), "absolute"), ((10, 10), "absolute")]),
    seed=st.integers(0, 2**16),
    step_penalty=st.sampled_from([0.0, 0.05]),
    max_steps_without_food=st.integers(1, 40),
)
@hypothesis.settings(max_examples=12)
@pytest.mark.slow
def test_invariants_hold_under_random_play(game, seed, step_penalty, max_steps_without_food):
    env, run = random_play(*game)
    params = env.default_params._replace(
        step_penalty=step_penalty, max_steps_without_food=max_steps_without_food
    )
    states, steps = jax.device_get(run(seed, params))
    size = states.occupied.shape[-1]
    cells, live = body_cells(states)
    # Every live body cell covers exactly one occupied cell: no overlaps, nothing else.
    cover = np.sum((cells[..., None] == np.arange(size)) & live[..., None], axis=-2)
    np.testing.assert_array_equal(cover, states.occupied)
    assert not np.any(np.take_along_axis(states.occupied, states.food[..., None], -1))
    done = steps.terminated | steps.truncated
    assert not np.any(steps.terminated & steps.truncated)
    assert np.all(states.steps_since_food < max_steps_without_food)
    eaten = np.zeros(done.shape[1], int)
    for t in range(done.shape[0]):
        eaten = np.where(done[t], 0, eaten + (steps.reward[t] > 0))
        np.testing.assert_array_equal(states.length[t], 1 + eaten)
    # The observation shows the state: body, head and food planes.
    grid = steps.obs.reshape(*done.shape, size, 3)
    np.testing.assert_array_equal(grid[..., 0], states.occupied)
    np.testing.assert_array_equal(grid[..., 1], cells[..., :1] == np.arange(size))
    np.testing.assert_array_equal(grid[..., 2], states.food[..., None] == np.arange(size))
    np.testing.assert_array_equal(steps.episode.done, done)
    assert np.all(steps.episode.lengths[done] >= 1)


def test_render_paints_cells_in_their_colours():
    env = make_snake("Snake-test", 3, 4)
    state = build_state(env, [(1, 1), (1, 0), (2, 0)], direction=1, food=(0, 3))
    image = np.asarray(jax.jit(env.render, static_argnames="scale")(state, scale=5))
    assert image.shape == (15, 20, 3) and image.dtype == np.uint8
    colours = {(1, 1): 2, (1, 0): 1, (2, 0): 1, (0, 3): 3, (0, 0): 0, (2, 3): 0}
    for (row, col), colour in colours.items():
        block = image[5 * row : 5 * row + 5, 5 * col : 5 * col + 5]
        assert np.all(block == PALETTE[colour]), (row, col)


def test_make_vectorises_snake_and_reports_episodes():
    env = envs.make("Snake-v0", num_envs=8)
    assert env.spec.obs_shape == (10, 10, 3) and env.spec.obs_dtype == "float32"
    assert env.spec.action_space == Discrete(4) and env.spec.num_envs == 8
    assert {"Snake-6x6-v0", "Snake-8x8-v0", "Snake-16x16-v0"} <= set(envs.list_envs())
    _, run = random_play((10, 10), "absolute")
    states, steps = jax.device_get(run(0, env.default_params))
    assert steps.obs.shape == (128, 8, 10, 10, 3)
    finished = steps.episode.done
    assert finished.sum() >= 10
    # A random snake on 10 x 10 dies long before 400 steps without food: every episode ends in
    # -1 plus the food it ate, and it lasted as long as the state's step counter said.
    returns = steps.episode.returns[finished]
    assert np.all(returns >= -1) and np.all(returns == np.round(returns))
    previous_time = np.concatenate([np.zeros((1, 8), int), states.time[:-1]])
    np.testing.assert_array_equal(steps.episode.lengths[finished], previous_time[finished] + 1)


def test_options_select_observations_actions_and_size():
    features = envs.make("Snake-8x8-v0", 2, obs_mode="features", action_mode="relative")
    assert features.spec.obs_shape == (len(FEATURE_NAMES),)
    assert features.spec.action_space == Discrete(3)
    small = envs.make("Snake-v0", 2, height=5, width=7, obs_dtype="uint8")
    state, obs = small.reset(jax.random.key(0), small.default_params)
    assert obs.shape == (2, 5, 7, 3) and obs.dtype == jnp.uint8
    assert small.spec.obs_dtype == "uint8" and int(obs.sum()) == 2 * 3
    assert envs.make("Snake-6x6-v0").default_params.max_steps_without_food == 4 * 36
    for bad in [{"height": 1}, {"obs_mode": "pixels"}, {"max_steps_without_food": 0}]:
        with pytest.raises(ValueError):
            envs.make("Snake-v0", 2, **bad)
    with pytest.raises(TypeError):
        envs.make("Snake-v0", 2, bogus=1)
