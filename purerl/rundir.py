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
