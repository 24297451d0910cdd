"""Run directories: the one module that names their paths and writes and reads their files.

| path | written by | content |
|---|---|---|
| ``config.json`` | ``write_config`` | ``ConfigRecord``: algo, config, run options, versions, time |
| ``metrics.jsonl`` | ``MetricsWriter`` | one JSON object per update (``report_rows``) |
| ``summary.json`` | ``write_summary`` | ``Summary``: the final record |
| ``returns.png``, ``returns_smoothed.png`` | ``purerl.run.plots`` | learning curves |
| ``resumes.jsonl`` | ``record_resume`` | one line per resume: from where, what changed |
| ``checkpoints/<step>/`` | ``purerl.run.checkpoint`` | orbax: arrays and a ``CheckpointRecord`` |
| ``checkpoints/<step>/checksums.json`` | ``seal_checkpoint`` | CRC-32 of every file orbax wrote |
| ``unreadable-checkpoints/`` | ``set_aside_checkpoint`` | checkpoints a resume could not read |
| ``tensorboard/`` | ``purerl.run.tensorboard`` in ``tensorboard_dir`` | event files |
| ``wandb/`` | wandb (``--wandb-project``) | its local files |
| ``.lock`` | ``RunLock`` | held by the process training into the directory |

Everything here reads runs that are still going too: ``summary.json`` absent and the last line
of ``metrics.jsonl`` possibly cut short by its writer. Nothing is written through a link inside
a run directory (``purerl.run.writes``): a resume checks every path above first
(``require_safe_paths``), and each write checks its own path again as it opens it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import errno
import fcntl
import json
import math
import os
import re
import shutil
import typing
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from purerl.config import ConfigError, os_error_reason, type_problem
from purerl.core.report import ChunkReport
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


def write_json(path: Path, data: Any) -> None:
    """Writes JSON atomically (a reader never sees a half-written file), never through a link."""
    writes.replace_file(path, (json.dumps(data, indent=2, sort_keys=False) + "\n").encode("utf-8"))


@dataclasses.dataclass(frozen=True)
class ConfigRecord:
    """``config.json``: enough to re-run the same configuration."""

    algo: str
    config: dict[str, Any]
    """The algorithm configuration's fields (JSON: tuples as lists)."""
    run: dict[str, Any]
    """The run options' fields."""
    versions: dict[str, str]
    created: str

    @classmethod
    def new(cls, algo: str, cfg: Any, options: Any) -> ConfigRecord:
        import jax

        from purerl import __version__

        return cls(
            algo=algo,
            config=fields_json(cfg),
            run=fields_json(options),
            versions={"purerl": __version__, "jax": jax.__version__},
            created=datetime.datetime.now().isoformat(timespec="seconds"),
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def make_config(self, config_cls: type, where: Path) -> Any:
        """The algorithm configuration, rebuilt (and so validated) from the saved fields.

        Raises:
            ConfigError: fields this version does not know, or values that no longer validate.
        """
        known = {f.name for f in dataclasses.fields(config_cls)}
        unknown = sorted(set(self.config) - known)
        if unknown:
            raise ConfigError(f"{where} has fields this purerl does not know: {', '.join(unknown)}")
        try:
            return config_cls(**{k: from_json(v) for k, v in self.config.items()})
        except ConfigError as err:
            raise ConfigError(
                f"the configuration saved in {where} does not validate: {err}"
            ) from err

    def make_options(self, options_cls: type, where: Path) -> Any:
        """The saved run options (unknown fields dropped, missing ones at their defaults).

        Raises:
            ConfigError: a saved value this version does not accept.
        """
        known = {f.name for f in dataclasses.fields(options_cls)}
        try:
            return options_cls(**{k: from_json(v) for k, v in self.run.items() if k in known})
        except ConfigError as err:
            raise ConfigError(f"the run options saved in {where} do not validate: {err}") from err


def json_ready(data: Any) -> Any:
    """JSON's view of ``data``: tuples become lists, as they will when read back."""
    return json.loads(json.dumps(data))


def fields_json(obj: Any) -> dict[str, Any]:
    """The fields of a configuration or run options dataclass, as JSON holds them."""
    return json_ready(dataclasses.asdict(obj))


def from_json(value: Any) -> Any:
    """Lists back to the tuples configurations hold."""
    return tuple(from_json(v) for v in value) if isinstance(value, list) else value


def read_config(source: Path) -> ConfigRecord:
    """The ``ConfigRecord`` of a run directory, or of a ``config.json`` file.

    Raises:
        NotARunError: missing, unreadable, or not a purerl run configuration.
    """
    source = Path(source)
    path = source / CONFIG_FILE if source.is_dir() else source
    if not source.exists():
        what = "config file" if source.suffix == ".json" else "run directory"
        raise NotARunError(f"{what} {source} does not exist")
    if not path.is_file():
        raise NotARunError(f"{source} is not a run directory: it has no config.json")
    data = read_json(path)
    try:
        record = ConfigRecord(
            algo=str(data["algo"]),
            config=dict(data["config"]),
            run=dict(data.get("run") or {}),
            versions=dict(data.get("versions") or {}),
            created=str(data.get("created", "")),
        )
        str(record.config["env"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise NotARunError(
            f"{path} is not a purerl run config (no {err})"
            if isinstance(err, KeyError)
            else f"{path} is not a purerl run config ({err})"
        ) from err
    return record


def read_text(path: Path) -> str:
    """The text of a file of a run directory, which purerl writes as UTF-8.

    Raises:
        NotARunError: ``path`` is a directory, cannot be read, or is not UTF-8 text (so not a
            file purerl wrote).
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise NotARunError(
            f"{path} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
            f"{err.start}), so purerl did not write it; restore it from a copy or move it away"
        ) from None
    except IsADirectoryError:
        raise NotARunError(
            f"{path} is a directory, not a file purerl wrote; move it away"
        ) from None
    except OSError as err:
        raise NotARunError(f"cannot read {path}: {os_error_reason(err)}") from err


def read_json(path: Path) -> Any:
    """The JSON value a file of a run directory holds.

    Raises:
        NotARunError: as ``read_text``, or the text is not JSON.
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise NotARunError(f"{path} is not valid JSON ({err})") from err
    except RecursionError:
        raise NotARunError(f"{path} is not valid JSON (nested too deeply)") from None


def record_problem(cls: type, data: Any) -> str | None:
    """Why ``data``, read from JSON, is not a ``cls`` record (None if it is): not an object, a
    field without a default missing, or a field's value not of its annotated type."""
    if not isinstance(data, dict):
        return f"it holds a JSON {type(data).__name__}, not an object"
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if field.name not in data:
            required = field.default is field.default_factory is dataclasses.MISSING
            if required:
                return f"it has no {field.name}"
            continue
        problem = type_problem(data[field.name], hints[field.name])
        if problem:
            return f"its {field.name} {problem}"
    return None


def write_config(run_dir: Path, record: ConfigRecord) -> None:
    write_json(Path(run_dir) / CONFIG_FILE, record.to_json())


class RunIdentity(NamedTuple):
    """What makes a checkpoint a run's own: the algorithm, the configuration and the device
    layout. Every checkpoint carries it (``CheckpointRecord``); a restore checks it."""

    algo: str
    config: dict[str, Any]
    """The configuration's fields (``fields_json``)."""
    placement: dict[str, Any] | None = None
    """``{"mode": "seeds" | "data", "devices": D}``, None for one device."""


def run_identity(algo: str, cfg: Any, placement: dict[str, Any] | None = None) -> RunIdentity:
    """The identity of a run of ``algo`` with configuration ``cfg`` on ``placement``."""
    return RunIdentity(algo, fields_json(cfg), placement)


@dataclasses.dataclass(frozen=True)
class CheckpointRecord:
    """The JSON record each checkpoint carries beside its arrays (``checkpoints/<step>/record``,
    which ``purerl.run.checkpoint``, the only orbax user, writes and reads through orbax)."""

    algo: str
    config: dict[str, Any]
    placement: dict[str, Any] | None
    """These three are the run's ``RunIdentity``."""
    format_version: int
    updates_done: int
    mean_return: float | None
    """Mean over seeds of the recent return (``keep_best`` ranks by it); None: no episode."""
    transient: list[str]
    """State fields left out of the checkpoint (a restore takes them fresh)."""
    sessions: list[dict[str, Any]]
    """One timing record per process of the run so far (``summary.json``'s ``sessions``)."""
    metrics_rows: list[dict[str, Any]]
    """The ``metrics.jsonl`` rows of the last chunk before it (``restore_metrics``)."""
    checksum: str | None = None
    """``CHECKSUM_ALGORITHM`` when its files have checksums (``checksums.json``, written as it is
    saved); None for a checkpoint saved before purerl recorded them."""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> CheckpointRecord:
        """A record as read back, checked field by field; fields an older writer left out
        (``placement`` and the ones after ``updates_done``) take their empty values.

        Raises:
            DamagedFileError: not a JSON object, a required field missing, or a field of the
                wrong type; the message says which, in words.
        """
        if not isinstance(data, dict):
            raise DamagedFileError(f"its record is {json_kind(data)}, not a checkpoint record")
        missing = [k for k in ("algo", "config", "format_version", "updates_done") if k not in data]
        if missing:
            raise DamagedFileError(f"its record has no {', '.join(missing)}")
        record = cls(
            algo=data["algo"],
            config=data["config"],
            placement=data.get("placement"),
            format_version=data["format_version"],
            updates_done=data["updates_done"],
            mean_return=data.get("mean_return"),
            transient=data.get("transient", []),
            sessions=data.get("sessions", []),
            metrics_rows=data.get("metrics_rows", []),
            checksum=data.get("checksum"),
        )
        for field, wanted in RECORD_TYPES.items():
            value = getattr(record, field)
            if not wanted.check(value):
                raise DamagedFileError(
                    f"its record's {field} is {json_kind(value)}, not {wanted.description}"
                )
        return dataclasses.replace(
            record, mean_return=None if record.mean_return is None else float(record.mean_return)
        )

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.algo, self.config, self.placement)

    @property
    def replicas(self) -> int | None:
        """The number of replicas a data-parallel checkpoint stacks, else None."""
        layout = self.placement or {}
        return layout.get("devices") if layout.get("mode") == "data" else None


class DamagedFileError(ValueError):
    """A file of a checkpoint whose content is not what purerl wrote: a record of the wrong
    shape, fields or types, a malformed checksum file, or files that do not match their
    checksums. The message says what, in words."""


class JsonType(NamedTuple):
    check: Callable[[Any], bool]
    description: str


def json_kind(value: Any) -> str:
    """What a JSON value is, for messages: ``a list``, ``'six'``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)[:40]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_list_of(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(isinstance(v, kind) for v in value)


def is_placement(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict)
        and value.get("mode") in ("seeds", "data")
        and is_int(value.get("devices"))
    )


RECORD_TYPES: dict[str, JsonType] = {
    "algo": JsonType(lambda v: isinstance(v, str), "a name"),
    "config": JsonType(lambda v: isinstance(v, dict), "an object of configuration fields"),
    "placement": JsonType(is_placement, "null or a device layout ({mode, devices})"),
    "format_version": JsonType(is_int, "a whole number"),
    "updates_done": JsonType(lambda v: is_int(v) and v >= 0, "a count of updates"),
    "mean_return": JsonType(
        lambda v: v is None or (isinstance(v, int | float) and not isinstance(v, bool)),
        "null or a number",
    ),
    "transient": JsonType(is_list_of(str), "a list of state field names"),
    "sessions": JsonType(is_list_of(dict), "a list of objects"),
    "metrics_rows": JsonType(is_list_of(dict), "a list of objects"),
    "checksum": JsonType(lambda v: v is None or v == CHECKSUM_ALGORITHM, "null or 'crc32'"),
}
"""What each ``CheckpointRecord`` field must be, as ``from_json`` checks it."""

CHECKSUM_BLOCK_BYTES = 8 << 20
"""Files are read for their checksums in blocks of this size, into one reused buffer."""


def file_crc32(path: Path) -> int:
    """The CRC-32 of a file's bytes (``zlib.crc32`` of the whole file), read block by block."""
    crc, buffer = 0, bytearray(min(CHECKSUM_BLOCK_BYTES, max(path.stat().st_size, 1)))
    view = memoryview(buffer)
    with open(path, "rb") as f:
        while read := f.readinto(buffer):
            crc = zlib.crc32(view[:read], crc)
    return crc


def checkpoint_files(directory: Path) -> list[Path]:
    """The files orbax writes for a checkpoint's items (``state/``, ``record/``): every file in
    a subdirectory of ``directory``. Its own top-level files (``_CHECKPOINT_METADATA``,
    ``commit_success.txt``) are orbax's bookkeeping, rewritten as it commits."""
    return sorted(p for p in Path(directory).glob("*/**/*") if p.is_file())


def file_checksums(directory: Path) -> dict[str, list[int]]:
    """``{path relative to directory: [size in bytes, CRC-32]}`` of ``checkpoint_files``."""
    directory = Path(directory)
    return {
        p.relative_to(directory).as_posix(): [p.stat().st_size, file_crc32(p)]
        for p in checkpoint_files(directory)
    }


def seal_checkpoint(directory: Path) -> None:
    """Writes ``checksums.json`` into a checkpoint orbax has written its files to
    (``saving_checkpoint_path``: before it renames it, so a complete checkpoint always has
    it)."""
    data = {"algorithm": CHECKSUM_ALGORITHM, "files": file_checksums(directory)}
    write_json(Path(directory) / CHECKSUMS_FILE, data)


def read_checksums(directory: Path) -> dict[str, list[int]] | None:
    """The checksums a checkpoint was saved with, or None if it has none.

    Raises:
        DamagedFileError: ``checksums.json`` is not valid JSON or not of the shape
            ``seal_checkpoint`` writes.
    """
    path = Path(directory) / CHECKSUMS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as err:
        raise DamagedFileError(f"its checksum file cannot be read ({err})") from err
    files = data.get("files") if isinstance(data, dict) else None
    well_formed = (
        data.get("algorithm") == CHECKSUM_ALGORITHM
        and isinstance(files, dict)
        and all(isinstance(v, list) and len(v) == 2 and all(map(is_int, v)) for v in files.values())
    )
    if not well_formed:
        raise DamagedFileError(f"its checksum file is not of a form purerl writes ({path})")
    return files


def damaged_files(directory: Path, checksums: dict[str, list[int]]) -> list[str]:
    """The files of ``checksums`` (``read_checksums``) that are missing from checkpoint
    ``directory`` or differ from what was saved, by relative path."""
    damaged = []
    for name, (size, crc) in sorted(checksums.items()):
        path = Path(directory) / name
        if not path.is_file() or path.stat().st_size != size or file_crc32(path) != crc:
            damaged.append(name)
    return damaged


def report_rows(report: ChunkReport, env_steps_per_update: int, frame_skip: int) -> list[dict]:
    """One ``metrics.jsonl`` row per update of a chunk.

    ``update`` counts updates done; ``env_steps`` and ``frames`` are per agent; ``wall_time_s``
    is the time since the process started the run at the end of the chunk (compile included).
    Top-level metric values are means over the seeds where they are defined (null where no
    seed's is); ``per_seed`` lists every seed's value. The chunk's evaluation, if the run
    evaluated after its last update (``eval/return``, ``eval/length``), joins that update's row.
    """
    names = sorted(report.metrics)
    length = report.metrics[names[0]].shape[1]
    rows = []
    for offset in range(length):
        update = report.first_update + offset + 1
        row: dict[str, Any] = {
            "update": update,
            "env_steps": update * env_steps_per_update,
            "frames": update * env_steps_per_update * frame_skip,
            "wall_time_s": round(report.wall_time_s, 3),
        }
        per_seed = {}
        for name in names:
            values = report.metrics[name][:, offset].astype(np.float64)
            finite = values[np.isfinite(values)]
            row[name] = json_number(finite.mean()) if finite.size else None
            per_seed[name] = [json_number(v) for v in values]
        row["per_seed"] = per_seed
        rows.append(row)
    for name, values in sorted((report.evals or {}).items()):
        row, values = rows[-1], np.asarray(values, np.float64)
        finite = values[np.isfinite(values)]
        row[name] = json_number(finite.mean()) if finite.size else None
        row["per_seed"][name] = [json_number(v) for v in values]
    return rows


def json_number(x: Any) -> float | int | None:
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, bool | int):
        return int(x)
    return float(x) if math.isfinite(x) else None


class MetricsWriter:
    """A sink appending ``metrics.jsonl`` rows, flushed after every chunk so readers see
    progress."""

    def __init__(self, run_dir: Path, env_steps_per_update: int, frame_skip: int = 1):
        path = Path(run_dir) / METRICS_FILE
        self.file: IO[str] = writes.open_for_writing(path)  # closed in close()
        self.env_steps_per_update = env_steps_per_update
        self.frame_skip = frame_skip
        self.last_rows: list[dict[str, Any]] = []
        """The rows of the latest chunk, which a checkpoint carries (``restore_metrics``)."""

    def write(self, report: ChunkReport) -> None:
        self.last_rows = report_rows(report, self.env_steps_per_update, self.frame_skip)
        for row in self.last_rows:
            self.file.write(json.dumps(row) + "\n")
        self.file.flush()

    def sync(self) -> list[dict[str, Any]]:
        """Makes the rows written so far durable (a checkpoint is saved only after its rows);
        returns the latest chunk's rows for the checkpoint to carry."""
        self.file.flush()
        os.fsync(self.file.fileno())
        return self.last_rows

    def close(self, summary: Any = None) -> None:
        self.file.close()


def read_metrics_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of ``metrics.jsonl``; a last line cut short by a running writer is dropped.

    Raises:
        NotARunError: a line other than the last one is not valid JSON.
    """
    lines = read_text(path).split("\n")
    rows = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as err:
            # The writer appends whole lines, so only the one being written can be partial.
            if index == len(lines) - 1:
                break
            raise NotARunError(f"{path}: line {index + 1} is not valid JSON ({err})") from err
        if not isinstance(row, dict):
            raise NotARunError(f"{path}: line {index + 1} is not a metrics row (a JSON object)")
        rows.append(row)
    return rows


class MetricsRepair(NamedTuple):
    restored: list[int]
    """Updates whose rows were missing or cut short and came back from the checkpoint."""
    missing: list[int]
    """Updates up to the checkpoint whose rows are gone for good."""


def restore_metrics(
    run_dir: Path, updates_done: int, carried: list[dict[str, Any]]
) -> MetricsRepair:
    """Makes ``metrics.jsonl`` hold the rows of updates 1 to ``updates_done`` of a resumed run.

    Rows past ``updates_done`` (written after the checkpoint) and lines that are not whole rows
    (cut short by a killed process) are dropped; rows the file lacks are restored from
    ``carried``, the rows of the checkpoint's last chunk (``MetricsWriter.sync``). The file is
    replaced atomically.
    """
    path = Path(run_dir) / METRICS_FILE
    writes.require_file_or_absent(path)  # before reading it too: a FIFO would block the read
    lines: dict[int, str] = {}
    text = read_text(path) if path.exists() else ""
    for line in text.splitlines():
        try:
            update = json.loads(line)["update"]
        except (ValueError, TypeError, KeyError, RecursionError):
            continue
        if isinstance(update, int) and 1 <= update <= updates_done:
            lines.setdefault(update, line)
    restored = []
    for row in carried:
        update = row.get("update")
        if isinstance(update, int) and 1 <= update <= updates_done and update not in lines:
            lines[update] = json.dumps(row)
            restored.append(update)
    missing = [u for u in range(1, updates_done + 1) if u not in lines]
    new_text = "".join(lines[u] + "\n" for u in sorted(lines))
    if new_text != text and (path.exists() or new_text):
        writes.replace_file(path, new_text.encode("utf-8"))
    return MetricsRepair(sorted(restored), missing)


@dataclasses.dataclass(frozen=True)
class Summary:
    """``summary.json``: the final record of a run (README, "What a run writes").

    Steps and times are of the whole run: a resumed run adds up its processes, each listed
    in ``sessions`` with its own figures.
    """

    algo: str
    env: str
    final_mean_return: float | None
    """Mean across seeds of each seed's final return (None: no episode finished)."""
    final_std_return: float | None
    per_seed_final_return: list[float | None]
    """Each seed's mean return over at least its last ``final_return_window_episodes``."""
    final_return_window_episodes: int
    num_seeds: int
    num_updates: int
    env_steps_per_seed: int
    total_env_steps: int
    total_frames: int
    resumed_from_update: int
    wall_time_s: float
    compile_time_s: float
    train_time_s: float
    """Seconds spent training, compiling and checkpoint saves excluded."""
    checkpoint_time_s: float
    steps_per_second: float
    """Environment steps of all seeds trained by the run's processes over their training time."""
    sessions: list[dict[str, Any]]
    """One record per process: updates, time and steps/s of each."""
    interrupted: bool = False
    eval_time_s: float = 0.0
    """Seconds spent evaluating (``--eval-every``), compile excluded."""
    device: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Device kind and count, memory in use and at peak, the process's peak resident memory."""

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.update(data.pop("device"))
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Summary:
        known = {f.name for f in dataclasses.fields(cls)}
        device = {k: v for k, v in data.items() if k not in known}
        return cls(**{k: v for k, v in data.items() if k in known}, device=device)


def write_summary(run_dir: Path, summary: Summary) -> None:
    write_json(Path(run_dir) / SUMMARY_FILE, summary.to_json())


def read_summary(run_dir: Path) -> Summary | None:
    """``summary.json`` of a run, or None if it has none (written atomically: present means
    complete)."""
    path = Path(run_dir) / SUMMARY_FILE
    if not path.exists():
        return None
    data = read_json(path)
    problem = record_problem(Summary, data)
    if problem is None and data["num_seeds"] < 1:
        problem = f"its num_seeds is {data['num_seeds']}"
    if problem is None and (data["final_mean_return"] is None) != (
        data["final_std_return"] is None
    ):
        problem = "it has only one of final_mean_return and final_std_return"
    if problem is not None:
        raise NotARunError(f"{path} is not a purerl summary: {problem}")
    return Summary.from_json(data)


def record_resume(run_dir: Path, row: dict[str, Any]) -> None:
    """Appends one line to ``resumes.jsonl``: when a run was resumed, from which update, which
    checkpoints were skipped and which run options changed."""
    stamped = {"time": datetime.datetime.now().isoformat(timespec="seconds"), **row}
    with writes.open_for_writing(Path(run_dir) / RESUMES_FILE) as f:
        f.write(json.dumps(json_ready(stamped)) + "\n")


class Evaluations(NamedTuple):
    """The evaluations of a run (``--eval-every``), ``E`` of them, ``S`` seeds."""

    updates: np.ndarray
    """``[E]`` int64, updates done before each."""
    frames: np.ndarray
    """``[E]`` int64, frames per agent at each."""
    returns: np.ndarray
    """``[S, E]`` float64, each seed's mean return over the evaluation's episodes (NaN: none
    finished)."""
    lengths: np.ndarray
    """``[S, E]`` float64, their mean length."""


EVAL_RETURN = "eval/return"
EVAL_LENGTH = "eval/length"


def evaluations_of_rows(rows: list[dict[str, Any]], num_seeds: int) -> Evaluations | None:
    """The evaluations recorded in ``metrics.jsonl`` rows, or None if there are none."""
    rows = [row for row in rows if EVAL_RETURN in row["per_seed"]]
    if not rows:
        return None
    return Evaluations(
        updates=np.asarray([row["update"] for row in rows], np.int64),
        frames=np.asarray([row["frames"] for row in rows], np.int64),
        returns=per_seed_column(rows, EVAL_RETURN, num_seeds),
        lengths=per_seed_column(rows, EVAL_LENGTH, num_seeds),
    )


def read_evaluations(run_dir: Path, num_seeds: int) -> Evaluations | None:
    """The evaluations a run's ``metrics.jsonl`` holds (None: none, or no file)."""
    path = Path(run_dir) / METRICS_FILE
    return evaluations_of_rows(read_metrics_rows(path), num_seeds) if path.exists() else None


@dataclasses.dataclass(frozen=True)
class Run:
    """One run directory, read as far as it has been written. ``S`` seeds, ``U`` updates."""

    path: Path
    record: ConfigRecord
    updates: np.ndarray
    """``[U]`` int64, updates done at each row (1-based)."""
    env_steps: np.ndarray
    """``[U]`` int64, environment steps per agent after each update."""
    frames: np.ndarray
    """``[U]`` int64, frames per agent (steps x frame skip) after each update."""
    wall_time_s: np.ndarray
    """``[U]`` float64, seconds since the run started (compile included) at each row."""
    returns: np.ndarray
    """``[S, U]`` float64 mean return of the episodes each update finished; NaN where none did."""
    episode_counts: np.ndarray
    """``[S, U]`` float64 number of episodes each update finished."""
    summary: Summary | None
    """``summary.json``, or None while the run is in progress."""
    evaluations: Evaluations | None = None
    """The run's evaluations (``--eval-every``); None: it made none."""

    @property
    def status(self) -> str:
        """``finished``, ``interrupted`` (stopped by a signal, resumable) or ``in progress``."""
        if self.summary is None:
            return "in progress"
        return "interrupted" if self.summary.interrupted else "finished"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def algo(self) -> str:
        return self.record.algo

    @property
    def env(self) -> str:
        return str(self.record.config["env"])

    @property
    def num_seeds(self) -> int:
        return int(self.returns.shape[0])


def load_run(path: str | Path) -> Run:
    """Reads a run directory, finished or in progress.

    Raises:
        NotARunError: ``path`` has no readable ``config.json`` of a purerl run, or its
            ``metrics.jsonl`` has a corrupt line before the last or rows of another format.
    """
    run_dir = Path(path)
    if not run_dir.is_dir():
        raise NotARunError(f"{run_dir} is not a run directory: no such directory")
    record = read_config(run_dir)
    metrics_path = run_dir / METRICS_FILE
    # A run that is still compiling may not have created metrics.jsonl yet: no updates.
    rows = read_metrics_rows(metrics_path) if metrics_path.exists() else []
    summary = read_summary(run_dir)
    # An interrupted run that was resumed keeps its old summary until it ends again.
    if summary is not None and rows and summary.num_updates != rows[-1].get("update"):
        summary = None
    try:
        return run_from_rows(run_dir, record, rows, summary)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
        raise NotARunError(
            f"{metrics_path} does not hold purerl metrics rows ({type(err).__name__}: {err})"
        ) from err


def run_from_rows(
    run_dir: Path, record: ConfigRecord, rows: list[dict[str, Any]], summary: Summary | None
) -> Run:
    """Assembles a ``Run`` from parsed ``metrics.jsonl`` rows (any may be malformed)."""
    if rows:
        num_seeds = len(rows[0]["per_seed"]["episode/return"])
    else:
        num_seeds = int(record.config.get("num_seeds", 1))

    def column(key: str, dtype: type) -> np.ndarray:
        return np.asarray([row[key] for row in rows], dtype)

    return Run(
        path=run_dir,
        record=record,
        updates=column("update", np.int64),
        env_steps=column("env_steps", np.int64),
        frames=column("frames", np.int64),
        wall_time_s=column("wall_time_s", np.float64),
        returns=per_seed_column(rows, "episode/return", num_seeds),
        episode_counts=np.nan_to_num(per_seed_column(rows, "episode/count", num_seeds)),
        summary=summary,
        evaluations=evaluations_of_rows(rows, num_seeds),
    )


def per_seed_column(rows: list[dict[str, Any]], metric: str, num_seeds: int) -> np.ndarray:
    """``[S, U]`` float64 values of ``metric`` from each row's ``per_seed``; null -> NaN."""
    out = np.full((num_seeds, len(rows)), np.nan)
    for column, row in enumerate(rows):
        values = row["per_seed"].get(metric, [None] * num_seeds)
        out[:, column] = [np.nan if v is None else v for v in values]
    return out
