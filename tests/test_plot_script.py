"""experiments/plot.py, run as a user would: overlay runs, print one table row per run."""

import os
import subprocess
import sys
from pathlib import Path

from tests.run_fixtures import learning_curves, png_is_a_plot, write_synthetic_run

ROOT = Path(__file__).resolve().parents[1]


def run_plot(*args, cwd):
    return subprocess.run(
        [sys.executable, str(ROOT / "experiments" / "plot.py"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )


def test_two_runs_give_a_figure_and_a_row_each(tmp_path):
    done = write_synthetic_run(tmp_path / "done", learning_curves(3, 50))
    going = write_synthetic_run(tmp_path / "going", learning_curves(2, 30), finished=False)
    with open(going / "metrics.jsonl", "a") as f:
        f.write('{"update": 31, "env_steps": 31')  # still being written
    proc = run_plot(done, going, "--out", tmp_path / "fig.png", "--window", "10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    png_is_a_plot(tmp_path / "fig.png")
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    assert table[0].startswith("| run | algo | env | seeds | final return | best return |")
    assert len(table) == 4  # header, alignment, one row per run
    assert table[2].startswith("| done | dqn | Synthetic-v0 | 3 | ")
    assert table[3].startswith("| going (in progress) | dqn | Synthetic-v0 | 2 | ")
    assert "| 3,000 |" in table[3]  # frames per seed: 30 complete updates x 100 steps


def test_default_output_is_compare_png_in_the_working_directory(tmp_path):
    run = write_synthetic_run(tmp_path / "run", learning_curves(1, 5))
    proc = run_plot(run, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    png_is_a_plot(tmp_path / "compare.png")


def test_a_directory_that_is_not_a_run_exits_2_with_one_line(tmp_path):
    run = write_synthetic_run(tmp_path / "run", learning_curves(1, 5))
    (tmp_path / "empty").mkdir()
    proc = run_plot(run, tmp_path / "empty", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert str(tmp_path / "empty") in lines[0] and "no config.json" in lines[0]
    assert not (tmp_path / "compare.png").exists()


def test_bad_window_exits_2_with_one_line(tmp_path):
    proc = run_plot(tmp_path, "--window", "0", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --window must be at least 1, got 0"


def test_help_describes_the_arguments(tmp_path):
    proc = run_plot("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for text in ["run_dirs", "--out", "--window", "compare.png"]:
        assert text in proc.stdout
