"""benchmarks.table: the matrix, budgets, records and the page they render, a smoke run."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from benchmarks import page
from benchmarks import table as bench
from benchmarks.tests.runs import learning_curves, write_synthetic_run
from purerl.config import ConfigError
from tests.helpers import png_is_a_plot


def test_budgets_are_scaled_to_whole_updates():
    args = bench.BenchTableArgs(seeds=3, budget_scale=0.01)
    ppo = bench.row_config(bench.MATRIX[0], args, {})
    # PPO CartPole preset: 5e5 steps in updates of 4 x 128 = 512; 5000 // 512 = 9 updates.
    assert ppo.total_timesteps == 9 * 512 and ppo.num_seeds == 3
    dqn = bench.row_config(bench.MATRIX[1], args, {})
    # DQN CartPole: 5000 steps (10 updates of 500); its 10k warm-up shrinks to half the run.
    assert dqn.total_timesteps == 5000 and dqn.learning_starts == 2500
    tiny = bench.row_config(bench.MATRIX[0], bench.BenchTableArgs(budget_scale=1e-9), {})
    assert tiny.total_timesteps == 512  # never less than one update
    override = bench.row_config(bench.MATRIX[0], bench.BenchTableArgs(), {"ppo-CartPole-v1": 2048})
    assert override.total_timesteps == 2048
    # At the preset's own budget a row is the preset as `purerl train` runs it: 5e5 is not a
    # whole number of updates, and PQN's epsilon schedule reads total_timesteps.
    (pqn,) = [row for row in bench.MATRIX if row.name == "pqn-CartPole-v1"]
    assert bench.row_config(pqn, bench.BenchTableArgs(), {}).total_timesteps == 500_000
    fewer = bench.BenchTableArgs(seeds=4, row_seeds=("dqn-CartPole-v1=2",))
    assert bench.row_config(bench.MATRIX[0], fewer, {}).num_seeds == 4
    assert bench.row_config(bench.MATRIX[1], fewer, {}).num_seeds == 2


def test_reuse_takes_only_a_finished_run_of_the_same_configuration(tmp_path):
    cfg = bench.row_config(bench.MATRIX[0], bench.BenchTableArgs(budget_scale=0.01), {})
    finished = write_synthetic_run(tmp_path / "done", learning_curves(2, 9))
    (tmp_path / "summary.json").write_text((finished / "summary.json").read_text())
    run_dir = write_synthetic_run(tmp_path / "run", learning_curves(2, 9), finished=False)
    record = {"algo": "ppo", "config": json.loads(json.dumps(dataclasses.asdict(cfg)))}
    (run_dir / "config.json").write_text(json.dumps(record))
    assert bench.finished_summary(tmp_path / "missing", cfg) is None
    assert bench.finished_summary(run_dir, cfg) is None  # in progress
    (run_dir / "summary.json").write_text((run_dir.parent / "summary.json").read_text())
    assert bench.finished_summary(run_dir, cfg).num_updates == 9
    # A run written before a field existed ran with that field's default: the same configuration.
    del record["config"]["normalize_reward"]
    (run_dir / "config.json").write_text(json.dumps(record))
    assert bench.finished_summary(run_dir, cfg).num_updates == 9
    with pytest.raises(ConfigError, match="holds a run of another configuration"):
        bench.finished_summary(run_dir, dataclasses.replace(cfg, lr=1.0))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--rows", "ppo-Nope-v0"], "unknown row(s) ['ppo-Nope-v0']"),
        (["--budgets", "ppo-CartPole-v1=lots"], "--budgets takes ROW=STEPS"),
        (["--seeds", "0"], "--seeds and --budget-scale must be positive"),
        (["--row-seeds", "ppo-CartPole-v1=0"], "--row-seeds takes ROW=SEEDS"),
        (["--row-seeds", "ppo-Nope-v0=2"], "--row-seeds takes ROW=SEEDS"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(capsys, argv, message, tmp_path):
    assert bench.main([*argv, "--out-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not (tmp_path / "runs").exists()


def run_bench_table(*args):
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.table", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=600,
    )


def write_finished_row_run(run_dir, row_name: str, num_updates: int = 9):
    """A finished synthetic run directory whose config is ``row_name``'s at a small budget."""
    (row,) = [row for row in bench.MATRIX if row.name == row_name]
    cfg = bench.row_config(row, bench.BenchTableArgs(budget_scale=0.01), {})
    write_synthetic_run(run_dir, learning_curves(2, num_updates))
    record = {"algo": row.algo, "config": json.loads(json.dumps(dataclasses.asdict(cfg)))}
    (run_dir / "config.json").write_text(json.dumps(record))
    return cfg


def test_import_run_writes_a_record_plot_and_the_rendered_page(tmp_path, capsys):
    cfg = write_finished_row_run(tmp_path / "runs" / "cartpole", "ppo-CartPole-v1")
    benchmarks = tmp_path / "BENCHMARKS.md"
    argv = ["--import-run", f"ppo-CartPole-v1={tmp_path / 'runs' / 'cartpole'}"]
    assert bench.main([*argv, "--write-benchmarks", "--benchmarks", str(benchmarks)]) == 0
    record = json.loads((tmp_path / "benchmarks/results/learning/ppo-CartPole-v1.json").read_text())
    assert record["section"] == "ppo" and record["seeds"] == [0, 1]
    assert record["steps_per_seed"] == 900 and record["steps_per_s"] == 1234
    assert record["plot"] == "docs/bench/ppo-CartPole-v1.png"
    assert record["origin"] == str(tmp_path / "runs" / "cartpole")
    assert record["command"] == (
        f"python -m benchmarks.table --seeds 2 --rows ppo-CartPole-v1 "
        f"--budgets ppo-CartPole-v1={cfg.total_timesteps}"
    )
    assert record["where"]["versions"]["jax"]
    png_is_a_plot(tmp_path / "docs" / "bench" / "ppo-CartPole-v1.png")
    text = benchmarks.read_text()
    final = f"{record['final_mean']:.1f} +- {record['final_std']:.1f}"
    line = next(line for line in text.splitlines() if line.startswith("| CartPole-v1 |"))
    assert f"| 900 | 2 (0-1) | {final} | 500 is the most an episode pays |" in line
    assert line.endswith("| 0.2 min | 1,234 | [png](docs/bench/ppo-CartPole-v1.png) |")
    assert "| PPO | CartPole-v1 |" in capsys.readouterr().out
    # --render alone gives the same page from the records, training nothing.
    benchmarks.write_text("edited by hand\n")
    assert bench.main(["--render", "--benchmarks", str(benchmarks)]) == 0
    assert benchmarks.read_text() == text


@pytest.mark.parametrize(
    "trained, spec, message",
    [
        ("ppo-CartPole-v1", "ppo-Nope-v0=x", "--import-run takes ROW=DIR"),
        ("ppo-CartPole-v1", "dqn-CartPole-v1={run}", "needs a finished dqn run on CartPole-v1"),
        (
            "ppo-CartPole-NoVelocity-v1",
            "ppo-CartPole-NoVelocity-v1-mlp={run}",
            "trained a gru torso; ppo-CartPole-NoVelocity-v1-mlp needs mlp",
        ),
    ],
)
def test_import_run_refuses_another_row_in_one_line(tmp_path, capsys, trained, spec, message):
    write_finished_row_run(tmp_path / "run", trained)
    argv = ["--import-run", spec.format(run=tmp_path / "run"), "--write-benchmarks"]
    assert bench.main([*argv, "--benchmarks", str(tmp_path / "B.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert not (tmp_path / "B.md").exists()


def test_render_refuses_a_malformed_record_in_one_line(tmp_path, capsys):
    learning = tmp_path / "benchmarks" / "results" / "learning"
    learning.mkdir(parents=True)
    (learning / "ppo-CartPole-v1.json").write_text(json.dumps({"name": "ppo-CartPole-v1"}))
    assert bench.main(["--render", "--benchmarks", str(tmp_path / "B.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a LearningRecord (missing [" in err[0]
    assert "fix or remove the file" in err[0] and not (tmp_path / "B.md").exists()


@pytest.mark.slow
def test_smoke_run_writes_runs_plots_records_and_page(tmp_path):
    benchmarks = tmp_path / "BENCHMARKS.md"
    matrix = ("--rows", "ppo-CartPole-v1", "ppo-Breakout-v5", "--seeds", "1")
    matrix += ("--budget-scale", "0.003", "--out-dir", tmp_path / "runs")
    proc = run_bench_table(*matrix, "--write-benchmarks", "--benchmarks", benchmarks)
    assert proc.returncode == 0, proc.stderr
    table = [line for line in proc.stdout.splitlines() if line.startswith("|")]
    assert table[0].startswith("| algo | env | protocol / notes | frames per seed | seeds |")
    assert "| published reference | wall | steps/s | plot |" in table[0]
    # 0.003 x 5e5 = 1500 steps: 2 whole updates of 512.
    assert table[2].startswith("| PPO | CartPole-v1 | ") and "| 1,024 | 1 |" in table[2]
    assert "[png](docs/bench/ppo-CartPole-v1.png)" in table[2]
    assert table[3].startswith("| PPO | Breakout-v5 | ") and "measured on GPU only" in table[3]
    assert "| 500 is the most an episode pays | " in table[2] and " min | " in table[2]
    assert "| 430 +- 8 at 10M steps (CleanRL ppo_atari_envpool) |" in table[3]
    run_dir = tmp_path / "runs" / "ppo-CartPole-v1"
    assert (run_dir / "summary.json").exists()
    png_is_a_plot(run_dir / "returns.png")
    png_is_a_plot(tmp_path / "docs" / "bench" / "ppo-CartPole-v1.png")
    records = sorted((tmp_path / "benchmarks" / "results" / "learning").iterdir())
    assert [path.name for path in records] == ["ppo-CartPole-v1.json"]  # Atari: not measured
    text = benchmarks.read_text()
    assert text.startswith("# Benchmarks\n") and "## PPO\n" in text and "Breakout-v5" in text
    assert (
        "| CartPole-v1 | preset (Huang et al. 2022 classic-control PPO) | 1,024 | 1 (0) |" in text
    )
    # Again, reading the finished run back instead of training, with the other output flags.
    other = tmp_path / "other.md"
    reused = run_bench_table(
        *matrix,
        *("--reuse", "--window", "1", "--write-benchmarks"),
        *("--benchmarks", other, "--plots-dir", tmp_path / "pngs"),
        *("--results-dir", tmp_path / "records"),
    )
    assert reused.returncode == 0, reused.stderr
    assert table[2].split("; plot smoothed")[0] in reused.stdout
    assert "plot smoothed over 1 update |" in reused.stdout
    assert "[png](pngs/ppo-CartPole-v1.png)" in reused.stdout
    png_is_a_plot(tmp_path / "pngs" / "ppo-CartPole-v1.png")
    assert (tmp_path / "records" / "learning" / "ppo-CartPole-v1.json").is_file()
    assert "[png](pngs/ppo-CartPole-v1.png)" in other.read_text()


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as info:
        bench.main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in ["--rows", "--seeds", "--row-seeds", "--budget-scale", "--budgets", "--window"]:
        assert flag in out
    for flag in ["--out-dir", "--write-benchmarks", "--benchmarks", "--plots-dir", "--reuse"]:
        assert flag in out
    for flag in ["--render", "--import-run", "--results-dir"]:
        assert flag in out
    # The first lines name the command that regenerates every row and the page.
    assert out.index(page.REGENERATE) < out.index("--rows")
