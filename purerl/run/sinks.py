"""Sinks that speak to a person: the progress bar, and the command line's notices.

Besides the loop's reports, the session hands every sink its *notices* (what a run does, where
its results went, how to go on) through ``notify`` and ``warn``; a sink without ``notice`` or
``warning`` ignores them. The command line adds a ``ConsoleSink`` that prints them; the Python
API adds none, so it prints nothing but the progress bar it is asked for.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from purerl.core.report import ChunkReport
from purerl.core.stats import recent_mean_return


class ProgressSink:
    """A progress bar with steps/s and the recent mean return; plain lines off a terminal.

    Speed counts all seeds' environment steps (frames when ``frame_skip`` > 1) over training
    time, compilation excluded. The return is the mean over seeds of each seed's mean over its
    last 100 or more finished episodes; ``eval`` the latest evaluation's mean return over seeds
    (``--eval-every``).
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
        self.first_update = None if history is None else history["episode/return"].shape[1]
        self.steps_per_update = env_steps_per_update * num_seeds * frame_skip
        self.unit = "frames" if frame_skip > 1 else "steps"
        self.first_seed = first_seed
        self.out = out or sys.stdout
        # A resumed run starts from the statistics of the updates before it.
        self.returns: list[np.ndarray] = [] if history is None else [history["episode/return"]]
        self.counts: list[np.ndarray] = [] if history is None else [history["episode/count"]]
        self.last_eval = ""
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
        trained = done - (self.first_update or 0)
        speed = f"{self.steps_per_update * trained / max(train_time_s, 1e-9):,.0f} {self.unit}/s"
        recent = recent_mean_return(np.concatenate(self.returns, 1), np.concatenate(self.counts, 1))
        finite = recent[np.isfinite(recent)]
        return speed + (f" | return {finite.mean():.1f}" if finite.size else " | return -")

    def write(self, report: ChunkReport) -> None:
        self.returns.append(report.metrics["episode/return"])
        self.counts.append(report.metrics["episode/count"])
        done = report.first_update + report.metrics["episode/return"].shape[1]
        speed, ret = self.status(done, report.train_time_s).split(" | ")
        if report.evals is not None:
            values = np.asarray(report.evals["eval/return"], np.float64)
            finite = values[np.isfinite(values)]
            self.last_eval = f" | eval {finite.mean():.1f}" if finite.size else " | eval -"
        if self.bar is not None:
            # The bar keeps showing the latest evaluation; a plain line shows the one made there.
            ret += self.last_eval
            self.bar.update(self.task, completed=done, speed=speed, ret=ret)
        else:
            ret += self.last_eval if report.evals is not None else ""
            print(f"update {done}/{self.num_updates} | {speed} | {ret}", file=self.out, flush=True)

    def on_stream(self, seed: Any, updates_done: Any, metrics: Any) -> None:
        """``StreamFn`` for ``RunOptions.stream``: advances the bar from inside a chunk."""
        if self.bar is not None and int(seed) == self.first_seed:
            self.bar.update(self.task, completed=int(updates_done))

    def close(self, summary: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.stop()


class ConsoleSink:
    """The command line's notices on standard output, warnings on standard error."""

    def __init__(self, out: IO[str] | None = None, err: IO[str] | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def write(self, report: ChunkReport) -> None:
        pass

    def notice(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def warning(self, text: str) -> None:
        print(text, file=self.err, flush=True)

    def close(self, summary: Any) -> None:
        pass


def notify(sinks: Sequence[Any], text: str) -> None:
    """Hands ``text`` to the sinks that take notices."""
    for sink in sinks:
        if hasattr(sink, "notice"):
            sink.notice(text)


def warn(sinks: Sequence[Any], text: str) -> None:
    """Hands ``text`` to the sinks that take warnings."""
    for sink in sinks:
        if hasattr(sink, "warning"):
            sink.warning(text)
