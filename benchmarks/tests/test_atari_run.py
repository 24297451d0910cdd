"""The Atari learning run a lent GPU does in one call, at toy size on this CPU, and its import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import table
from purerl.presets.ppo import PRESETS

ROOT = Path(__file__).resolve().parents[2]


def test_the_slm_lab_preset_is_its_protocol_at_10m_frames():
    cfg = PRESETS["Breakout-v5-slm"]
    assert (cfg.num_envs, cfg.rollout_len, cfg.num_epochs) == (16, 128, 4)
    assert cfg.num_envs * cfg.rollout_len // cfg.num_minibatches == 256  # SLM Lab's minibatch
    assert (cfg.gae_lambda, cfg.clip_eps, cfg.ent_coef, cfg.vf_coef) == (0.70, 0.1, 0.01, 0.5)
    assert cfg.env_options == ("sticky_actions=0.25",) and cfg.anneal_lr
    frames = cfg.num_updates * cfg.env_steps_per_update * 4
    assert 10_000_000 <= frames < 10_000_000 + 4 * cfg.env_steps_per_update
    assert PRESETS["Qbert-v5-slm"].gae_lambda == 0.95


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.envpool
def test_dry_run_trains_evaluates_and_brings_back_what_the_table_imports(tmp_path):
    pytest.importorskip("envpool")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.device.atari_run", "--out", str(out), "--dry-run",
         "--run-dir", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    steps = report["steps"]
    assert steps["train"]["status"] == "finished" and steps["train"]["num_updates"] == 2
    assert "--preset Breakout-v5-slm" in steps["train"]["command"]
    assert steps["eval"]["exit_code"] == 0 and steps["video"]["exit_code"] == 0
    assert (out / "episode.gif").read_bytes()[:6] == b"GIF89a"
    assert report["header"]["backend"] == "cpu"
    returned = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert len(returned) <= 8, returned  # what a device run brings back
    assert "resume.tar.gz" not in returned  # a finished run needs no checkpoint back

    # The brought-back run is a run directory the table imports, with the device's machine.
    outcome = table.import_runs(
        table.BenchTableArgs(import_run=(f"ppo-Breakout-v5-slm={out / 'run'}",))
    )[1][0]
    assert outcome.summary.num_updates == 2 and outcome.cfg.gae_lambda == 0.70
    machine = table.this_machine(str(out / "run"))
    assert machine.machine == "cpu" and machine.versions["jax"] == report["header"]["jax"]


def test_an_unfinished_run_comes_back_in_parts_that_resume_whole(tmp_path, monkeypatch):
    from benchmarks.device import atari_run

    run_dir, out = tmp_path / "run", tmp_path / "out"
    (run_dir / "checkpoints" / "7" / "state").mkdir(parents=True)
    (run_dir / "checkpoints" / "3").mkdir()
    weights = os.urandom(50_000)  # incompressible, as trained weights are
    (run_dir / "checkpoints" / "7" / "state" / "weights").write_bytes(weights)
    for name in atari_run.RUN_FILES:
        (run_dir / name).write_text(name)
    out.mkdir()
    for name in ("log.txt", "report.json", "episode.gif"):
        (out / name).write_text(name)
    monkeypatch.setattr(atari_run, "PART_BYTES", 20_000)

    kept = atari_run.bring_back(run_dir, out, finished=False, scratch=tmp_path)
    assert kept == ["resume.tar.gz.0", "resume.tar.gz.1", "resume.tar.gz.2"]
    assert all((out / name).stat().st_size <= 20_000 for name in kept)
    assert not (out / "run").exists()  # its files are in the archive
    assert len(list(out.iterdir())) <= atari_run.RETURNED_FILES

    again = tmp_path / "again" / "run"
    again.parent.mkdir()
    atari_run.extract_resume(out / "resume.tar.gz", again)
    assert (again / "checkpoints" / "7" / "state" / "weights").read_bytes() == weights
    assert not (again / "checkpoints" / "3").exists()  # the newest checkpoint only
    assert sorted(p.name for p in again.iterdir()) == sorted(["checkpoints", *atari_run.RUN_FILES])

    (out / "resume.tar.gz.1").unlink()  # a part left behind: one line, exit code 2
    code = atari_run.main(["--out", str(tmp_path / "next"), "--dry-run",
                           "--resume", str(out / "resume.tar.gz")])  # fmt: skip
    assert code == 2


def test_a_finished_run_comes_back_as_a_run_directory(tmp_path):
    from benchmarks.device import atari_run

    run_dir, out = tmp_path / "run", tmp_path / "out"
    (run_dir / "checkpoints" / "2").mkdir(parents=True)
    for name in atari_run.RUN_FILES:
        (run_dir / name).write_text(name)
    out.mkdir()
    kept = atari_run.bring_back(run_dir, out, finished=True, scratch=tmp_path)
    assert kept == [f"run/{name}" for name in atari_run.RUN_FILES]
