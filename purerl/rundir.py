"""Run directories: ``config.json``, ``metrics.jsonl`` and ``summary.json`` of one run."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
from pathlib import Path
from typing import Any

from purerl.config import ConfigError

RUNS_ROOT = Path("runs")


def default_run_dir(algo: str, env_id: str, root: Path = RUNS_ROOT) -> Path:
    """``runs/<algo>-<env>-<timestamp>``, with a numeric suffix if that exists already."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = root / f"{algo}-{env_id}-{stamp}"
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def create_run_dir(path: Path) -> Path:
    """Creates ``path`` for a new run; refuses to reuse a non-empty directory.

    Raises:
        ConfigError: ``path`` is a file, or a directory that already holds something.
    """
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(
            f"run directory {path} already exists and is not empty; pass another --run-dir "
            "(existing runs are never overwritten)"
        )
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: Path, data: Any) -> None:
    """Writes JSON atomically: a reader never sees a half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def config_record(algo: str, cfg: Any, options: Any) -> dict[str, Any]:
    """What ``config.json`` holds: enough to re-run the same configuration."""
    import jax

    from purerl import __version__

    return {
        "algo": algo,
        "config": dataclasses.asdict(cfg),
        "run": dataclasses.asdict(options),
        "versions": {"purerl": __version__, "jax": jax.__version__},
        "created": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def load_config(source: Path, algo: str, config_cls: type) -> Any:
    """The configuration saved in ``source`` (a ``config.json`` or a run directory holding one).

    Raises:
        ConfigError: the file is missing or unreadable, belongs to another algorithm, or names
            fields this version does not know.
    """
    path = source / "config.json" if source.is_dir() else source
    if not path.is_file():
        what = "run directory" if not source.suffix else "config file"
        raise ConfigError(f"{what} {source} does not exist or holds no config.json")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        saved_algo, fields = record["algo"], record["config"]
    except (ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"{path} is not a purerl config.json ({err})") from err
    if saved_algo != algo:
        raise ConfigError(
            f"{path} configures {saved_algo}, not {algo}; use the {saved_algo} command"
        )
    known = {f.name: f for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ConfigError(f"{path} has fields this purerl does not know: {', '.join(unknown)}")
    # JSON has no tuples: sequence fields come back as lists.
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return config_cls(**values)


def truncate_metrics(path: Path, updates_done: int) -> None:
    """Drops ``metrics.jsonl`` rows past ``updates_done`` (written after the last checkpoint).

    A row cut off by a killed process is dropped too. The file is replaced atomically.
    """
    if not path.exists():
        return
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if row.get("update", 0) <= updates_done:
            kept.append(line + "\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    os.replace(tmp, path)
