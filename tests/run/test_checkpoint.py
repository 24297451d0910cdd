"""Checkpoints through the life of a run: exact resume, retention, fallbacks, and errors that
never touch what exists."""

import dataclasses
import errno
import json
import shutil
from pathlib import Path

import jax
import pytest

from purerl import algos
from purerl.options import options_for
from purerl.run import checkpoint, session
from purerl.run.setup import TrainRequest
from tests.helpers import leaves_equal, metric_rows, run_cli, tree_digest

PPO = algos.get("ppo").smoke
DQN = algos.get("dqn").smoke


class StopAfter:
    """Stands in for ``StopOnSignal``: asks to stop after ``chunks`` chunks."""

    def __init__(self, chunks: int):
        self.left = chunks
        self.signum = None

    def requested(self) -> bool:
        self.left -= 1
        if self.left == 0:
            self.signum = 2
        return self.left == 0


def run(name, cfg, run_dir, stop=None, resume=False, resume_from=None, **options):
    spec = algos.get(name)
    options = {"progress": False, "updates_per_chunk": 1, **options}
    opts = options_for(spec)(run_dir=None if resume else str(run_dir), **options)
    request = TrainRequest(
        spec, cfg, opts, resume=Path(run_dir) if resume else None, resume_from=resume_from
    )
    return session.run(request, stop)


@pytest.fixture(scope="module")
def ppo_whole(tmp_path_factory):
    """PPO's smoke run, uninterrupted and without checkpoints, and its run directory: what the
    resumed runs below must equal."""
    run_dir = tmp_path_factory.mktemp("whole") / "run"
    return run("ppo", PPO, run_dir, checkpoints=False), run_dir


def smoke_of(variant: str):
    """An algorithm's name and smoke config; ``ppo+gru`` is PPO's with a small GRU."""
    name, _, network = variant.partition("+")
    cfg = algos.get(name).smoke
    return name, dataclasses.replace(cfg, network=network, rnn_size=16) if network else cfg


@pytest.mark.parametrize("variant", [*algos.names(), "ppo+gru"])
@pytest.mark.slow
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, monkeypatch, variant):
    programs = []
    compile_lowered = jax.stages.Lowered.compile

    def record_program(lowered, *args, **kwargs):
        # Every program the loop compiles ahead of time here is a new run's initialisation
        # (``jit_build``) or a training chunk.
        programs.append(lowered.as_text())
        return compile_lowered(lowered, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Lowered, "compile", record_program)
    name, cfg = smoke_of(variant)
    cfg = dataclasses.replace(cfg, num_seeds=2)
    whole = run(name, cfg, tmp_path / "whole", checkpoints=False)
    stopped = run(name, cfg, tmp_path / "cut", stop=StopAfter(3))
    assert stopped.result.interrupted and stopped.summary.num_updates == 3
    resumed = run(name, cfg, tmp_path / "cut", resume=True)
    # Restored agents lower to the fresh run's program, so a resume loads it from the
    # compilation cache instead of compiling it again.
    chunks = [text for text in programs if not text.startswith("module @jit_build ")]
    assert len(programs) == 5 and len(chunks) == 3 and chunks[2] == chunks[0]
    assert not resumed.result.interrupted and resumed.summary.resumed_from_update == 3
    assert leaves_equal(whole.result.agents, resumed.result.agents)
    assert metric_rows(tmp_path / "whole") == metric_rows(tmp_path / "cut")
    for key in ["per_seed_final_return", "num_updates", "total_env_steps"]:
        assert getattr(whole.summary, key) == getattr(resumed.summary, key)


@pytest.mark.slow
def test_resumed_summary_counts_the_time_of_every_process(tmp_path):
    run("ppo", PPO, tmp_path / "cut", stop=StopAfter(2))
    resumed = run("ppo", PPO, tmp_path / "cut", resume=True).summary
    first, second = resumed.sessions
    assert (first["first_update"], first["last_update"]) == (0, 2)
    assert (second["first_update"], second["last_update"]) == (2, 6)
    assert resumed.train_time_s == pytest.approx(first["train_time_s"] + second["train_time_s"])
    per_update = PPO.env_steps_per_update
    assert first["env_steps"] + second["env_steps"] == 6 * per_update == resumed.total_env_steps
    assert resumed.steps_per_second == pytest.approx(6 * per_update / resumed.train_time_s)


@pytest.mark.slow
def test_resume_drops_metric_rows_written_after_the_last_checkpoint(tmp_path, ppo_whole):
    # Checkpoints every 4 updates; stopping after update 5 saves at 5 too, so emulate a kill
    # after update 5 by deleting that checkpoint: rows 5 must go, and the resumed run equals
    # an uninterrupted one.
    whole, whole_dir = ppo_whole
    run("ppo", PPO, tmp_path / "cut", stop=StopAfter(5), checkpoint_every=4)
    shutil.rmtree(tmp_path / "cut" / "checkpoints" / "5")
    with open(tmp_path / "cut" / "metrics.jsonl", "a") as f:
        f.write('{"update": 6, "trunc')  # a row cut off by the kill
    resumed = run("ppo", PPO, tmp_path / "cut", resume=True)
    assert resumed.summary.resumed_from_update == 4
    assert metric_rows(whole_dir) == metric_rows(tmp_path / "cut")
    assert leaves_equal(whole.result.agents.state.params, resumed.result.agents.state.params)


def test_keeps_the_latest_and_the_best(tmp_path):
    run("ppo", PPO, tmp_path / "run", keep_checkpoints=2, keep_best=1, checkpoint_every=1)
    steps = checkpoint.available_steps(tmp_path / "run")
    assert steps[-2:] == [5, 6] and len(steps) in (2, 3)
    best = checkpoint.resolve_step(tmp_path / "run", "best")
    assert best in steps
    records = {
        s: json.loads(
            (tmp_path / "run" / "checkpoints" / str(s) / "record" / "metadata").read_text()
        )
        for s in steps
        if (tmp_path / "run" / "checkpoints" / str(s) / "record" / "metadata").exists()
    }
    scored = {s: r["mean_return"] for s, r in records.items() if r["mean_return"] is not None}
    if scored:
        assert scored[best] == max(scored.values())


@pytest.mark.slow
def test_a_resume_keeps_the_checkpoints_the_run_was_told_to_keep(tmp_path):
    run("ppo", PPO, tmp_path / "run", stop=StopAfter(4), keep_checkpoints=100, checkpoint_every=1)
    assert checkpoint.available_steps(tmp_path / "run") == [1, 2, 3, 4]
    # Resumed from the command line with no run flags: the saved options (keep 100, a
    # checkpoint every update) still hold.
    result = run_cli("train", "--resume", tmp_path / "run")
    assert result.code == 0, result.stderr
    assert checkpoint.available_steps(tmp_path / "run") == [1, 2, 3, 4, 5, 6]
    # A safe option may change, and the change is recorded with the run.
    result = run_cli("train", "ppo", "--resume", tmp_path / "run", "--keep-checkpoints", "2")
    assert result.code == 0, result.stderr
    changes = json.loads((tmp_path / "run" / "resumes.jsonl").read_text().splitlines()[-1])
    assert changes["changed_options"] == {"keep_checkpoints": [100, 2]}


@pytest.mark.slow
def test_a_damaged_latest_checkpoint_falls_back_to_the_one_before(tmp_path, ppo_whole):
    whole, whole_dir = ppo_whole
    cut = tmp_path / "cut"
    run("ppo", PPO, cut, stop=StopAfter(4), checkpoint_every=1, keep_checkpoints=10)
    for path in (cut / "checkpoints" / "4").rglob("*"):
        if path.is_file() and path.stat().st_size > 0:
            path.write_bytes(b"\0" * path.stat().st_size)
    damaged = tree_digest(cut / "checkpoints" / "4")
    resumed = run("ppo", PPO, cut, resume=True)
    assert resumed.summary.resumed_from_update == 3
    assert leaves_equal(whole.result.agents, resumed.result.agents)
    assert metric_rows(whole_dir) == metric_rows(cut)
    # Kept, byte for byte, out of the way of the new checkpoints; the resume says so.
    (moved,) = (cut / "unreadable-checkpoints").iterdir()
    assert moved.name.startswith("4-") and tree_digest(moved) == damaged
    (resume,) = [json.loads(line) for line in (cut / "resumes.jsonl").read_text().splitlines()]
    assert resume["from_update"] == 3 and resume["skipped_checkpoints"][0]["update"] == 4
    # In words, not the JSON parser's "Expecting value: line 1 column 1".
    reason = resume["skipped_checkpoints"][0]["reason"]
    assert reason.startswith("its record file is not valid JSON"), reason


def test_a_garbage_folder_named_like_a_step_is_skipped_and_kept(tmp_path):
    cut = tmp_path / "cut"
    run("ppo", PPO, cut, stop=StopAfter(3), checkpoint_every=1, keep_checkpoints=10)
    (cut / "checkpoints" / "5").mkdir()
    (cut / "checkpoints" / "5" / "junk.txt").write_text("not a checkpoint")
    resumed = run("ppo", PPO, cut, resume=True)
    assert resumed.summary.resumed_from_update == 3 and resumed.summary.num_updates == 6
    (moved,) = (cut / "unreadable-checkpoints").iterdir()
    assert (moved / "junk.txt").read_text() == "not a checkpoint"


@pytest.mark.slow
def test_resume_from_an_explicit_step(tmp_path, ppo_whole):
    whole, _ = ppo_whole
    cut = tmp_path / "cut"
    run("ppo", PPO, cut, stop=StopAfter(4), checkpoint_every=1, keep_checkpoints=10)
    # Saving after every update again, the resumed run meets the steps of checkpoints 3 and 4,
    # which it replaces: they are set aside, files kept, and the run saves its own.
    resumed = run(
        "ppo", PPO, cut, resume=True, resume_from=2, checkpoint_every=1, keep_checkpoints=10
    )
    assert resumed.summary.resumed_from_update == 2
    assert leaves_equal(whole.result.agents, resumed.result.agents)
    moved = sorted(p.name.partition("-")[0] for p in (cut / "superseded-checkpoints").iterdir())
    assert moved == ["3", "4"]
    assert checkpoint.available_steps(cut) == list(range(1, PPO.num_updates + 1))
    with pytest.raises(checkpoint.CheckpointError, match="has no checkpoint 9"):
        run("ppo", PPO, cut, resume=True, resume_from=9)


@pytest.mark.slow
def test_dqn_without_buffer_in_checkpoints_resumes_with_an_empty_buffer(tmp_path):
    run("dqn", DQN, tmp_path / "run", stop=StopAfter(3), checkpoint_buffer=False)
    resumed = run("dqn", DQN, tmp_path / "run", resume=True, checkpoint_buffer=False)
    assert resumed.summary.num_updates == DQN.num_updates
    latest = checkpoint.resolve_step(tmp_path / "run", "latest")
    saved = tmp_path / "run" / "checkpoints" / str(latest) / "record" / "metadata"
    assert json.loads(saved.read_text())["transient"] == ["buffer"]


@pytest.mark.slow
def test_errors_name_the_problem_and_leave_checkpoints_alone(tmp_path):
    fresh = run("ppo", PPO, tmp_path / "run")
    assert fresh.summary.num_updates == 6
    before = tree_digest(tmp_path / "run")
    with pytest.raises(checkpoint.CheckpointError, match="does not exist"):
        run("ppo", PPO, tmp_path / "missing", resume=True)
    other = dataclasses.replace(PPO, hidden_sizes=(8,))
    with pytest.raises(checkpoint.CheckpointError, match="hidden_sizes"):
        run("ppo", other, tmp_path / "run", resume=True)
    with pytest.raises(checkpoint.CheckpointError, match="written by ppo, not dqn"):
        run("dqn", DQN, tmp_path / "run", resume=True)
    assert tree_digest(tmp_path / "run") == before


@pytest.mark.slow
def test_a_full_disk_stops_with_one_message_and_the_run_resumes_once_space_is_back(
    tmp_path, monkeypatch, ppo_whole
):
    whole, _ = ppo_whole
    saves = {"count": 0}
    real_save = checkpoint.Checkpointer.save

    def save_until_full(self, updates_done, *args, **kwargs):
        saves["count"] += 1
        if saves["count"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(self, updates_done, *args, **kwargs)

    monkeypatch.setattr(checkpoint.Checkpointer, "save", save_until_full)
    with pytest.raises(Exception) as err:
        run("ppo", PPO, tmp_path / "cut", checkpoint_every=1)
    message = str(err.value)
    assert "no space left on the device of" in message and "iB free" in message
    assert "the last complete checkpoint (update 2) is kept" in message
    monkeypatch.setattr(checkpoint.Checkpointer, "save", real_save)
    assert checkpoint.available_steps(tmp_path / "cut") == [1, 2]
    resumed = run("ppo", PPO, tmp_path / "cut", resume=True)
    assert leaves_equal(whole.result.agents, resumed.result.agents)


@pytest.mark.slow
def test_a_checkpoint_of_an_older_format_is_refused(tmp_path):
    import purerl
    from purerl.run.evaluate import load_agents

    run_dir = tmp_path / "run"
    tiny = dict(num_envs=4, rollout_len=32, num_minibatches=2, num_epochs=1, hidden_sizes=(16,))
    purerl.train("ppo", env="Pendulum-v1", total_timesteps=128, run_dir=run_dir, **tiny)
    load_agents(run_dir)
    # As a checkpoint written before the Gaussian moved to units of the action range (and
    # before checkpoints had checksums).
    (metadata,) = run_dir.glob("checkpoints/*/record/metadata")
    record = json.loads(metadata.read_text())
    assert record.pop("checksum") == "crc32"
    assert record["format_version"] == checkpoint.FORMAT_VERSION == 2
    metadata.write_text(json.dumps({**record, "format_version": 1}))
    (metadata.parents[1] / "checksums.json").unlink()
    files = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    with pytest.raises(checkpoint.CheckpointError, match="format version 1, this purerl reads"):
        load_agents(run_dir)
    result = run_cli("eval", str(run_dir), "--episodes", "2")
    assert result.code != 0 and "train the run again" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == files


def test_a_field_added_since_a_checkpoint_reads_as_its_default():
    """DQN's ``network`` came after runs that lack it: their checkpoints still match the run
    (whose config.json reads it as ``mlp``), and a run with another value still does not."""
    from purerl.algos.dqn import DQNConfig
    from purerl.run.rundir import CheckpointRecord, fields_json, run_identity

    older = {k: v for k, v in fields_json(DQNConfig()).items() if k != "network"}
    record = CheckpointRecord("dqn", older, None, checkpoint.FORMAT_VERSION, 1, None, [], [], [])
    checkpoint._check_identity(record, run_identity("dqn", DQNConfig()), "checkpoint 1")
    other = run_identity("dqn", DQNConfig(network="mymodule:Torso"))
    with pytest.raises(checkpoint.CheckpointError, match="network: 'mlp' vs 'mymodule:Torso'"):
        checkpoint._check_identity(record, other, "checkpoint 1")
