"""The run directory's layout: every path in it, creating and locking it, setting checkpoints
aside, and what a failed new run leaves behind.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import os
import re
import shutil
from pathlib import Path
from typing import IO, Any

from purerl.config import ConfigError, os_error_reason
from purerl.run import writes

RUNS_ROOT = Path("runs")


CONFIG_FILE = "config.json"


METRICS_FILE = "metrics.jsonl"


SUMMARY_FILE = "summary.json"


RESUMES_FILE = "resumes.jsonl"


GRAPH_FILES = ("returns.png", "returns_smoothed.png")
"""Learning curves: raw and smoothed."""


CHECKPOINTS_DIR = "checkpoints"


UNREADABLE_DIR = "unreadable-checkpoints"


SUPERSEDED_DIR = "superseded-checkpoints"


CHECKSUMS_FILE = "checksums.json"


CHECKSUM_ALGORITHM = "crc32"
"""What ``checksums.json`` holds for each file: its CRC-32 (``zlib.crc32``), which detects every
single flipped bit (and every burst of up to 32), at about 4 GB/s on one core."""


TENSORBOARD_DIR = "tensorboard"


WANDB_DIR = "wandb"


LOCK_FILE = ".lock"


def checkpoints_dir(run_dir: Path) -> Path:
    """``<run_dir>/checkpoints`` as an absolute path (orbax requires one)."""
    return Path(run_dir).resolve() / CHECKPOINTS_DIR


def checkpoint_path(run_dir: Path, step: int) -> Path:
    """The directory of checkpoint ``step`` (updates done) of a run."""
    return checkpoints_dir(run_dir) / str(step)


def complete_checkpoints(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoint directories on disk, oldest first, read from their
    names alone: orbax writes a checkpoint as ``<step>.orbax-checkpoint-tmp`` and renames it
    when complete (``purerl.run.checkpoint.available_steps`` asks orbax instead)."""
    return sorted(int(p.name) for p in checkpoints_dir(run_dir).glob("*") if p.name.isdigit())


def writable_checkpoints_dir(run_dir: Path) -> Path:
    """``checkpoints_dir``, created, to hand to orbax: refused if it or a checkpoint in it is a
    link (orbax deletes old checkpoints, which would delete what a link points to)."""
    return writes.require_real_dir(checkpoints_dir(run_dir), create=True, contents=True)


def saving_checkpoint_path(run_dir: Path, step: int) -> Path:
    """The directory orbax is writing checkpoint ``step`` into: its temporary
    ``<step>.orbax-checkpoint-tmp...`` until it renames it when complete, then its own."""
    pending = sorted(checkpoints_dir(run_dir).glob(f"{step}.orbax-checkpoint-tmp*"))
    return pending[-1] if pending else checkpoint_path(run_dir, step)


def tensorboard_dir(run_dir: Path) -> Path:
    return Path(run_dir) / TENSORBOARD_DIR


def writable_tensorboard_dir(run_dir: Path) -> Path:
    """``tensorboard_dir``, created, to hand to tensorboardX: refused if it or a file in it is a
    link (tensorboardX opens its event file by name, truncating what a link points to)."""
    return writes.require_real_dir(tensorboard_dir(run_dir), create=True, contents=True)


def graph_paths(run_dir: Path) -> tuple[Path, ...]:
    """The learning-curve PNGs of a run, in the order of ``GRAPH_FILES``."""
    return tuple(Path(run_dir) / name for name in GRAPH_FILES)


def set_aside_checkpoint(run_dir: Path, step: int, folder: str = UNREADABLE_DIR) -> Path:
    """Moves a checkpoint out of the way of new ones, keeping its files, to
    ``<folder>/<step>-<time>`` (unreadable ones by default, or ones a resume from an older
    checkpoint supersedes); returns where it went."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    target = writes.require_real_dir(Path(run_dir) / folder, create=True) / f"{step}-{stamp}"
    shutil.move(str(checkpoint_path(run_dir, step)), str(target))
    return target


RUN_FILES = (
    CONFIG_FILE, METRICS_FILE, SUMMARY_FILE, RESUMES_FILE, *GRAPH_FILES, CHECKPOINTS_DIR,
    UNREADABLE_DIR, SUPERSEDED_DIR, TENSORBOARD_DIR, LOCK_FILE,
)  # fmt: skip
"""Every name of the table above: what a run writes into its directory."""


def has_metrics_rows(run_dir: Path) -> bool:
    """Whether a run has written any ``metrics.jsonl`` row (an update has been recorded)."""
    path = Path(run_dir) / METRICS_FILE
    return path.is_file() and path.stat().st_size > 0


def remove_new_run(run_dir: Path, created: list[Path]) -> None:
    """Removes a new run that ended before its first checkpoint, as if it had never started:
    ``run_dir`` whole if the run created it (``created``, from ``missing_dirs``, deepest
    first), else only the files of ``RUN_FILES`` in it (and their ``.tmp`` siblings), then the
    parents it created if they are empty. Such a run can never be resumed, and its directory
    would only stand in the way of the same command run again."""
    run_dir = Path(run_dir)
    if run_dir in created:
        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        for name in RUN_FILES:
            for path in (run_dir / name, run_dir / f"{name}.tmp"):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):  # absent, or not ours to remove
                        path.unlink()
    remove_empty_dirs(created)


class NotARunError(ConfigError):
    """A directory is not a (readable) purerl run; the message names it and what is missing."""


class RunLockedError(ConfigError):
    """Another live process holds the run directory."""


def require_safe_paths(run_dir: Path) -> None:
    """Refuses an existing run directory in which a path purerl writes (the module docstring's
    table) is a symbolic link or a special file, before a resume writes anything to it.

    Raises:
        UnsafePathError: the first such path, named with what to do.
    """
    run_dir = Path(run_dir)
    for name in (LOCK_FILE, CONFIG_FILE, METRICS_FILE, SUMMARY_FILE, RESUMES_FILE, *GRAPH_FILES):
        writes.require_file_or_absent(run_dir / name)
    for name in (CHECKPOINTS_DIR, TENSORBOARD_DIR):
        writes.require_real_dir(run_dir / name, contents=True)
    for name in (UNREADABLE_DIR, SUPERSEDED_DIR, WANDB_DIR):
        writes.require_real_dir(run_dir / name)


def default_run_dir(algo: str, env_id: str, root: Path = RUNS_ROOT) -> Path:
    """``runs/<algo>-<env>-<timestamp>``, with a numeric suffix if that exists already."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    # Ids of your own environments hold ':' and maybe '<locals>': kept out of file names.
    name = re.sub(r"[^\w.-]", "_", env_id)
    base = root / f"{algo}-{name}-{stamp}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def create_run_dir(path: Path, what: str = "run directory", option: str = "--run-dir") -> Path:
    """Creates ``path`` for a new run (or search); refuses to reuse a non-empty directory.

    Raises:
        ConfigError: ``path`` is a file, a directory that already holds something, or cannot
            be created (permissions, read-only or full file system).
    """
    path = Path(path)
    missing = missing_dirs(path)
    try:
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ConfigError(
                f"{what} {path} already exists and is not empty; pass another {option} "
                "(existing results are never overwritten)"
            )
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        remove_empty_dirs(missing)
        raise ConfigError(f"cannot create {what} {path}: {os_error_reason(err)}") from err
    return path


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first: what creating
    ``path`` creates."""
    missing = []
    for folder in [Path(path), *Path(path).parents]:
        try:
            if folder.exists():
                break
        except OSError:  # a name too long, say: it cannot exist
            pass
        missing.append(folder)
    return missing


def remove_empty_dirs(folders: list[Path]) -> None:
    """Removes those of ``folders`` (deepest first) that exist and are empty, as a command that
    created them and then failed leaves them."""
    for folder in folders:
        with contextlib.suppress(OSError):  # absent, not empty, or not ours: left as it is
            folder.rmdir()


class RunLock:
    """An exclusive OS lock on ``<run_dir>/.lock`` for the life of a training process.

    ``flock`` locks vanish with the process that holds them, so a killed run never leaves a
    stale lock; the file keeps the holder's PID for the refusal message.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        self.file: IO[str] | None = None

    def acquire(self) -> RunLock:
        """Raises ``RunLockedError`` naming the holder's PID if another process holds it."""
        try:
            handle = writes.open_for_writing(self.path, "a+")  # held until release
        except OSError as err:
            raise ConfigError(f"cannot lock {self.path.parent}: {err.strerror}") from err
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            raise RunLockedError(
                f"{self.path.parent} is in use by a live training process (PID {holder}); wait "
                "for it to finish or stop it first"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self.file = handle
        return self

    def release(self) -> None:
        if self.file is not None:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()
            self.file = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


class DamagedFileError(ValueError):
    """A file of a checkpoint whose content is not what purerl wrote: a record of the wrong
    shape, fields or types, a malformed checksum file, or files that do not match their
    checksums. The message says what, in words."""
