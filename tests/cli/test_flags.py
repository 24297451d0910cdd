"""What a user from another library types: their flag names, numbers as they write them, a bare
``purerl``, a missing extra, a closed pipe."""

from __future__ import annotations

import sys

import pytest

from purerl.cli import guarded, main
from purerl.cli.parsing import flag_types, whole_numbers
from purerl.cli.train import Sources


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    ("flag", "named"),
    [("--learning-rate", "--lr"), ("--n-envs", "--num-envs"), ("--n-steps", "--rollout-len")],
)
def test_other_libraries_flags_are_named_by_ours(capsys, flag, named):
    assert main(["train", "ppo", flag, "3"]) == 2
    assert f"{flag} is {named} here" in one_error_line(capsys)


def test_a_misspelt_flag_gets_the_closest_one(capsys):
    assert main(["train", "ppo", "--num-epoch", "3"]) == 2
    assert "did you mean --num-epochs" in one_error_line(capsys)


def test_integer_flags_take_scientific_and_underscored_numbers():
    flags = {"--total-timesteps": int, "--lr": float, "--num-envs": int | None}
    argv = ["--total-timesteps", "1e6", "--lr", "3e-4", "--num-envs=1_024", "--seed", "1e3"]
    assert whole_numbers(argv, flags) == [
        "--total-timesteps", "1000000", "--lr", "3e-4", "--num-envs=1024", "--seed", "1e3"
    ]  # fmt: skip
    assert whole_numbers(["--total-timesteps", "2.5e-1"], flags)[1] == "2.5e-1"  # not whole
    assert flag_types(Sources)["--resume"] == str | None


@pytest.mark.slow
def test_total_timesteps_1e3_trains(tmp_path, capsys):
    run = tmp_path / "run"
    code = main(["train", "ppo", "--total-timesteps", "1e3", "--num-envs", "4", "--rollout-len",
                 "16", "--run-dir", str(run), "--no-progress"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "960 steps per seed (15 updates)" in capsys.readouterr().out  # whole updates of 64


def test_a_bare_command_prints_usage_on_stderr(capsys):
    assert main([]) == 2
    said = capsys.readouterr()
    assert said.out == "" and said.err.startswith("usage: purerl COMMAND")


@pytest.mark.parametrize("env_id", ["Breakout-v5", "HalfCheetah-v4"])
def test_envpool_ids_without_envpool_are_one_line_naming_the_extra(monkeypatch, capsys, env_id):
    monkeypatch.setitem(sys.modules, "envpool", None)
    assert main(["train", "ppo", "--env", env_id, "--dry-run"]) == 2
    extra = "mujoco" if env_id.startswith("Half") else "atari"
    assert f"pip install 'purerl[{extra}]'" in one_error_line(capsys)


def test_a_closed_pipe_mentions_checkpoints_only_where_runs_are_written(capsys):
    def closed() -> int:
        raise BrokenPipeError

    assert guarded(closed, owns_process=False, writes_runs=False) == 141
    assert "checkpoints" not in one_error_line(capsys)
    assert guarded(closed, owns_process=False, writes_runs=True) == 141
    assert "checkpoints" in one_error_line(capsys)


def test_the_python_api_checks_its_arguments_and_words_errors_for_python():
    import numpy as np

    import purerl
    from purerl.api import resolve
    from purerl.config import ConfigError

    with pytest.raises(ConfigError, match="run_dir takes a path"):
        purerl.train("ppo", run_dir=5)
    with pytest.raises(ConfigError, match="progress takes True or False"):
        purerl.train("ppo", progress="yes")
    with pytest.raises(ConfigError, match=r"^num_envs must be positive, got 0$"):
        resolve("ppo", None, None, {"num_envs": 0})
    _, cfg, _ = resolve("ppo", None, None, {"num_envs": np.int64(4), "hidden_sizes": [64, 64]})
    assert cfg.num_envs == 4 and type(cfg.num_envs) is int and cfg.hidden_sizes == (64, 64)


def test_envs_marks_atari_games_unavailable_without_envpool(monkeypatch):
    import importlib.util

    from purerl.cli.envs import describe_env

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "envpool" else real(name, *a)
    )
    assert describe_env("Breakout-v5", True) == (
        "-",
        "unavailable: needs pip install 'purerl[atari]'",
    )
