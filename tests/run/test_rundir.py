"""Reading run directories (finished, in progress, not runs) and the statistics they feed."""

import json
import math
import shutil

import numpy as np
import pytest

from purerl.run.compare import (
    comparison_table,
    final_return,
    moving_average,
    run_table_row,
    steps_per_second,
)
from purerl.run.rundir import NotARunError, load_run
from tests.helpers import learning_curves, write_synthetic_run


def reference_moving_average(values, window):
    """Plain-loop definition: mean of the finite values among the last ``window`` points."""
    out = []
    for t in range(len(values)):
        recent = [v for v in values[max(0, t - window + 1) : t + 1] if math.isfinite(v)]
        out.append(sum(recent) / len(recent) if recent else math.nan)
    return np.array(out)


@pytest.mark.parametrize("window", [1, 2, 3, 5, 100, 10**20])
@pytest.mark.parametrize(
    "values",
    [
        [],
        [4.0],
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
        [np.nan, 2.0, np.nan, np.nan, np.nan, 8.0, 1.0, np.nan],
        [np.nan, np.nan, np.nan],
        [500.0] * 3 + [0.25, -3.0, np.inf, 7.5],
    ],
)
def test_moving_average_matches_a_plain_loop(values, window):
    expected = reference_moving_average(values, window)
    np.testing.assert_allclose(moving_average(np.array(values), window), expected, rtol=1e-12)


def test_moving_average_by_hand_and_along_the_last_axis():
    # window 2 over [1, nan, 3, 5]: [1/1, 1/1 (nan skipped), 3/1, (3+5)/2].
    values = np.array([[1.0, np.nan, 3.0, 5.0], [2.0, 2.0, 2.0, 2.0]])
    np.testing.assert_allclose(moving_average(values, 2), [[1.0, 1.0, 3.0, 4.0], [2.0] * 4])
    with pytest.raises(ValueError, match="window must be at least 1"):
        moving_average(values, 0)


def test_load_run_reads_a_finished_run(tmp_path):
    returns = learning_curves(num_seeds=3, num_updates=12)
    run = load_run(write_synthetic_run(tmp_path / "run", returns, frame_skip=4))
    assert run.status == "finished" and run.num_seeds == 3 and run.algo == "dqn"
    assert run.env == "Synthetic-v0" and run.name == "run"
    np.testing.assert_array_equal(run.updates, np.arange(1, 13))
    np.testing.assert_array_equal(run.env_steps, 100 * np.arange(1, 13))
    np.testing.assert_array_equal(run.frames, 400 * np.arange(1, 13))
    # float32 on the way through the sink; NaN where the update finished no episode.
    np.testing.assert_allclose(run.returns, returns.astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(run.episode_counts, np.isfinite(returns).astype(float))


def test_load_run_on_a_run_in_progress_with_a_cut_off_last_line(tmp_path):
    returns = learning_curves(num_seeds=2, num_updates=10)
    run_dir = write_synthetic_run(tmp_path / "run", returns, finished=False)
    metrics = run_dir / "metrics.jsonl"
    text = metrics.read_text()
    metrics.write_text(text + text.splitlines()[0][:37])  # the writer is mid-line
    run = load_run(run_dir)
    assert run.summary is None and run.status == "in progress"
    assert run.returns.shape == (2, 10) and run.updates[-1] == 10
    row = run_table_row(run, window=3)
    assert row["status"] == "in progress" and row["frames"] == 1000
    # Five updates per chunk, one second apart: the second chunk ran 2 x 500 steps in 1 s.
    assert steps_per_second(run) == pytest.approx(1000.0)


def test_final_return_of_a_run_in_progress_matches_the_summary_definition(tmp_path, tiny_run):
    shutil.copytree(tiny_run, tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    (tmp_path / "run" / "summary.json").unlink()
    mean, std = final_return(load_run(tmp_path / "run"))
    assert mean == pytest.approx(summary["final_mean_return"], rel=1e-5)
    assert std == pytest.approx(summary["final_std_return"], rel=1e-4, abs=1e-4)


def test_a_resumed_run_ignores_the_summary_of_its_interrupted_part(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", learning_curves(2, 10))
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / "summary.json").write_text(json.dumps({**summary, "num_updates": 5}))
    assert load_run(run_dir).status == "in progress"
    (run_dir / "summary.json").write_text(json.dumps({**summary, "interrupted": True}))
    assert load_run(run_dir).status == "interrupted"


def test_a_run_still_compiling_has_no_updates(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", learning_curves(2, 5), finished=False)
    (run_dir / "metrics.jsonl").unlink()
    run = load_run(run_dir)
    assert run.returns.shape == (2, 0) and run.frames.shape == (0,)
    row = run_table_row(run, window=100)
    assert row["final_mean_return"] is None and row["best_mean_return"] is None
    assert row["steps_per_second"] is None and row["frames"] == 0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: None, "no such directory"),
        (lambda d: d.mkdir(), "it has no config.json"),
        (lambda d: (d.mkdir(), (d / "config.json").write_text("{")), "not valid JSON"),
        (
            lambda d: (d.mkdir(), (d / "config.json").write_text('{"a": 1}')),
            "not a purerl run config",
        ),
    ],
)
def test_a_directory_that_is_not_a_run_raises_naming_it(tmp_path, make, message):
    make(tmp_path / "nope")
    with pytest.raises(NotARunError, match=message) as info:
        load_run(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(info.value)


def test_corrupt_metrics_raise_not_a_run_error(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", learning_curves(2, 6))
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    (run_dir / "metrics.jsonl").write_text("\n".join([lines[0][:20], *lines[1:]]) + "\n")
    with pytest.raises(NotARunError, match="line 1 is not valid JSON"):
        load_run(run_dir)
    (run_dir / "metrics.jsonl").write_text('{"update": 1}\n')
    with pytest.raises(NotARunError, match="does not hold purerl metrics rows"):
        load_run(run_dir)


def test_table_rows_and_markdown(tmp_path):
    returns = np.array([[1.0, 3.0, np.nan, 5.0], [3.0, 5.0, 7.0, 9.0]])
    run = load_run(write_synthetic_run(tmp_path / "run", returns))
    row = run_table_row(run, window=2)
    # Final: all episodes of a seed (fewer than 100): seed 0 mean(1, 3, 5) = 3, seed 1 6.
    assert row["final_mean_return"] == pytest.approx(4.5)
    assert row["final_std_return"] == pytest.approx(1.5)
    # Smoothed (window 2): seed 0 [1, 2, 3, 5], seed 1 [3, 4, 6, 8]; best mean is (5+8)/2.
    assert row["best_mean_return"] == pytest.approx(6.5)
    assert row["frames"] == 400 and row["seeds"] == 2 and row["steps_per_second"] == 1234.0
    table = comparison_table([row, {**row, "run": "other", "status": "in progress"}]).splitlines()
    assert table[0].startswith("| run | algo | env | seeds | final return | best return")
    assert table[2].startswith("| run | dqn | Synthetic-v0 | 2 | 4.5 +- 1.5 | 6.5 | 400 |")
    assert table[3].startswith("| other (in progress) |")
