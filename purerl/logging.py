"""Host-side sinks for training reports, and the one in-jit escape hatch (``emit``).

``metrics.jsonl`` holds one JSON object per update::

    {"update": 3, "env_steps": 1536, "frames": 1536, "wall_time_s": 8.1,
     "episode/return": 21.5, "loss/policy": -0.01, ...,
     "per_seed": {"episode/return": [20.0, 23.0], "loss/policy": [...], ...}}

``update`` counts updates done, ``env_steps`` and ``frames`` are per agent (one seed),
``wall_time_s`` is the time since the run started at the end of the chunk holding the update
(compile included). Top-level metrics are means over seeds, skipping seeds where the value is
undefined (``episode/return`` when a seed finished no episode in that update); undefined values
are written as null.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

import jax
import numpy as np

from purerl.envs.stats import recent_mean_return


class ChunkReport(NamedTuple):
    """Metrics of one chunk on the host: every value ``[num_seeds, chunk_len]``."""

    first_update: int
    """Updates done before this chunk."""
    metrics: dict[str, np.ndarray]
    wall_time_s: float
    """Since the run started (compile included)."""
    train_time_s: float
    """Since the first chunk started (compile excluded)."""


class Sink(Protocol):
    """Receives reports as the run goes; ``close`` gets the summary."""

    def write(self, report: ChunkReport) -> None: ...

    def close(self, summary: dict[str, Any]) -> None: ...


def _json_float(x: Any) -> float | int | None:
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, bool | int):
        return int(x)
    return float(x) if math.isfinite(x) else None


def report_rows(report: ChunkReport, env_steps_per_update: int, frame_skip: int) -> list[dict]:
    """One JSON-ready row per update of a chunk."""
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
            row[name] = _json_float(finite.mean()) if finite.size else None
            per_seed[name] = [_json_float(v) for v in values]
        row["per_seed"] = per_seed
        rows.append(row)
    return rows


class JsonlSink:
    """Appends ``metrics.jsonl`` rows, flushing after every chunk so readers see progress."""

    def __init__(self, path: Path, env_steps_per_update: int, frame_skip: int = 1):
        self.file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self.env_steps_per_update = env_steps_per_update
        self.frame_skip = frame_skip

    def write(self, report: ChunkReport) -> None:
        for row in report_rows(report, self.env_steps_per_update, self.frame_skip):
            self.file.write(json.dumps(row) + "\n")
        self.file.flush()

    def close(self, summary: dict[str, Any]) -> None:
        self.file.close()


class ProgressSink:
    """A progress bar with steps/s and the recent mean return; plain lines off a terminal.

    Speed counts all seeds' environment steps (frames when ``frame_skip`` > 1) over training
    time, compilation excluded. The return is the mean over seeds of each seed's mean over its
    last 100 or more finished episodes.
    """

    def __init__(
        self,
        num_updates: int,
        env_steps_per_update: int,
        num_seeds: int,
        frame_skip: int = 1,
        first_seed: int = 0,
        out: IO[str] | None = None,
        history: dict[str, np.ndarray] | None = None,
    ):
        self.num_updates = num_updates
        self.steps_per_update = env_steps_per_update * num_seeds * frame_skip
        self.unit = "frames" if frame_skip > 1 else "steps"
        self.first_seed = first_seed
        self.out = out or sys.stdout
        # A resumed run starts from the statistics of the updates before it.
        self.returns: list[np.ndarray] = [] if history is None else [history["episode/return"]]
        self.counts: list[np.ndarray] = [] if history is None else [history["episode/count"]]
        self.bar = None
        if self.out.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("[bold]train"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("updates  {task.fields[speed]}  {task.fields[ret]}"),
                TimeRemainingColumn(),
                console=Console(file=self.out),
            )
            self.task = self.bar.add_task("train", total=num_updates, speed="compiling", ret="")
            self.bar.start()

    def status(self, done: int, train_time_s: float) -> str:
        speed = f"{self.steps_per_update * done / max(train_time_s, 1e-9):,.0f} {self.unit}/s"
        recent = recent_mean_return(np.concatenate(self.returns, 1), np.concatenate(self.counts, 1))
        finite = recent[np.isfinite(recent)]
        return speed + (f" | return {finite.mean():.1f}" if finite.size else " | return -")

    def write(self, report: ChunkReport) -> None:
        self.returns.append(report.metrics["episode/return"])
        self.counts.append(report.metrics["episode/count"])
        done = report.first_update + report.metrics["episode/return"].shape[1]
        speed, ret = self.status(done, report.train_time_s).split(" | ")
        if self.bar is not None:
            self.bar.update(self.task, completed=done, speed=speed, ret=ret)
        else:
            print(f"update {done}/{self.num_updates} | {speed} | {ret}", file=self.out, flush=True)

    def on_stream(self, seed: Any, updates_done: Any, metrics: Any) -> None:
        """``StreamFn`` for ``RunOptions.stream``: advances the bar from inside a chunk."""
        if self.bar is not None and int(seed) == self.first_seed:
            self.bar.update(self.task, completed=int(updates_done))

    def close(self, summary: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.stop()


def emit(fn, *args) -> None:
    """Calls host function ``fn(*args)`` from inside jitted code (debug callback, unordered).

    The only sanctioned side effect inside jit; under ``vmap`` it fires once per mapped
    element, so pass an index (the seed) to tell them apart.
    """
    jax.debug.callback(fn, *args)
