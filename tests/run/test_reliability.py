"""The command tried as a hostile user would: bad input stops with one ``error:`` line and
leaves every file as it was; damaged or half-finished run directories resume, evaluate and load
to the results of an undamaged run."""

import json
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from purerl.run import rundir
from purerl.run.rundir import GRAPH_FILES, graph_paths
from tests.helpers import (
    DQN_TINY_ARGS,
    TINY_ARGS,
    metric_rows,
    one_error_line,
    run_cli,
    run_process,
)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def run_copy(tiny_run, tmp_path):
    shutil.copytree(tiny_run, tmp_path / "run")
    return tmp_path / "run"


BAD_INPUTS = {
    "episode limit below one": (
        ["train", "ppo", *TINY_ARGS, "--env-options", "max_steps_in_episode=-5"],
        "max_steps_in_episode must be at least 1",
    ),
    "episode limit zero": (
        ["train", "ppo", *TINY_ARGS, "--env-options", "max_steps_in_episode=0"],
        "max_steps_in_episode must be at least 1",
    ),
    "negative learning starts": (
        ["train", "dqn", *DQN_TINY_ARGS, "--learning-starts", "-1"],
        "--learning-starts must be 0 or more",
    ),
    "empty run directory": (["train", "ppo", *TINY_ARGS, "--run-dir", ""], "--run-dir is empty"),
    "no algorithm": (["train"], "name the algorithm"),
    "eval of a plain file": (["eval", "{file}"], "is a file, not a run directory"),
    "eval of an empty directory": (["eval", "{empty}"], "has no config.json"),
    "resume of a plain file": (["train", "--resume", "{file}"], "is a file, not a run directory"),
}


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(name, tmp_path, monkeypatch):
    argv, message = BAD_INPUTS[name]
    monkeypatch.chdir(tmp_path)  # a default run directory would land here
    (tmp_path / "file").write_text("not a run\n")
    (tmp_path / "empty").mkdir()
    before = snapshot(tmp_path)
    paths = {"file": str(tmp_path / "file"), "empty": str(tmp_path / "empty")}
    result = run_cli(*(arg.format(**paths) for arg in argv))
    one_error_line(result, message)
    assert result.stdout == ""
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "empty",
        "file",
    ]


POSITIVE_FLAGS = ["--num-envs", "--rollout-len", "--num-minibatches", "--num-epochs", "--lr"]


@settings(max_examples=25, deadline=None)
@given(flag=st.sampled_from(POSITIVE_FLAGS), value=st.integers(-(10**6), 0))
def test_values_that_cannot_be_meant_are_refused(flag, value, tmp_path_factory):
    folder = tmp_path_factory.mktemp("refused")
    result = run_cli("train", "ppo", *TINY_ARGS, flag, str(value), "--run-dir", folder / "r")
    assert result.code == 2, (flag, value, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and flag in lines[0], lines
    assert not (folder / "r").exists()


@pytest.mark.slow
def test_a_cut_last_metrics_row_is_restored_on_resume(tiny_run, run_copy):
    path = run_copy / rundir.METRICS_FILE
    text = path.read_text()
    path.write_text(text[: len(text) - len(text.splitlines()[-1]) // 2 - 1])  # half the last row
    whole = rundir.read_metrics_rows(tiny_run / rundir.METRICS_FILE)
    assert rundir.read_metrics_rows(path) == whole[:-1]
    result = run_cli("train", "--resume", run_copy)
    assert result.code == 0, result.stderr
    assert "restored the metrics rows of updates 6 from checkpoint 6" in result.stderr
    assert rundir.read_metrics_rows(path) == whole  # wall-clock times included
    resume = json.loads((run_copy / rundir.RESUMES_FILE).read_text().splitlines()[-1])
    assert resume["restored_metrics_rows"] == [6] and resume["missing_metrics_rows"] == []


SUMMARY_FIELDS = [
    "algo", "env", "final_mean_return", "final_std_return", "per_seed_final_return",
    "num_seeds", "num_updates", "env_steps_per_seed", "total_env_steps", "total_frames",
    "resumed_from_update", "interrupted",
]  # fmt: skip
"""What a summary says of the training itself (its times and memory differ between processes)."""

KILL_AFTER_FINAL_CHECKPOINT = """
import os, signal, sys
from purerl.cli import main
from purerl.run import session

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the final checkpoint has committed

session.finish = killed
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_run_killed_after_its_final_checkpoint_finishes_on_resume(tiny_run, tmp_path, curves):
    run_dir = tmp_path / "run"
    proc = run_process(
        "-c", KILL_AFTER_FINAL_CHECKPOINT, "train", "ppo", *TINY_ARGS, "--num-seeds", "2",
        "--run-dir", run_dir, "--checkpoint-every", "1", "--keep-checkpoints", "10",
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not (run_dir / rundir.SUMMARY_FILE).exists()
    assert not any(path.exists() for path in graph_paths(run_dir))
    result = run_cli("train", "--resume", run_dir)
    assert result.code == 0, result.stderr
    assert "writing its outputs" in result.stdout
    resumed = json.loads((run_dir / rundir.SUMMARY_FILE).read_text())
    whole = json.loads((tiny_run / rundir.SUMMARY_FILE).read_text())
    assert {k: resumed[k] for k in SUMMARY_FIELDS} == {k: whole[k] for k in SUMMARY_FIELDS}
    for name in GRAPH_FILES:
        assert (run_dir / name).read_bytes() == (tiny_run / name).read_bytes(), name
    assert metric_rows(run_dir) == metric_rows(tiny_run)
    assert "already complete" in run_cli("train", "--resume", run_dir).stdout


def truncate_array_files(checkpoint: Path) -> None:
    """Cuts every array data file of a checkpoint to half its length."""
    files = [p for p in (checkpoint / "state").rglob("*") if p.is_file() and p.parent.name == "d"]
    assert files
    for path in files:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.slow
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_eval_and_load_take_the_newest_readable_checkpoint_and_change_nothing(run_copy):
    truncate_array_files(rundir.checkpoint_path(run_copy, 6))
    before = snapshot(run_copy)
    proc = run_process("-m", "purerl", "eval", run_copy, "--episodes", "2")
    assert proc.returncode == 0, proc.stderr
    assert "checkpoint 5 (latest)" in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skipped checkpoint 6: "), proc.stderr
    assert snapshot(run_copy) == before
    import purerl

    with pytest.warns(UserWarning, match="skipped checkpoint 6"):
        policy = purerl.load(run_copy)
    assert int(policy(np.zeros(4, np.float32))) in (0, 1)
    assert snapshot(run_copy) == before


@pytest.mark.slow
def test_a_divergence_after_a_resume_names_the_checkpoint_it_resumed_from(run_copy, monkeypatch):
    from purerl.core import loop

    monkeypatch.setattr(loop, "first_nonfinite", lambda report: (0, report.first_update + 1))
    result = run_cli("train", "--resume", run_copy, "--resume-from", "3")
    assert result.code == 1, result.stderr
    assert "checkpoint 3, saved before it, is kept" in result.stderr, result.stderr


def test_load_of_what_is_not_a_run_raises_a_checkpoint_error(tmp_path):
    import purerl
    from purerl.run.checkpoint import CheckpointError

    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointError, match="has no config.json"):
        purerl.load(tmp_path / "empty")
    with pytest.raises(CheckpointError, match="is a file, not a run directory"):
        purerl.load(tmp_path / "file")
    with pytest.raises(CheckpointError, match="does not exist"):
        purerl.load(tmp_path / "missing")
