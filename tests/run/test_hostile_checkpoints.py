"""Checkpoints damaged in ways their files alone do not show: one flipped bit in an array file
that still decodes, and records that are valid JSON of the wrong content. Each is caught (the
checksums saved with every checkpoint, a strictly parsed record), skipped and named: ``eval``
and ``purerl.load`` take the newest intact checkpoint, a resume continues from it and retrains
to the uninterrupted run's metrics rows. A checkpoint saved before checksums restores as before.

One tiny PPO run is trained for the module (a checkpoint after every update); each test that
damages it works on a copy.
"""

import json
import re
import shutil
import zlib
from pathlib import Path

import pytest

from purerl import algos
from purerl.core.program import init_agents
from purerl.run import checkpoint, rundir
from purerl.run.evaluate import load_agents
from tests.helpers import TINY_ARGS, leaves_equal, metric_rows, run_cli

HIDDEN = TINY_ARGS.index("--hidden-sizes")
RUN_ARGS = [*TINY_ARGS[:HIDDEN], "--hidden-sizes", "64", "64", *TINY_ARGS[HIDDEN + 2 :]]
"""The tiny run with layers of 64: arrays large enough that orbax stores them in data files of
their own (up to 1 KiB it stores values inside its checksummed index nodes, where a flipped bit
is caught without purerl's checksums)."""

LAST = 6
"""The run's updates, and its newest checkpoint."""


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("hostile") / "run"
    result = run_cli(
        "train", "ppo", *RUN_ARGS, "--run-dir", run_dir, "--checkpoint-every", "1",
        "--keep-checkpoints", "10", "--updates-per-chunk", "1",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert checkpoint.available_steps(run_dir) == list(range(1, LAST + 1))
    return run_dir


@pytest.fixture
def run_copy(trained, tmp_path) -> Path:
    shutil.copytree(trained, tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture(scope="module")
def fresh(trained):
    """Fresh agents and the identity of the module's run: what a restore reads onto."""
    record = rundir.read_config(trained)
    spec = algos.get(record.algo)
    cfg = record.make_config(spec.config_cls, trained)
    agents = init_agents(spec.make(cfg).algo, [cfg.seed])
    return agents, rundir.run_identity(spec.name, cfg)


def newest_readable(run_dir: Path, fresh) -> tuple[int, list[checkpoint.UnreadableCheckpointError]]:
    snapshot, skipped = checkpoint.restore_newest_readable(
        run_dir, checkpoint.available_steps(run_dir), *fresh, any_layout=True
    )
    return snapshot.updates_done, skipped


def flip_a_bit_of_the_largest_file(run_dir: Path, step: int) -> str:
    """Flips the lowest bit of the middle byte of the largest file of checkpoint ``step`` (an
    array data file); returns its path in the checkpoint."""
    folder = rundir.checkpoint_path(run_dir, step)
    largest = max((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    assert largest.parent.name == "d", largest  # orbax's array data, not its metadata
    data = bytearray(largest.read_bytes())
    data[len(data) // 2] ^= 1
    largest.write_bytes(bytes(data))
    return largest.relative_to(folder).as_posix()


# The checksum itself.


def test_the_checksums_are_the_crc32_of_each_file_orbax_wrote(tmp_path, monkeypatch):
    monkeypatch.setattr(rundir.checksums, "CHECKSUM_BLOCK_BYTES", 7)  # files read in several blocks
    contents = {"state/d/a": bytes(range(256)) * 3, "state/empty": b"", "record/metadata": b"{}"}
    for name, data in contents.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "_CHECKPOINT_METADATA").write_text("orbax rewrites this as it commits")
    expected = {name: [len(data), zlib.crc32(data)] for name, data in contents.items()}
    assert rundir.file_checksums(tmp_path) == expected
    rundir.seal_checkpoint(tmp_path)
    assert rundir.read_checksums(tmp_path) == expected
    assert rundir.damaged_files(tmp_path, expected) == []


def test_every_single_flipped_bit_changes_the_checksum(tmp_path):
    path = tmp_path / "file"
    data = bytes(range(64))
    path.write_bytes(data)
    original = rundir.file_crc32(path)
    assert original == zlib.crc32(data)
    for bit in range(len(data) * 8):
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        path.write_bytes(bytes(flipped))
        assert rundir.file_crc32(path) != original, bit


def test_every_checkpoint_carries_the_checksums_of_its_files(trained):
    for step in checkpoint.available_steps(trained):
        folder = rundir.checkpoint_path(trained, step)
        assert rundir.read_checksums(folder) == rundir.file_checksums(folder)
        assert any(
            name.startswith("state/") and "/d/" in name for name in rundir.file_checksums(folder)
        )
        record = json.loads((folder / "record" / "metadata").read_text())
        assert record["checksum"] == "crc32"


# One flipped bit.


def test_a_flipped_bit_that_still_decodes_is_caught_by_eval_and_load(
    trained, run_copy, monkeypatch
):
    import purerl

    intact = load_agents(trained, str(LAST)).agents
    name = flip_a_bit_of_the_largest_file(run_copy, LAST)
    # Without the checksums the damaged checkpoint restores, to other values: the silent case.
    with monkeypatch.context() as unchecked:
        unchecked.setattr(checkpoint, "damaged_files", lambda folder, checksums: [])
        assert not leaves_equal(load_agents(run_copy, str(LAST)).agents, intact)
    result = run_cli("eval", run_copy, "--episodes", "2")
    assert result.code == 0, result.stderr
    assert f"checkpoint {LAST - 1} (latest)" in result.stdout
    assert result.stderr.strip() == (
        f"skipped checkpoint {LAST}: its file {name} does not match the checksum saved with it "
        "(damaged on disk)"
    )
    with pytest.warns(UserWarning, match=f"skipped checkpoint {LAST}: its file {name}"):
        purerl.load(run_copy)
    with pytest.raises(checkpoint.CheckpointError, match="does not match the checksum"):
        load_agents(run_copy, str(LAST))


def test_a_resume_past_a_flipped_bit_retrains_to_the_uninterrupted_rows(trained, run_copy):
    name = flip_a_bit_of_the_largest_file(run_copy, LAST)
    result = run_cli("train", "--resume", run_copy)
    assert result.code == 0, result.stderr
    assert f"skipped checkpoint {LAST}: its file {name}" in result.stderr
    assert metric_rows(run_copy) == metric_rows(trained)
    (moved,) = (run_copy / rundir.UNREADABLE_DIR).iterdir()
    assert moved.name.startswith(f"{LAST}-")
    resume = json.loads((run_copy / rundir.RESUMES_FILE).read_text())
    assert resume["from_update"] == LAST - 1
    assert "does not match the checksum" in resume["skipped_checkpoints"][0]["reason"]


def test_a_divergence_after_a_resume_names_the_intact_checkpoints(run_copy, monkeypatch):
    from purerl.core import loop

    flip_a_bit_of_the_largest_file(run_copy, 2)
    monkeypatch.setattr(loop, "first_nonfinite", lambda report: (0, report.first_update + 1))
    result = run_cli("train", "--resume", run_copy, "--resume-from", "4")
    assert result.code == 1, result.stderr
    assert "checkpoint 4, saved before it, is kept" in result.stderr
    assert "resume from another with --resume-from (intact checkpoints: 1, 3-4)" in result.stderr


# Records of the wrong content.


def as_json(value):
    return lambda record: value


def without(field):
    return lambda record: {k: v for k, v in record.items() if k != field}


def replacing(**fields):
    return lambda record: {**record, **fields}


WRONG_RECORDS = {
    "another algorithm's bare name": (
        as_json({"algo": "ppo"}),
        "its record has no config, format_version, updates_done",
    ),
    "a list": (as_json([1, 2, 3]), "its record is a list, not a checkpoint record"),
    "a number": (as_json(7), "its record is 7, not a checkpoint record"),
    "no update count": (without("updates_done"), "its record has no updates_done"),
    "a mistyped update count": (
        replacing(updates_done="six"),
        "its record's updates_done is 'six', not a count of updates",
    ),
    "a mistyped configuration": (
        replacing(config=["ppo"]),
        "its record's config is a list, not an object",
    ),
    "a mistyped layout": (replacing(placement={"mode": 3}), "its record's placement is an object"),
    "no format version": (without("format_version"), "its record has no format_version"),
    "a format from the future": (
        replacing(format_version=checkpoint.FORMAT_VERSION + 1),
        "written by a newer purerl",
    ),
    "another step's record": (
        replacing(updates_done=LAST - 1),
        f"its record is of update {LAST - 1}, not {LAST}",
    ),
}


def rewrite_record(run_dir: Path, step: int, change) -> None:
    """Replaces checkpoint ``step``'s record by ``change(record)`` and seals the checkpoint again,
    so that its checksums hold and only the record's content is wrong."""
    folder = rundir.checkpoint_path(run_dir, step)
    path = folder / "record" / "metadata"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    rundir.seal_checkpoint(folder)


@pytest.mark.parametrize("case", WRONG_RECORDS)
def test_a_record_of_the_wrong_content_is_skipped_and_named(case, run_copy, fresh):
    change, reason = WRONG_RECORDS[case]
    rewrite_record(run_copy, LAST, change)
    step, skipped = newest_readable(run_copy, fresh)
    assert step == LAST - 1 and [err.step for err in skipped] == [LAST]
    assert reason in skipped[0].reason, skipped[0].reason


def test_a_missing_checksum_file_is_skipped_and_named(run_copy, fresh):
    (rundir.checkpoint_path(run_copy, LAST) / rundir.CHECKSUMS_FILE).unlink()
    step, skipped = newest_readable(run_copy, fresh)
    assert step == LAST - 1 and skipped[0].reason == "its checksum file is missing"


def test_the_records_eval_and_resume_once_stopped_at_are_passed_over(trained, run_copy):
    rewrite_record(run_copy, LAST, as_json({"algo": "ppo"}))
    result = run_cli("eval", run_copy, "--episodes", "2")
    assert result.code == 0, result.stderr
    assert result.stderr.strip() == (
        f"skipped checkpoint {LAST}: its record has no config, format_version, updates_done"
    )
    result = run_cli("train", "--resume", run_copy)
    assert result.code == 0, result.stderr
    assert metric_rows(run_copy) == metric_rows(trained)


def test_wrong_records_raise_one_error_type_saying_what_is_wrong():
    whole = {"algo": "ppo", "config": {}, "format_version": 2, "updates_done": 3}
    assert rundir.CheckpointRecord.from_json(whole).transient == []
    for change, reason in WRONG_RECORDS.values():
        if "newer purerl" in reason or "of update" in reason:
            continue  # checked against the checkpoint it is read from
        with pytest.raises(rundir.DamagedFileError, match=re.escape(reason)):
            rundir.CheckpointRecord.from_json(change({**whole, "updates_done": LAST}))


# Checkpoints saved before checksums.


def test_a_checkpoint_saved_before_checksums_restores_unchecked(trained, run_copy, fresh):
    for step in checkpoint.available_steps(run_copy):
        folder = rundir.checkpoint_path(run_copy, step)
        (folder / rundir.CHECKSUMS_FILE).unlink()
        path = folder / "record" / "metadata"
        path.write_text(json.dumps(without("checksum")(json.loads(path.read_text()))))
    step, skipped = newest_readable(run_copy, fresh)
    assert step == LAST and skipped == []
    loaded = load_agents(run_copy)
    assert loaded.step == LAST and loaded.skipped == ()
    assert leaves_equal(loaded.agents, load_agents(trained).agents)
