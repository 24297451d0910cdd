"""Links and special files inside a run directory never redirect a write (issue #55).

A run directory is data (STYLE.md, section 15): a symbolic link in place of one of its files
or folders must not make purerl truncate, append to, replace or delete something outside it,
and a FIFO must not hang it. The helpers of ``purerl.run.writes`` are tested on their own,
then every write site of ``purerl.run.rundir`` and the third-party folders, then the command:
``purerl train --resume`` on a copy of the session's tiny run with a link planted in it exits 2
with one line naming the link, and leaves the link's target byte for byte as it was. The run
directory itself may be a link: the user chose it.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
import re
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

from purerl.run import checkpoint, rundir
from purerl.run.plots import Curves, draw_trial_graphs
from purerl.run.writes import UnsafePathError, open_for_writing, replace_file, require_real_dir
from tests.helpers import one_error_line, run_cli, run_process

PRECIOUS = b"precious bytes, not purerl's\n"


@contextlib.contextmanager
def deadline(seconds: int = 10):
    """Fails the test instead of hanging it (an open or read of a FIFO blocks forever)."""

    def expired(signum, frame):
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outside_file(tmp_path: Path, name: str = "outside.txt") -> Path:
    target = tmp_path / "outside" / name
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(PRECIOUS)
    return target


def outside_dir(tmp_path: Path) -> Path:
    target = tmp_path / "outside-dir"
    target.mkdir()
    (target / "keep.bin").write_bytes(PRECIOUS)
    return target


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file below (or at) ``path`` with its bytes."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def make_hostile(path: Path, kind: str, tmp_path: Path) -> Path | None:
    """Puts a link (to a file or a directory outside), a FIFO or a directory at ``path``;
    returns the link's target."""
    if kind == "link to a file":
        target = outside_file(tmp_path)
    elif kind == "link to a directory":
        target = outside_dir(tmp_path)
    elif kind == "FIFO":
        os.mkfifo(path)
        return None
    else:
        path.mkdir()
        return None
    os.symlink(target, path)
    return target


# The helpers.

HOSTILE = ["link to a file", "link to a directory", "FIFO", "directory"]


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("write", ["append", "replace"])
def test_a_link_or_special_file_in_place_of_a_file_is_refused(tmp_path, kind, write):
    path = tmp_path / "run" / "data.jsonl"
    path.parent.mkdir()
    target = make_hostile(path, kind, tmp_path)
    before = snapshot(target) if target else None
    with deadline(), pytest.raises(UnsafePathError, match=re.escape(str(path))):
        if write == "append":
            open_for_writing(path).close()
        else:
            replace_file(path, b"new\n")
    assert target is None or snapshot(target) == before
    assert not (tmp_path / "run" / "data.jsonl.tmp").exists()


def test_regular_files_are_appended_to_and_replaced(tmp_path):
    path = tmp_path / "rows.jsonl"
    for line in ["a\n", "b\n"]:  # created, then appended to
        with open_for_writing(path) as file:
            file.write(line)
    assert path.read_text() == "a\nb\n"
    (tmp_path / "rows.jsonl.tmp").write_text("left by a killed process")
    replace_file(path, b"c\n")
    assert path.read_bytes() == b"c\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]  # no temporary file left


def test_a_link_at_the_temporary_name_is_refused(tmp_path):
    target = outside_file(tmp_path)
    os.symlink(target, tmp_path / "summary.json.tmp")
    with pytest.raises(UnsafePathError, match="summary.json.tmp is a symbolic link"):
        replace_file(tmp_path / "summary.json", b"{}\n")
    assert target.read_bytes() == PRECIOUS and not (tmp_path / "summary.json").exists()


def test_folders_must_be_real_directories_with_no_link_inside(tmp_path):
    target = outside_dir(tmp_path)
    os.symlink(target, tmp_path / "linked")
    with pytest.raises(UnsafePathError, match="linked is a symbolic link .* real folder"):
        require_real_dir(tmp_path / "linked", create=True)
    (tmp_path / "a-file").write_bytes(b"")
    with pytest.raises(UnsafePathError, match="a-file is a file where purerl writes a folder"):
        require_real_dir(tmp_path / "a-file")
    made = require_real_dir(tmp_path / "new", create=True, contents=True)
    assert made.is_dir() and not made.is_symlink()
    os.symlink(outside_file(tmp_path), made / "events.out.tfevents.1")
    require_real_dir(made)  # its entries are looked at only when asked
    with pytest.raises(UnsafePathError, match="events.out.tfevents.1 is a symbolic link"):
        require_real_dir(made, contents=True)
    os.unlink(made / "events.out.tfevents.1")
    os.mkfifo(made / "pipe")
    with pytest.raises(UnsafePathError, match="pipe is a FIFO"):
        require_real_dir(made, contents=True)
    assert snapshot(target) == {"keep.bin": PRECIOUS}


# The lock.


def test_a_lock_link_is_refused_before_its_target_is_opened(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    target = outside_file(tmp_path)
    os.symlink(target, run_dir / ".lock")
    # A holder of the target's lock: following the link, the lock would report it as the run's.
    holder = target.open("rb")
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    opened = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flags, *args, **kwargs):
        opened.append((path, flags))
        return real_os_open(path, flags, *args, **kwargs)

    def open_(path, *args, **kwargs):
        opened.append((path, 0))  # follows links
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    with pytest.raises(UnsafePathError, match=r"\.lock is a symbolic link"):
        rundir.RunLock(run_dir).acquire()
    monkeypatch.undo()
    holder.close()
    followed = [
        (path, flags)
        for path, flags in opened
        if isinstance(path, str | os.PathLike)
        and os.path.realpath(path) == str(target)
        and not flags & os.O_NOFOLLOW
    ]
    assert followed == [] and target.read_bytes() == PRECIOUS


def test_a_fifo_lock_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / ".lock")
    with deadline(), pytest.raises(UnsafePathError, match=r"\.lock is a FIFO"):
        rundir.RunLock(tmp_path).acquire()


# Every write of the run directory, on its own (no training).


def curves() -> Curves:
    returns = np.array([[1.0, 2.0, 3.0]])
    return Curves("ppo", "CartPole-v1", "finished", 0, np.arange(1, 4) * 64, returns)


WRITERS = {
    "config.json": lambda run: rundir.write_json(run / "config.json", {"algo": "ppo"}),
    "metrics.jsonl": lambda run: rundir.MetricsWriter(run, 64).close(),
    "resumes.jsonl": lambda run: rundir.record_resume(run, {"from_update": 1}),
    "returns_smoothed.png": lambda run: draw_trial_graphs(run, curves(), 2),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_each_file_writer_refuses_a_link_before_writing(tmp_path, name):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    target = outside_file(tmp_path)
    os.symlink(target, run_dir / name)
    with pytest.raises(UnsafePathError, match=f"{name} is a symbolic link"):
        WRITERS[name](run_dir)
    assert target.read_bytes() == PRECIOUS
    assert sorted(p.name for p in run_dir.iterdir()) == [name]  # nor anything else first


@pytest.mark.parametrize("kind", ["link to a file", "FIFO"])
def test_restoring_metrics_rows_refuses_before_reading(tmp_path, kind):
    target = make_hostile(tmp_path / rundir.METRICS_FILE, kind, tmp_path)
    with deadline(), pytest.raises(UnsafePathError, match="metrics.jsonl is a"):
        rundir.restore_metrics(tmp_path, 1, [{"update": 1}])
    assert target is None or target.read_bytes() == PRECIOUS


def test_a_checkpoint_is_not_set_aside_through_a_linked_folder(tmp_path):
    (tmp_path / "checkpoints" / "3").mkdir(parents=True)
    target = outside_dir(tmp_path)
    os.symlink(target, tmp_path / rundir.UNREADABLE_DIR)
    with pytest.raises(UnsafePathError, match="unreadable-checkpoints is a symbolic link"):
        rundir.set_aside_checkpoint(tmp_path, 3)
    assert (tmp_path / "checkpoints" / "3").is_dir() and snapshot(target) == {"keep.bin": PRECIOUS}


@pytest.mark.parametrize("entry", [False, True])
def test_orbax_and_tensorboardx_get_no_folder_with_a_link(tmp_path, entry):
    target = outside_dir(tmp_path)
    for name in (rundir.CHECKPOINTS_DIR, rundir.TENSORBOARD_DIR):
        if entry:  # a checkpoint orbax may delete, an event file name tensorboardX may open
            (tmp_path / name).mkdir()
            os.symlink(target, tmp_path / name / "7")
        else:
            os.symlink(target, tmp_path / name)
    identity = rundir.RunIdentity("ppo", {}, None)
    with pytest.raises(UnsafePathError, match="checkpoints.* is a symbolic link"):
        checkpoint.Checkpointer(tmp_path, identity)
    with pytest.raises(UnsafePathError, match="tensorboard.* is a symbolic link"):
        rundir.writable_tensorboard_dir(tmp_path)
    assert snapshot(target) == {"keep.bin": PRECIOUS}


# The command.


@pytest.fixture
def run_copy(tiny_run, tmp_path) -> Path:
    """A copy of the session's finished tiny run (links copied as links)."""
    return Path(shutil.copytree(tiny_run, tmp_path / "run", symlinks=True))


def plant(run_dir: Path, name: str, tmp_path: Path) -> Path:
    """Moves ``name`` out of the run and links it back: what purerl reads is unchanged."""
    target = tmp_path / "elsewhere" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if (run_dir / name).exists():
        shutil.move(run_dir / name, target)
    else:
        target.mkdir()
        (target / "keep.bin").write_bytes(PRECIOUS)
    os.symlink(target, run_dir / name)
    return target


def test_lock_and_resumes_links_leave_their_targets_untouched(run_copy, tmp_path):
    # The probe of issue #55, as a user's command: the lock used to write its PID through the
    # link, resumes.jsonl to gain a line.
    lock, resumes = outside_file(tmp_path, "lock"), outside_file(tmp_path, "resumes")
    os.unlink(run_copy / ".lock")
    os.symlink(lock, run_copy / ".lock")
    os.symlink(resumes, run_copy / "resumes.jsonl")
    proc = run_process("-m", "purerl", "train", "--resume", run_copy)
    one_error_line(proc, f"{run_copy / '.lock'} is a symbolic link (to {lock})")
    assert lock.read_bytes() == PRECIOUS and resumes.read_bytes() == PRECIOUS


@pytest.mark.parametrize(
    "name",
    [
        "config.json",
        "metrics.jsonl",
        "summary.json",
        "returns.png",
        "resumes.jsonl",
        "checkpoints",
        "tensorboard",
        "superseded-checkpoints",
    ],
)
def test_a_resume_refuses_a_link_in_the_run(run_copy, tmp_path, name):
    target = plant(run_copy, name, tmp_path)
    before = snapshot(target)
    result = run_cli("train", "--resume", run_copy)
    one_error_line(result, f"{run_copy / name} is a symbolic link (to {target})")
    assert snapshot(target) == before


def test_a_resume_refuses_a_linked_checkpoint_orbax_could_delete(run_copy, tmp_path):
    target = plant(run_copy, "checkpoints/1", tmp_path)
    result = run_cli("train", "--resume", run_copy)
    one_error_line(result, f"{run_copy / 'checkpoints' / '1'} is a symbolic link")
    assert (target / "commit_success.txt").is_file()


def test_a_fifo_metrics_file_is_refused_without_hanging(run_copy):
    os.unlink(run_copy / "metrics.jsonl")
    os.mkfifo(run_copy / "metrics.jsonl")
    with deadline(60):
        result = run_cli("train", "--resume", run_copy)
    one_error_line(result, "metrics.jsonl is a FIFO (named pipe) where purerl writes a file")


def test_the_run_directory_itself_may_be_a_link(run_copy, tmp_path, curves):
    # A run stopped before its last outputs: the resume writes them, through the user's link.
    for name in ("summary.json", *rundir.GRAPH_FILES):
        os.unlink(run_copy / name)
    alias = tmp_path / "alias"
    os.symlink(run_copy, alias)
    result = run_cli("train", "--resume", alias)
    assert result.code == 0, result.stderr
    assert rundir.read_summary(run_copy).num_updates == 6
    assert all(path.is_file() for path in rundir.graph_paths(run_copy))
