"""``purerl search``: bad input exits 2 with one line; a tiny local search writes its files
and its best configuration re-runs to the same returns."""

import csv
import json
import sys

import numpy as np
import pytest

from purerl import algos
from purerl.algos.ppo import PPOConfig
from purerl.cli.search import SearchArgs, spec_data
from purerl.core.loop import train
from purerl.run.rundir import read_config
from purerl.run.sinks import ProgressSink
from purerl.search.plan import make_plan
from purerl.search.spec import parse_spec
from purerl.search.sweep import BatchResult, ConfigResult
from tests.helpers import one_error_line, run_cli

# PPO's smoke configuration (the budget is its 6 updates of 64 steps), so a search's single
# reruns share compiled programs with the other tests through the compilation cache.
TINY = [
    "--param",
    "rollout_len=16",
    "--param",
    "num_minibatches=2",
    "--param",
    "num_epochs=2",
    "--param",
    "hidden_sizes=16",
    "--total-timesteps",
    str(4 * 16 * 6),
]
# The learning rates of tests/search/test_sweep.py's sweep over the same configuration: the search's
# batch is that sweep's program.
SPEC = {
    "algo": "ppo",
    "env": "CartPole-v1",
    "num_seeds": 2,
    "total_timesteps": 384,
    "params": {
        "lr": {"grid": [1e-3, 3e-3, 1e-2]},
        "num_envs": 4,
        "rollout_len": 16,
        "num_minibatches": 2,
        "num_epochs": 2,
        "hidden_sizes": [16],
    },
}
SPEC_YAML = """\
algo: ppo
total_timesteps: 256
params:
  lr: {grid: [1.0e-3, 1e-2]}   # YAML 1.1 reads 1e-2 as a string; the parser converts it
  hidden_sizes: [8]
"""


def main(argv):
    """``purerl search ARGV`` in-process: its exit code (output goes to capsys)."""
    from purerl.cli import main as purerl_main

    return purerl_main(["search", *argv])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--param", "lrr=grid:0.1"], "unknown parameter 'lrr' for ppo; traced"),
        (["--param", "lr=grid:"], "parameter lr: grid is empty"),
        (["--param", "lr=loguniform:0,0.1"], "loguniform bounds must be positive"),
        (["--param", "lr=uniform:0.1,0.01"], "uniform needs low < high"),
        (["--samples", "0", "--param", "lr=uniform:0.1,0.2"], "samples must be at least 1"),
        (["--algo", "a2c"], "unknown algorithm 'a2c'"),
        (["--preset", "Pong"], "unknown preset 'Pong'"),
        (["--asha"], "--asha needs --backend ray"),
        (["--param", "num_minibatches=grid:3"], "configuration 0 (num_minibatches=3)"),
        (["--param", "activation=grid:tanh,swishh"], "'swishh' is not one of tanh, relu"),
        (["--configs-per-trial", "0"], "--configs-per-trial must be at least 1"),
        (["--backend", "dask"], "invalid choice 'dask' for argument '--backend'"),
        (["--num-devices", "0"], "--num-devices must be at least 1"),
        (["--num-devices", "2", "--backend", "ray"], "--num-devices needs --backend local"),
        # This test process started JAX with one CPU device before the search could ask.
        (["--num-devices", "2"], "set JAX_NUM_CPU_DEVICES=2 before the first JAX call"),
    ],
)
def test_bad_specs_exit_2_with_one_line(tmp_path, capsys, args, message):
    search_dir = tmp_path / "search"
    code = main([*TINY, *args, "--search-dir", str(search_dir)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not search_dir.exists()


def test_the_old_flag_names_are_refused_naming_trains_flags(tmp_path):
    result = run_cli(
        "search", "--seeds", "2", "--first-seed=3", "--budget", "1000", "--search-dir", tmp_path
    )
    one_error_line(
        result,
        "purerl search takes purerl train's flag names: --seeds is now --num-seeds, --first-seed "
        "is now --seed, --budget is now --total-timesteps",
    )


def test_an_existing_search_dir_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("precious")
    assert main([*TINY, "--search-dir", str(tmp_path)]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_the_command_exits_2_with_one_line_on_stderr(tmp_path):
    result = run_cli(
        "search", *TINY, "--param", "lr=loguniform:-1,0.1", "--search-dir", tmp_path / "s"
    )
    one_error_line(result, "loguniform bounds must be positive")


def test_yaml_specs_load_with_flags_over_them(tmp_path):
    pytest.importorskip("yaml", reason="pyyaml is not installed (pip install 'purerl[search]')")
    (tmp_path / "spec.yaml").write_text(SPEC_YAML)
    args = SearchArgs(
        spec=str(tmp_path / "spec.yaml"), total_timesteps=2048, param=("num_envs=grid:4,8",)
    )
    data = spec_data(args)
    assert data["total_timesteps"] == 2048 and data["params"]["lr"] == {"grid": [1e-3, "1e-2"]}
    assert data["params"]["num_envs"] == {"grid": ["4", "8"]}
    assert [c.lr for c in make_plan(parse_spec(data)).configs] == [1e-3, 1e-3, 1e-2, 1e-2]


@pytest.mark.parametrize(
    "module, args, message",
    [
        ("yaml", ["--spec", "{dir}/spec.yaml"], "a YAML spec needs the optional package yaml"),
        ("ray", ["--backend", "ray"], "--backend ray needs the optional package ray"),
    ],
)
def test_missing_extras_name_the_pip_command(tmp_path, capsys, monkeypatch, module, args, message):
    (tmp_path / "spec.yaml").write_text(SPEC_YAML)
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    monkeypatch.setitem(sys.modules, f"{module}.tune", None)
    search_dir = tmp_path / "search"
    argv = [a.format(dir=tmp_path) for a in args]
    assert main([*TINY, *argv, "--search-dir", str(search_dir)]) == 2
    err = capsys.readouterr().err
    assert message in err and "pip install 'purerl[search]'" in err
    assert not search_dir.exists()


def test_the_local_backend_trains_the_plans_batches_through_sweep(tmp_path, capsys, monkeypatch):
    calls = []

    def fake_run_batch(spec, configs, updates_per_chunk, sinks=(), placement=None):
        calls.append(([(c.lr, c.num_envs) for c in configs], [type(s) for s in sinks]))
        results = [
            ConfigResult(c, np.array([c.num_envs, c.lr * 1e3]), np.zeros(2, bool), 1.0)
            for c in configs
        ]
        return BatchResult(results, None)

    monkeypatch.setattr("purerl.search.sweep.run_batch", fake_run_batch)
    grid = ["--param", "lr=grid:1e-3,1e-2", "--param", "num_envs=grid:4,8", "--num-seeds", "2"]
    assert main([*TINY, *grid, "--search-dir", str(tmp_path / "search")]) == 0
    assert calls == [
        ([(1e-3, 4), (1e-2, 4)], [ProgressSink]),
        ([(1e-3, 8), (1e-2, 8)], [ProgressSink]),
    ]
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:5] == [
        "[batch 1/2] 2 configuration(s) as one program (num_envs=4): compiling and training",
        "[batch 1/2] done: 2/4 configurations | best so far: config 2 (lr=0.01 num_envs=4) "
        "-> 7.0 +- 3.0",
        "[batch 2/2] 2 configuration(s) as one program (num_envs=8): compiling and training",
        "[batch 2/2] done: 4/4 configurations | best so far: config 3 (lr=0.01 num_envs=8) "
        "-> 9.0 +- 1.0",
    ]
    with open(tmp_path / "search" / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["batch"], r["mean_return"]) for r in rows] == [
        ("0", "2.5"),
        ("1", "4.5"),
        ("0", "7.0"),
        ("1", "9.0"),
    ]


@pytest.fixture(scope="module")
def tiny_search(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    (root / "spec.json").write_text(json.dumps(SPEC))
    search_dir = root / "out"
    assert main(["--spec", str(root / "spec.json"), "--search-dir", str(search_dir)]) == 0
    with open(search_dir / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return search_dir, rows


@pytest.mark.slow
def test_tiny_local_search_writes_csv_table_best_config_spec_and_plot(tiny_search):
    search_dir, rows = tiny_search
    assert [float(r["lr"]) for r in rows] == [1e-3, 3e-3, 1e-2]
    for row in rows:
        returns = [float(row["return_seed_0"]), float(row["return_seed_1"])]
        assert float(row["mean_return"]) == pytest.approx(np.mean(returns))
        assert float(row["std_return"]) == pytest.approx(np.std(returns))
        assert row["status"] == "done" and int(row["updates"]) == 6
        assert float(row["steps_per_second"]) > 0
    best = max(rows, key=lambda r: float(r["mean_return"]))
    table = (search_dir / "results.md").read_text().splitlines()
    ranked = [line for line in table if line.startswith("| 1 |")]
    assert ranked and ranked[0].startswith(f"| 1 | {best['config']} | ")
    record = json.loads((search_dir / "best_config.json").read_text())
    assert record["algo"] == "ppo" and record["config"]["lr"] == float(best["lr"])
    assert set(record) == {"algo", "config", "run", "versions", "created"}
    spec = json.loads((search_dir / "spec.json").read_text())
    assert spec["params"]["lr"] == {"grid": [1e-3, 3e-3, 1e-2]} and spec["num_seeds"] == 2
    from matplotlib.image import imread

    pixels = imread(search_dir / "returns_vs_params.png")
    assert pixels.shape[0] > 100 and pixels[..., :3].std() > 0.05


def best_row(rows):
    return max(rows, key=lambda r: float(r["mean_return"]))


@pytest.mark.slow
def test_best_config_reruns_to_its_rows_returns(tiny_search):
    search_dir, rows = tiny_search
    best = best_row(rows)
    record = read_config(search_dir / "best_config.json")
    cfg = record.make_config(PPOConfig, search_dir)
    result = train(algos.get("ppo").make(cfg).algo, cfg)
    expected = [float(best["return_seed_0"]), float(best["return_seed_1"])]
    np.testing.assert_allclose(result.final_returns, expected, rtol=1e-5)


@pytest.mark.slow
def test_best_config_reruns_through_the_ppo_command(tiny_search, tmp_path):
    search_dir, rows = tiny_search
    proc = run_cli(
        "train", "ppo", "--config", search_dir / "best_config.json", "--run-dir", tmp_path / "run",
        "--no-progress",
    )  # fmt: skip
    assert proc.code == 0, proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    best = best_row(rows)
    expected = [float(best["return_seed_0"]), float(best["return_seed_1"])]
    np.testing.assert_allclose(summary["per_seed_final_return"], expected, rtol=1e-5)


def test_help_lists_flags():
    proc = run_cli("search", "--help")
    assert proc.code == 0
    for flag in [
        "--spec",
        "--algo",
        "--env",
        "--preset",
        "--param",
        "--num-seeds",
        "--seed",
        "--samples",
        "--sample-seed",
        "--total-timesteps",
        "--search-dir",
        "--backend",
        "--configs-per-trial",
        "--cpus-per-trial",
        "--gpus-per-trial",
        "--ray-address",
        "--asha",
        "--updates-per-chunk",
    ]:
        assert flag in proc.stdout


DQN_TINY = [
    "--algo",
    "dqn",
    *("--param", "num_envs=4", "--param", "rollout_len=8", "--param", "buffer_size=64"),
    *("--param", "batch_size=16", "--param", "learning_starts=32", "--param", "hidden_sizes=16"),
    *("--param", "target_update_period=64", "--total-timesteps", str(4 * 8 * 6)),
    *("--param", "exploration_fraction=grid:0.2,0.8"),
]
"""DQN's smoke configuration (6 updates of 32 steps) over two exploration fractions."""


@pytest.mark.slow
def test_tiny_dqn_search_reports_progress_per_chunk(tmp_path, capsys):
    search_dir = tmp_path / "search"
    assert main([*DQN_TINY, "--updates-per-chunk", "1", "--search-dir", str(search_dir)]) == 0
    out = capsys.readouterr().out
    assert "[batch 1/1] 2 configuration(s) as one program (base shapes)" in out
    assert [line.split(" |")[0] for line in out.splitlines() if line.startswith("update ")] == [
        "update 1/6",
        "update 2/6",
        "update 3/6",
        "update 4/6",
        "update 5/6",
        "update 6/6",
    ]
    assert "[batch 1/1] done: 2/2 configurations | best so far: config " in out
    record = json.loads((search_dir / "best_config.json").read_text())
    assert record["algo"] == "dqn" and record["config"]["buffer_size"] == 64
