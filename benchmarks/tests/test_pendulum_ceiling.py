"""The Pendulum-v1 ceiling: its NumPy dynamics are gymnax's, and its DP and policy are sound."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import tyro

from benchmarks import pendulum_ceiling as pc


def test_numpy_dynamics_and_reward_match_gymnax():
    env, params = gymnax.make("Pendulum-v1")
    rng = np.random.default_rng(0)
    theta = rng.uniform(-7.0, 7.0, 256)
    omega = rng.uniform(-8.0, 8.0, 256)
    torque = rng.uniform(-2.0, 2.0, 256)

    def gymnax_step(th, om, u):
        state = env.reset_env(jax.random.key(0), params)[1].replace(theta=th, theta_dot=om)
        _, next_state, r, _, _ = env.step_env(jax.random.key(0), state, u[None], params)
        return next_state.theta, next_state.theta_dot, r

    th32, om32, u32 = (jnp.asarray(x, jnp.float32) for x in (theta, omega, torque))
    next_theta, next_omega, rewards = jax.jit(jax.vmap(gymnax_step))(th32, om32, u32)
    want_theta, want_omega = pc.step(theta, omega, torque)
    np.testing.assert_allclose(next_theta, want_theta, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(next_omega, want_omega, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rewards, pc.reward(theta, omega, torque), rtol=1e-5, atol=1e-5)


def test_interpolation_reproduces_grid_values_and_wraps_the_angle():
    grid = pc.make_grid(8, 5)
    value = np.arange(40, dtype=np.float32).reshape(8, 5)
    theta, omega = np.meshgrid(grid.theta, grid.omega, indexing="ij")
    np.testing.assert_allclose(pc.interpolate(value, pc.stencil(grid, theta, omega)), value)
    # Halfway between the last angle cell and the first (pi - a half step == -pi + ...).
    half = np.pi / 8
    got = pc.interpolate(value, pc.stencil(grid, np.array([np.pi - half]), np.array([-8.0])))
    assert got[0] == np.float32((value[-1, 0] + value[0, 0]) / 2)


def test_greedy_policy_beats_doing_nothing_and_its_value_is_close_to_its_return():
    grid = pc.make_grid(120, 61)
    torques = np.linspace(-2.0, 2.0, 9)
    values = pc.backward_induction(grid, torques)
    rng = np.random.default_rng(1)
    theta, omega = rng.uniform(-np.pi, np.pi, 200), rng.uniform(-1.0, 1.0, 200)
    greedy = pc.simulate_greedy(grid, values, torques, theta, omega)
    idle = np.zeros_like(theta)
    th, om = theta, omega
    for _ in range(pc.EPISODE_STEPS):
        idle += pc.reward(th, om, np.zeros_like(th))
        th, om = pc.step(th, om, np.zeros_like(th))
    assert greedy.mean() > idle.mean() + 500
    predicted = pc.interpolate(values[0], pc.stencil(grid, theta, omega))
    assert abs(predicted.mean() - greedy.mean()) < 0.1 * abs(greedy.mean())


def test_script_prints_both_estimates(capsys):
    flags = ["--theta-cells", "60", "--omega-cells", "31", "--torques", "5"]
    flags += ["--policy-torques", "9", "--episodes", "50"]
    assert pc.main(tyro.cli(pc.Args, args=flags)) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| DP")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| DP value at the starts",
        "| DP greedy policy, simulated",
    ]
    assert all(-1500 < float(row.split(" | ")[1].split()[0]) < -100 for row in rows)
