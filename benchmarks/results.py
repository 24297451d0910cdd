"""The results store behind BENCHMARKS.md: one small JSON record per measured row.

``benchmarks/results/learning/<row>.json`` holds a learning row (what ``benchmarks.table``
writes after training a row, or reads from an existing run directory);
``benchmarks/results/speed/<name>.json`` one comparison beside a peer, measured in one process
with calls alternating. Each record carries the machine, hardware and versions it was measured
on, the date and the command that measured it. ``benchmarks.page`` renders the page from them.
This module reads and writes records only: it imports neither JAX nor purerl.
"""

from __future__ import annotations

import dataclasses
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"
LEARNING = "learning"
SPEED = "speed"
DEVICE_REPORTS = "device.json"
"""The device-check reports the page shows, oldest first: ``{"reports": [paths]}``."""

VERSIONED_PACKAGES = (
    "jax", "jaxlib", "flax", "optax", "gymnax", "envpool", "brax", "jumanji", "xminigrid"
)  # fmt: skip
"""Packages whose versions a new record keeps (those installed)."""

SECTIONS = {
    "ppo": "PPO",
    "dqn": "DQN",
    "pqn": "PQN",
    "sac": "SAC",
    "td3": "TD3",
    "memory": "Recurrent PPO and PQN on tasks that need memory",
    "suites": "PPO on Jumanji and XLand-MiniGrid (action masks, structured observations)",
}
"""Learning sections of the page, in order: an algorithm each, and the recurrent rows."""


def return_places(mean: float) -> int:
    """Decimals a record keeps of a row's returns, set by its mean: one, three below 10
    (returns bounded by 1)."""
    return 1 if abs(mean) >= 10 else 3


def show_return(mean: float, std: float) -> str:
    """``"mean +- std"`` as the page shows it: two decimals where the record keeps more than one
    (``return_places``), else one."""

    def kept(value: float) -> int:
        text = repr(float(value))
        return 0 if "e" in text else len(text.partition(".")[2])

    places = 2 if max(kept(mean), kept(std)) >= 2 else 1
    return f"{mean:.{places}f} +- {std:.{places}f}"


class RecordError(ValueError):
    """A record file that does not hold what its kind needs."""


@dataclasses.dataclass(frozen=True)
class Machine:
    """Where a record was measured."""

    machine: str
    """A short label the page's tables use (e.g. ``2-core CPU VM``)."""
    hardware: str
    """Processor, cores, memory and accelerator, in words."""
    versions: dict[str, str]
    """Python and the packages that set the figures, by name."""


@dataclasses.dataclass(frozen=True)
class LearningRecord:
    """One learning row: a preset trained with several vmapped seeds."""

    name: str
    """The row's name in ``benchmarks.table`` (``ppo-CartPole-v1``, ``ppo-Acrobot-v1``)."""
    section: str
    """One of ``SECTIONS``."""
    order: int
    """Position within its section (the row's place in ``benchmarks.table.MATRIX``)."""
    algo: str
    env: str
    network: str | None
    """The torso when not the preset's own (``--network``)."""
    protocol: str
    """The preset and what sets it apart, in words."""
    steps_per_seed: int
    seeds: list[int]
    final_mean: float
    """Mean across seeds of each seed's mean return over its last 100 or more episodes."""
    final_std: float
    per_seed_final: list[float] | None
    reference: str
    """A published figure at the same protocol and budget with its source, or what bounds the
    return; ``-`` if none was found."""
    wall_time_s: float | None
    """The run's whole time, compile included."""
    steps_per_s: float | None
    """All seeds' environment steps over training time, compile excluded."""
    plot: str | None
    """The smoothed learning curve, relative to the repository root."""
    plot_window_updates: int | None
    command: str
    measured: str
    """Date (YYYY-MM-DD)."""
    where: Machine
    origin: str
    """The run directory it was read from, or where it was transcribed from."""


@dataclasses.dataclass(frozen=True)
class SpeedRecord:
    """purerl beside a peer at the same work, in one process, calls alternating."""

    name: str
    order: int
    algo: str
    env: str
    workload: str
    seeds: int
    devices: int
    purerl_steps_per_s: float
    peer: str
    peer_steps_per_s: float
    ratio: float
    """purerl over the peer: the median of per-pair speed ratios."""
    command: str
    measured: str
    where: Machine
    origin: str


Record = LearningRecord | SpeedRecord


def to_json(record: Record) -> str:
    return json.dumps(dataclasses.asdict(record), indent=1, ensure_ascii=False) + "\n"


def from_json(kind: type[Record], data: dict[str, Any], path: Path) -> Record:
    names = {f.name for f in dataclasses.fields(kind)}
    if not isinstance(data, dict) or set(data) != names:
        have = set(data) if isinstance(data, dict) else set()
        raise RecordError(
            f"{path}: not a {kind.__name__} (missing {sorted(names - have)}, "
            f"unknown {sorted(have - names)}); fix or remove the file"
        )
    where = data["where"]
    if not isinstance(where, dict) or set(where) != {f.name for f in dataclasses.fields(Machine)}:
        raise RecordError(f"{path}: 'where' needs machine, hardware and versions")
    record = kind(**{**data, "where": Machine(**where)})
    if isinstance(record, LearningRecord) and record.section not in SECTIONS:
        raise RecordError(f"{path}: section {record.section!r} is not one of {list(SECTIONS)}")
    return record


def write(record: Record, results_dir: Path = RESULTS_DIR) -> Path:
    kind = LEARNING if isinstance(record, LearningRecord) else SPEED
    path = results_dir / kind / f"{record.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_json(record), encoding="utf-8")
    return path


def read_all(kind: type[Record], results_dir: Path = RESULTS_DIR) -> list[Record]:
    """Every record of ``kind`` under ``results_dir``, in file-name order."""
    folder = results_dir / (LEARNING if kind is LearningRecord else SPEED)
    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            raise RecordError(f"{path}: not JSON ({err}); fix or remove the file") from err
        records.append(from_json(kind, data, path))
    return records


def device_reports(results_dir: Path = RESULTS_DIR) -> list[str]:
    """Paths (relative to the repository root) of the device-check reports the page shows."""
    path = results_dir / DEVICE_REPORTS
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8"))["reports"])


def this_machine(cpu_cores: int | None, backend: str, device_kind: str | None) -> Machine:
    """The machine the process runs on, for a record measured now."""
    versions = {"python": platform.python_version()}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    processor = platform.processor() or platform.machine()
    cores = f"{cpu_cores} CPU cores" if cpu_cores else "CPU"
    if backend == "cpu" or not device_kind:
        return Machine(f"{cpu_cores}-core CPU", f"{cores} ({processor}), no accelerator", versions)
    return Machine(device_kind, f"{device_kind}, {cores} ({processor})", versions)
