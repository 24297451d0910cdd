"""Resume, interruption and bad checkpoints through the experiment scripts, as a user meets them."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.test_checkpoint import tree_digest
from tests.test_cli import ROOT, TINY, run_script


def rows(run_dir):
    out = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in out]


def start_script(*args):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(
        [sys.executable, str(ROOT / "experiments" / "ppo.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(condition, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


LONG = [*TINY[:-2], "--total-timesteps", str(64 * 600), "--updates-per-chunk", "1"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    proc = run_script("ppo.py", *TINY, "--run-dir", str(run_dir), "--updates-per-chunk", "1")
    assert proc.returncode == 0, proc.stderr
    return run_dir


@pytest.mark.slow
def test_sigint_saves_a_checkpoint_and_says_how_to_resume(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_script(*LONG, "--run-dir", str(run_dir), "--no-progress")
    metrics = run_dir / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 3, proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "SIGINT: saving a checkpoint" in stderr
    assert f"continue with: python {ROOT / 'experiments' / 'ppo.py'} --resume {run_dir}" in stdout
    done = json.loads((run_dir / "summary.json").read_text())["num_updates"]
    assert 3 <= done < 600 and (run_dir / "checkpoints" / str(done)).is_dir()
    # Resuming picks up there (a shorter budget is not allowed: the config is the run's).
    resumed = run_script("ppo.py", "--resume", str(run_dir), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming at update {done}" in resumed.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["num_updates"] == 600 and summary["resumed_from_update"] == done
    assert [r["update"] for r in rows(run_dir)] == list(range(1, 601))


@pytest.mark.slow
def test_sigkill_loses_at_most_the_work_since_the_last_checkpoint(tmp_path, finished_run):
    # The same tiny run as ``finished_run``, killed hard after its third checkpoint, then
    # resumed: it must end exactly where the uninterrupted run ended.
    run_dir = tmp_path / "run"
    proc = start_script(
        *TINY,
        "--run-dir",
        str(run_dir),
        "--updates-per-chunk",
        "1",
        "--no-progress",
        "--total-timesteps",
        str(64 * 40),
    )
    checkpoints = run_dir / "checkpoints"
    wait_for(lambda: checkpoints.is_dir() and len(list(checkpoints.glob("[0-9]*"))) >= 3, proc)
    proc.kill()
    proc.communicate()
    resumed = run_script("ppo.py", "--resume", str(run_dir), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    whole_dir = tmp_path / "whole"
    whole = run_script(
        "ppo.py", *TINY, "--run-dir", str(whole_dir), "--total-timesteps", str(64 * 40)
    )
    assert whole.returncode == 0, whole.stderr
    assert rows(run_dir) == rows(whole_dir)


def test_resuming_with_a_changed_flag_is_refused(finished_run):
    before = tree_digest(finished_run)
    proc = run_script("ppo.py", "--resume", str(finished_run), "--lr", "0.1")
    assert proc.returncode == 2
    assert "--lr cannot change when resuming" in proc.stderr
    assert tree_digest(finished_run) == before


@pytest.mark.parametrize("case", ["missing", "no checkpoint", "other run", "corrupted"])
def test_bad_resume_exits_2_with_one_line_and_touches_nothing(tmp_path, finished_run, case):
    run_dir = tmp_path / "run"
    if case == "no checkpoint":
        proc = run_script("ppo.py", *TINY, "--run-dir", str(run_dir), "--no-checkpoints")
        assert proc.returncode == 0, proc.stderr
    elif case == "other run":
        shutil.copytree(finished_run, run_dir)
        config = json.loads((run_dir / "config.json").read_text())
        config["config"]["hidden_sizes"] = [16]
        (run_dir / "config.json").write_text(json.dumps(config))
    elif case == "corrupted":
        shutil.copytree(finished_run, run_dir)
        for path in (run_dir / "checkpoints").glob("*/state/**/*"):
            if path.is_file() and path.stat().st_size > 0:
                path.write_bytes(b"\0" * path.stat().st_size)
    before = tree_digest(run_dir) if run_dir.exists() else None
    proc = run_script("ppo.py", "--resume", str(run_dir), "--no-progress")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    expected = {
        "missing": "does not exist",
        "no checkpoint": "has no complete checkpoint",
        "other run": "does not match this run's configuration (hidden_sizes",
        "corrupted": "cannot be read",
    }[case]
    assert expected in lines[0]
    assert (tree_digest(run_dir) if run_dir.exists() else None) == before


@pytest.mark.slow
def test_a_saved_config_reproduces_the_run_bit_for_bit(tmp_path, finished_run):
    again = tmp_path / "again"
    proc = run_script(
        "ppo.py",
        "--config",
        str(finished_run / "config.json"),
        "--run-dir",
        str(again),
        "--updates-per-chunk",
        "3",
    )
    assert proc.returncode == 0, proc.stderr
    assert rows(again) == rows(finished_run)


def test_presets_are_named_in_help_and_selectable(tmp_path):
    help_text = run_script("ppo.py", "--help").stdout
    assert "Presets:" in help_text and "Pendulum-v1" in help_text and "--preset" in help_text
    proc = run_script("ppo.py", "--preset", "NoSuchPreset", "--run-dir", str(tmp_path / "x"))
    assert proc.returncode == 2 and "unknown preset 'NoSuchPreset'; presets:" in proc.stderr
