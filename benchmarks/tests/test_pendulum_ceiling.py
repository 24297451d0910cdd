"""The Pendulum-v1 ceiling: its NumPy dynamics are gymnax's, and its DP and policy are sound."""

import dataclasses
from types import SimpleNamespace

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
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
    import purerl.algos.onpolicy as onpolicy

    acted_on = []
    acting = onpolicy.acting

    def recording_acting(net, params, behave):
        act = acting(net, params, behave)

        def recording_act(memory, obs, key):
            jax.debug.callback(lambda o: acted_on.append(np.asarray(o)), obs)
            return act(memory, obs, key)

        return recording_act

    monkeypatch.setattr(onpolicy, "acting", recording_acting)
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
    from purerl.core.rollout import PolicyStep, collect

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
    from purerl.core.stats import recent_mean_return

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


def test_observations_are_gymnax_observations():
    env, params = gymnax.make("Pendulum-v1")
    rng = np.random.default_rng(4)
    theta, omega = rng.uniform(-7.0, 7.0, 64), rng.uniform(-8.0, 8.0, 64)

    def gymnax_obs(th, om):
        state = env.reset_env(jax.random.key(0), params)[1].replace(theta=th, theta_dot=om)
        return env.get_obs(state)

    want = jax.vmap(gymnax_obs)(jnp.asarray(theta, jnp.float32), jnp.asarray(omega, jnp.float32))
    np.testing.assert_allclose(pc.observation(theta, omega), want, rtol=1e-5, atol=1e-5)


def test_settle_step_is_where_the_pole_stays_upright_to_the_end():
    down, up = np.pi, 0.05
    columns = [
        np.full(pc.EPISODE_STEPS, up),  # upright throughout: 0
        np.r_[np.full(10, down), np.full(pc.EPISODE_STEPS - 10, up)],  # up from step 10
        np.r_[np.full(5, down), np.full(15, up), np.full(10, down), np.full(170, -up)],  # 30
        np.r_[np.full(pc.EPISODE_STEPS - 1, up), down],  # falls on the last step: never settled
        np.r_[np.full(50, down), np.full(150, up + 2 * np.pi)],  # a whole turn is upright too
    ]
    zeros = np.zeros((pc.EPISODE_STEPS, 5))
    episodes = pc.Episodes(zeros, np.stack(columns, axis=1), zeros)
    np.testing.assert_array_equal(pc.settle_step(episodes), [0, 10, 30, pc.EPISODE_STEPS, 50])


def test_shortfall_adds_up_over_steps_and_episodes():
    rng = np.random.default_rng(5)
    steps, count = pc.EPISODE_STEPS, 40
    best_rewards = -rng.uniform(0.0, 1.0, (steps, count))
    gap = np.zeros((steps, count))
    gap[:30, :4] = 2.0  # four starts lose 60 each in their first 30 steps
    gap[:, 4:] = 0.01  # every other start loses 2 spread over the episode
    theta0 = np.r_[np.full(4, 3.0), np.full(count - 4, 0.5)]
    angles = np.zeros((steps, count))
    best_torque = np.full((steps, count), 2.0)
    trained_torque = np.where(np.arange(steps)[:, None] < 10, -1.0, 0.5) * np.ones(count)
    trained_torque[:, 4:] = 2.0  # the worst four starts alone show the partial torque
    found = pc.shortfall(
        pc.Episodes(best_rewards - gap, angles, trained_torque),
        pc.Episodes(best_rewards, angles, best_torque),
        theta0,
    )
    total = (4 * 60 + 36 * 2) / count
    assert found.by_step[pc.EPISODE_STEPS] == pytest.approx(total)
    assert found.best - found.trained == pytest.approx(total)
    assert found.by_step[25] == pytest.approx((4 * 50 + 36 * 0.25) / count)
    assert found.worst_share == pytest.approx(4 * 60 / (4 * 60 + 36 * 2))  # 10 % = 4 starts
    assert found.worst_abs_angle == pytest.approx(3.0)
    assert found.settle == (0.0, 0.0)
    # |torque| 1 for 10 steps, then 0.5 for 15, from the worst starts
    assert found.early_torque_worst == pytest.approx(((10 * 1 + 15 * 0.5) / 25, 2.0))


def test_near_bottom_compares_the_first_torque_on_states_near_hanging_down():
    def best(t, theta, omega):  # push with the motion, away from the bottom at rest
        assert t == 0
        offset = pc.angle_normalize(theta - np.pi)
        assert np.all(np.abs(offset) <= pc.NEAR_BOTTOM_ANGLE + 1e-9)
        assert np.all(np.abs(omega) <= pc.NEAR_BOTTOM_SPEED)
        return np.where(omega != 0, 2.0 * np.sign(omega), np.where(offset >= 0, 2.0, -2.0))

    same = pc.near_bottom(best, best)
    assert same == pc.NearBottom(torque=(2.0, 2.0), same_direction=1.0, gap=0.0)
    opposite = pc.near_bottom(lambda t, theta, omega: -best(t, theta, omega), best)
    assert opposite.same_direction == 0.0 and opposite.gap == pytest.approx(4.0)
    half = pc.near_bottom(lambda t, theta, omega: 0.5 * best(t, theta, omega), best)
    assert half.torque == pytest.approx((1.0, 2.0))
    assert half.same_direction == 1.0 and half.gap == pytest.approx(1.0)
    # Pushing one way everywhere agrees on the half of the grid where the best pushes that way.
    one_way = pc.near_bottom(lambda t, theta, omega: np.full_like(theta, 2.0), best)
    rows = pc.NEAR_BOTTOM_POINTS
    agree = (rows // 2) * rows + (rows // 2 + 1)  # omega > 0, and omega 0 at offset >= 0
    assert one_way.same_direction == pytest.approx(agree / rows**2)


@pytest.fixture(scope="module")
def untrained_pendulum_run(tmp_path_factory):
    """Two seeds of a one-update Pendulum-v1 PPO run: policies that have not learned."""
    import purerl

    run_dir = tmp_path_factory.mktemp("pendulum") / "run"
    purerl.train("ppo", env="Pendulum-v1", num_envs=4, rollout_len=32, num_minibatches=2,
                 num_epochs=1, hidden_sizes=(16,), total_timesteps=128, num_seeds=2,
                 run_dir=run_dir)  # fmt: skip
    return run_dir


def test_script_rates_each_seed_of_a_run_against_the_best_policy(untrained_pendulum_run, capsys):
    flags = ["--theta-cells", "60", "--omega-cells", "31", "--torques", "5"]
    flags += ["--policy-torques", "9", "--episodes", "50"]
    flags += ["--compare-run", str(untrained_pendulum_run)]
    assert pc.main(tyro.cli(pc.Args, args=flags)) == 0
    out = capsys.readouterr().out
    first, near = out.split("hanging straight down and")

    def seed_rows(text):
        lines = text.splitlines()
        return [line.strip("|").split("|") for line in lines if line[:4] in ("| 0 ", "| 1 ")]

    rows = seed_rows(first)
    assert len(rows) == 2
    for cells in rows:
        trained, best, *by_step = (float(cell) for cell in cells[1:7])
        # An untrained policy never swings the pole up: far below the best, short of it at
        # every horizon, by the difference of the returns over the whole episode.
        assert trained < best - 300
        assert 0 < by_step[0] < by_step[1] < by_step[2] < by_step[3]
        assert by_step[3] == pytest.approx(best - trained, abs=0.11)
        torques = [float(x) for x in cells[-1].split("/")]
        assert len(torques) == 2 and all(0.0 <= torque <= 2.0 for torque in torques)
    rows = seed_rows(near)
    assert len(rows) == 2
    for _, torques, same, gap in rows:
        trained, best = (float(x) for x in torques.split("/"))
        # An untrained policy's torque is near 0 (its Gaussian's mean starts small); the
        # best policy pushes hard from near the bottom, so the gap is close to its torque.
        assert trained < 0.5 < 1.5 < best <= 2.0
        assert float(gap) == pytest.approx(best, abs=trained + 1e-6)
        assert 0 <= float(same.strip(" %")) <= 100


def test_script_refuses_a_missing_run_or_another_environment(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="--compare-run: run directory .* does not exist"):
        pc.main(tyro.cli(pc.Args, args=["--compare-run", str(tmp_path / "none")]))
    cartpole = SimpleNamespace(cfg=SimpleNamespace(env="CartPole-v1"))
    monkeypatch.setattr("purerl.run.evaluate.load_agents", lambda run_dir, which: cartpole)
    with pytest.raises(SystemExit, match="needs a Pendulum-v1 run; .* trained CartPole-v1"):
        pc.main(tyro.cli(pc.Args, args=["--compare-run", str(tmp_path)]))
