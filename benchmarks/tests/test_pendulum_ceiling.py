"""The Pendulum-v1 ceiling: its NumPy dynamics are gymnax's, and its DP and policy are sound."""

import dataclasses

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


def test_episode_starts_are_where_a_ppo_run_starts_its_episodes(monkeypatch):
    """The zero-torque replay finds the observations a real run of the preset acts on at the
    start of each episode (two updates of 16 envs x 256 steps: episodes start at steps 0 and
    200 of every environment)."""
    import purerl
    import purerl.algos.ppo as ppo

    acted_on = []
    act = ppo.act

    def recording_act(network, params, obs, key):
        jax.debug.callback(lambda o: acted_on.append(np.asarray(o)), obs)
        return act(network, params, obs, key)

    monkeypatch.setattr(ppo, "act", recording_act)
    budget = 2 * 16 * 256
    purerl.train("ppo", env="Pendulum-v1", seed=3, normalize_obs=False, total_timesteps=budget)
    acted_on = np.stack(acted_on)  # [512, 16, 3]
    starts = pc.episode_starts(3, total_timesteps=budget)
    assert len(starts.theta) == 2 * 16 and starts.num_updates == 2
    first_obs = acted_on[[0, 200]].transpose(1, 0, 2).reshape(-1, 3)  # env-major, as returned
    np.testing.assert_array_equal(starts.theta, np.arctan2(first_obs[:, 1], first_obs[:, 0]))
    np.testing.assert_array_equal(starts.omega, first_obs[:, 2])
    np.testing.assert_array_equal(starts.update, np.tile([0, 1], 16))


def test_observation_normalisation_leaves_the_environment_stream_alone():
    """The replay leaves normalisation out; the preset's runs have it. Stepping both with the
    same keys and zero torque through a reset gives the same rewards, so the same states."""
    from purerl import algos, envs
    from purerl.rollout import PolicyStep, collect

    preset = algos.get("ppo").base_config("Pendulum-v1")
    assert preset.normalize_obs
    rewards = []
    for normalize in (True, False):
        env = envs.from_config(dataclasses.replace(preset, normalize_obs=normalize, num_envs=4))
        state, obs = env.reset(jax.random.key(7), env.default_params)
        zero = lambda o, k: PolicyStep(jnp.zeros((o.shape[0], 1)))  # noqa: E731
        rollout = collect(env, env.default_params, zero, state, obs, jax.random.key(8), 300)
        rewards.append(np.asarray(rollout.transitions.reward))
    np.testing.assert_array_equal(rewards[0], rewards[1])


def test_scored_episodes_are_the_window_of_the_table_statistic():
    from purerl.envs.stats import recent_mean_return

    rng = np.random.default_rng(2)
    update = np.sort(rng.integers(0, 40, 300))
    starts = pc.ScoredStarts(np.zeros(300), np.zeros(300), update, 40)
    per_episode = rng.normal(size=300)
    counts = np.bincount(update, minlength=40)
    means = np.bincount(update, weights=per_episode, minlength=40) / np.maximum(counts, 1)
    want = recent_mean_return(np.where(counts > 0, means, np.nan)[None], counts[None])[0]
    window = pc.scored(starts)
    assert window.sum() >= 100 and not window[0]
    np.testing.assert_allclose(per_episode[window].mean(), want, rtol=1e-12)


def test_script_rates_the_scored_episodes_of_each_run_seed(capsys):
    flags = ["--theta-cells", "60", "--omega-cells", "31", "--torques", "5"]
    flags += ["--policy-torques", "9", "--episodes", "50", "--run-seeds", "0"]
    flags += ["--run-timesteps", "1000000"]
    assert pc.main(tyro.cli(pc.Args, args=flags)) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 0 |")]
    assert len(rows) == 1
    cells = rows[0].strip("|").split("|")
    assert int(cells[1]) == 112  # 7 whole batches of the preset's 16 environments
    assert all(-1500 < float(cell) < -100 for cell in cells[2:])
