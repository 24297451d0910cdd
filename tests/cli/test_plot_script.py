"""``purerl plot``, in-process: overlay runs, print one table row per run."""

import pytest

from tests.helpers import (
    learning_curves,
    one_error_line,
    png_is_a_plot,
    run_cli,
    write_synthetic_run,
)


@pytest.fixture
def run_plot(monkeypatch):
    def run(*args, cwd):
        monkeypatch.chdir(cwd)
        return run_cli("plot", *args)

    return run


def test_two_runs_give_a_figure_and_a_row_each(tmp_path, run_plot):
    done = write_synthetic_run(tmp_path / "done", learning_curves(3, 50))
    going = write_synthetic_run(tmp_path / "going", learning_curves(2, 30), finished=False)
    with open(going / "metrics.jsonl", "a") as f:
        f.write('{"update": 31, "env_steps": 31')  # still being written
    proc = run_plot(done, going, "--out", tmp_path / "fig.png", "--window", "10", cwd=tmp_path)
    assert proc.code == 0, proc.stderr
    png_is_a_plot(tmp_path / "fig.png")
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    assert table[0].startswith("| run | algo | env | seeds | final return | best return |")
    assert len(table) == 4  # header, alignment, one row per run
    assert table[2].startswith("| done | dqn | Synthetic-v0 | 3 | ")
    assert table[3].startswith("| going (in progress) | dqn | Synthetic-v0 | 2 | ")
    assert "| 3,000 |" in table[3]  # frames per seed: 30 complete updates x 100 steps


def test_default_output_is_compare_png_in_the_working_directory(tmp_path, run_plot):
    run = write_synthetic_run(tmp_path / "run", learning_curves(1, 5))
    proc = run_plot(run, cwd=tmp_path)
    assert proc.code == 0, proc.stderr
    png_is_a_plot(tmp_path / "compare.png")


def test_a_directory_that_is_not_a_run_exits_2_with_one_line(tmp_path, run_plot):
    run = write_synthetic_run(tmp_path / "run", learning_curves(1, 5))
    (tmp_path / "empty").mkdir()
    proc = run_plot(run, tmp_path / "empty", cwd=tmp_path)
    one_error_line(proc, f"{tmp_path / 'empty'} is not a run directory: it has no config.json")
    assert not (tmp_path / "compare.png").exists()


def test_bad_window_exits_2_with_one_line(tmp_path, run_plot):
    proc = run_plot(tmp_path, "--window", "0", cwd=tmp_path)
    assert proc.code == 2
    assert proc.stderr.strip() == "error: --window must be at least 1, got 0"
    one_error_line(run_plot(tmp_path, "--out", "fig.jpg", cwd=tmp_path), "--out writes a PNG")


def test_help_describes_the_arguments(tmp_path, run_plot):
    proc = run_plot("--help", cwd=tmp_path)
    assert proc.code == 0
    for text in ["RUN_DIR", "--out", "--window", "compare.png"]:
        assert text in proc.stdout
