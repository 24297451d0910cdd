"""Evaluation during training (``--eval-every``): it changes nothing of the training, its records
land at the updates asked for in every sink (a resumed run's too), and its mean return is the one
a plain loop over the same episodes computes."""

import dataclasses
import json
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces

from purerl import algos, envs
from purerl.algos import Algo
from purerl.core import program, schedule
from purerl.core.report import ChunkReport
from purerl.options import options_for
from purerl.run import rundir, session
from purerl.run.evaluate import load_agents, make_evaluation
from purerl.run.plots import Curves, compare_runs, draw_trial_graphs
from purerl.run.setup import TrainRequest
from tests.helpers import TINY_ARGS, leaves_equal, metric_rows, one_error_line, run_cli

EVAL_KEYS = ("eval/return", "eval/length")


def without_evals(rows: list[dict]) -> list[dict]:
    for row in rows:
        for key in EVAL_KEYS:
            row.pop(key, None)
            row["per_seed"].pop(key, None)
    return rows


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory) -> tuple[Path, str]:
    """The session's ``tiny_run`` (same flags, same compiled chunks) with an evaluation of 3
    episodes every 2 updates, TensorBoard and the progress lines on: its directory and standard
    output."""
    run_dir = tmp_path_factory.mktemp("evaluated") / "run"
    flags = [flag for flag in TINY_ARGS if flag != "--no-progress"]
    result = run_cli(
        "train", "ppo", *flags, "--num-seeds", "2", "--run-dir", run_dir,
        "--checkpoint-every", "1", "--keep-checkpoints", "10", "--updates-per-chunk", "1",
        "--eval-every", "2", "--eval-episodes", "3", "--tensorboard",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    return run_dir, result.stdout


@pytest.mark.slow
def test_evaluating_changes_nothing_of_the_training(evaluated_run, tiny_run):
    run_dir, _ = evaluated_run
    assert without_evals(metric_rows(run_dir)) == metric_rows(tiny_run)
    with_eval, without = load_agents(run_dir), load_agents(tiny_run)
    assert leaves_equal(with_eval.agents, without.agents)


@pytest.mark.slow
def test_evaluations_reach_every_sink_at_the_updates_asked_for(evaluated_run):
    run_dir, stdout = evaluated_run
    rows = metric_rows(run_dir)
    evaluated = [row for row in rows if "eval/return" in row]
    assert [row["update"] for row in evaluated] == [2, 4, 6]
    for row in evaluated:
        per_seed = row["per_seed"]["eval/return"]
        assert len(per_seed) == 2 and row["eval/return"] == pytest.approx(np.mean(per_seed))
        # CartPole pays 1 per step: a return is its episode's length.
        assert per_seed == row["per_seed"]["eval/length"] and min(per_seed) >= 3
    assert all("eval/return" not in row["per_seed"] for row in rows if row not in evaluated)
    lines = [line for line in stdout.splitlines() if line.startswith("update ")]
    assert [("| eval " in line) for line in lines] == [False, True] * 3
    assert f"eval {evaluated[0]['eval/return']:.1f}" in lines[1]
    from purerl.run.tensorboard import read_scalars

    scalars = read_scalars(run_dir / "tensorboard")
    assert [step for step, _ in scalars["eval/return"]] == [r["env_steps"] for r in evaluated]
    np.testing.assert_allclose(
        [v for _, v in scalars["eval/return/seed_1"]],
        [r["per_seed"]["eval/return"][1] for r in evaluated],
        rtol=1e-6,
    )
    run = rundir.load_run(run_dir)
    np.testing.assert_array_equal(run.evaluations.updates, [2, 4, 6])
    assert run.summary.eval_time_s > 0


@pytest.mark.slow
def test_a_resumed_run_evaluates_where_and_as_an_uninterrupted_one(evaluated_run, tmp_path):
    run_dir, _ = evaluated_run
    spec = algos.get("ppo")
    cfg = dataclasses.replace(spec.smoke, num_seeds=2)
    options = dict(progress=False, updates_per_chunk=1, checkpoint_every=1, keep_checkpoints=10)
    options = dict(options, eval_every=2, eval_episodes=3)

    class StopAfter3:
        signum, chunks = None, 0

        def requested(self) -> bool:
            self.chunks += 1
            self.signum = 2 if self.chunks == 3 else None
            return self.chunks == 3

    cut = tmp_path / "cut"
    opts = options_for(spec)(run_dir=str(cut), **options)
    stopped = session.run(TrainRequest(spec, cfg, opts), StopAfter3())
    assert stopped.summary.num_updates == 3
    np.testing.assert_array_equal(stopped.result.evaluations["update"], [2])
    resumed = session.run(TrainRequest(spec, cfg, options_for(spec)(**options), resume=cut))
    np.testing.assert_array_equal(resumed.result.evaluations["update"], [4, 6])
    assert metric_rows(cut) == metric_rows(run_dir)


def test_chunks_end_at_every_evaluation_from_any_start():
    assert schedule.cut_at_multiples([4, 4, 4], 0, 6) == [4, 2, 2, 4]
    assert schedule.cut_at_multiples([5, 5], 3, 4) == [1, 4, 4, 1]  # a resume from update 3
    assert schedule.cut_at_multiples([3, 3], 0, 3) == [3, 3]
    assert schedule.cut_at_multiples([10], 0, 20) == [10]
    # One chunk length where the evaluations divide the run; a resumed run ends its chunks
    # where an uninterrupted one does.
    assert schedule.plan_evaluated_chunks(976, None, 61) == [61] * 16
    assert schedule.plan_evaluated_chunks(100, None, 30) == [5] * 20
    assert schedule.plan_evaluated_chunks(100, None, 30, start=47) == [3] + [5] * 10
    assert schedule.plan_evaluated_chunks(100, 8, 30, start=47) == [1, 8, 4, 4, 8, 8, 8, 2, 6, 4]


class Line:
    """Walk left (action 0) or right (1) from a random start in 1..7 to the goal at 0, paying 1
    per step; an episode is cut after ``default_params`` steps."""

    default_params = 30

    def reset(self, key, params):
        position = jax.random.randint(key, (), 1, 8)
        return jnp.float32([position]), {"position": position, "time": jnp.int32(0)}

    def step(self, key, state, action, params):
        state = {"position": state["position"] + 2 * action - 1, "time": state["time"] + 1}
        obs = jnp.float32([state["position"]])
        terminated, truncated = state["position"] == 0, state["time"] >= params
        reset_obs, reset_state = self.reset(key, params)
        done = terminated | truncated
        next_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), reset_state, state)
        info = {"final_observation": obs}
        return jnp.where(done, reset_obs, obs), next_state, -1.0, terminated, truncated, info

    def observation_space(self, params):
        return spaces.Box(-jnp.inf, jnp.inf, (1,), jnp.float32)

    def action_space(self, params):
        return spaces.Discrete(2)


class PolicyState(NamedTuple):
    env_state: jax.Array


def reference_episode(position: int, limit: int) -> tuple[float, int]:
    """Return and length of one episode of ``Line`` from ``position``, always stepping left."""
    ret, steps = 0.0, 0
    while True:
        position, steps, ret = position - 1, steps + 1, ret - 1.0
        if position == 0 or steps >= limit:
            return ret, steps


@pytest.mark.slow
def test_the_mean_return_is_the_first_episode_of_each_environment_under_the_greedy_policy():
    num_episodes = 8

    def act(state, obs, key, greedy):
        # Greedy walks to the goal; the sampled policy would walk away until cut off.
        return jnp.full(obs.shape[:1], 0 if greedy else 1, jnp.int32)

    env = envs.make(Line(), num_episodes)
    agents = program.Agent(
        PolicyState(jnp.zeros(2)),
        jax.vmap(jax.random.key)(jnp.arange(2)),
        jnp.arange(2, dtype=jnp.int32),
    )
    # Capped at 5 steps: episodes from 6 or 7 do not finish and are left out of the mean, and
    # the ones that end early go on to episodes of their own that must not count.
    max_steps = 5
    metrics = jax.jit(make_evaluation(Algo(None, None, act), env, max_steps))(agents, 10)
    for seed in range(2):
        # The environments the evaluation after update 10 plays start where these do.
        key = program.evaluation_key(agents.key[seed], 10)
        _, obs = env.reset(jax.random.split(key)[0], env.default_params)
        starts = np.asarray(obs[:, 0]).astype(int)
        episodes = [reference_episode(p, Line.default_params) for p in starts]
        finished = [(r, n) for r, n in episodes if n <= max_steps]
        assert len({n for _, n in finished}) > 1 and len(finished) < num_episodes
        expected = np.mean([r for r, _ in finished]), np.mean([n for _, n in finished])
        got = float(metrics["eval/return"][seed]), float(metrics["eval/length"][seed])
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_evaluations_written_as_rows_are_read_back_and_drawn(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rundir.write_json(run_dir / "config.json", {"algo": "ppo", "config": {"env": "X-v0"}})
    writer = rundir.MetricsWriter(run_dir, 10)
    for first in (0, 2):
        metrics = {
            "episode/return": np.full((2, 2), 5.0, np.float32),
            "episode/count": np.ones((2, 2), np.int32),
        }
        evals = {"eval/return": np.float32([first, np.nan]), "eval/length": np.float32([3, 4])}
        writer.write(ChunkReport(first, metrics, 1.0, 1.0, evals))
    writer.close()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert ["eval/return" in row for row in rows] == [False, True, False, True]
    # The mean over seeds leaves out a seed whose episodes did not finish (NaN -> null).
    assert rows[1]["eval/return"] == 0.0 and rows[3]["per_seed"]["eval/return"] == [2.0, None]
    run = rundir.load_run(run_dir)
    np.testing.assert_array_equal(run.evaluations.updates, [2, 4])
    np.testing.assert_array_equal(run.evaluations.frames, [20, 40])
    np.testing.assert_array_equal(run.evaluations.returns, [[0.0, 2.0], [np.nan, np.nan]])
    drawn = draw_trial_graphs(run_dir, Curves.of_run(run))
    assert all(path.stat().st_size > 0 for path in drawn)
    assert compare_runs([run_dir], tmp_path / "compare.png")[0]["run"] == "run"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--eval-every", "-1"], "--eval-every must lie in [0, "),
        (["--eval-episodes", "0"], "--eval-episodes must lie in [1, "),
    ],
)
def test_bad_evaluation_flags_exit_2_with_one_line(args, message):
    one_error_line(run_cli("train", "ppo", *args), message)
