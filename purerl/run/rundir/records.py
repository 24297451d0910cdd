"""The run directory's JSON records, typed and strictly parsed: ``config.json`` (``ConfigRecord``),
``summary.json`` (``Summary``), ``resumes.jsonl``, and the record each checkpoint carries
(``CheckpointRecord``, checked against the run's ``RunIdentity``).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from purerl.config import ConfigError, os_error_reason, type_problem
from purerl.run import writes
from purerl.run.rundir.layout import (
    CHECKSUM_ALGORITHM,
    CONFIG_FILE,
    RESUMES_FILE,
    SUMMARY_FILE,
    DamagedFileError,
    NotARunError,
)


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
    final_eval_return: float | None = None
    """Mean over seeds of the last evaluation's return (``--eval-every``), else None."""
    final_eval_update: int | None = None
    """The update that evaluation followed."""
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
