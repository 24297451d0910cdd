"""Stopping a run early: your callbacks, ``--stop-at-return`` and ``--stop-on-plateau``.

After every chunk the run builds a ``Report`` and hands it to each callback
(``purerl.train(..., callbacks=[fn])``); a callback returning True stops the run, as do the
command line's rules. A stopped run saves a checkpoint and finishes like one stopped by Ctrl-C,
with its summary and curves, exit code 0, and says why; ``purerl train --resume`` continues it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from purerl.core.report import ChunkReport
from purerl.core.stats import FINAL_WINDOW_EPISODES, recent_mean_return


class Report(NamedTuple):
    """What a callback gets after every chunk of a run."""

    update: int
    """Updates done so far (after this chunk)."""
    num_updates: int
    """The run's budget in updates."""
    env_steps: int
    """Environment steps per seed so far."""
    metrics: dict[str, np.ndarray]
    """This chunk's per-update metrics, ``[num_seeds, updates in the chunk]`` each."""
    recent_return: float | None
    """Mean over seeds of each seed's mean return over its last 100 or more episodes."""
    eval_return: float | None
    """Mean over seeds of the evaluation after this chunk (``--eval-every``), else None."""


Callback = Callable[[Report], Any]


class EarlyStop:
    """A sink that runs the callbacks and the stopping rules after every chunk; ``requested``
    is what the training loop polls."""

    def __init__(
        self,
        callbacks: Sequence[Callback],
        num_updates: int,
        env_steps_per_update: int,
        stop_at_return: float | None = None,
        stop_on_plateau: int | None = None,
        history: dict[str, np.ndarray] | None = None,
    ):
        self.callbacks = list(callbacks)
        self.num_updates, self.steps = num_updates, env_steps_per_update
        self.stop_at_return, self.plateau = stop_at_return, stop_on_plateau
        history = history or {}
        self.returns = (
            [np.asarray(history["episode/return"])] if "episode/return" in history else []
        )
        self.counts = [np.asarray(history["episode/count"])] if "episode/count" in history else []
        self.best, self.stale = -math.inf, 0
        self.reason: str | None = None

    def requested(self) -> bool:
        return self.reason is not None

    def write(self, report: ChunkReport) -> None:
        update = report.first_update + next(iter(report.metrics.values())).shape[1]
        recent = self._recent(report.metrics)
        evals = report.evals
        eval_return = None
        if evals is not None and "eval/return" in evals:
            values = np.asarray(evals["eval/return"], np.float64)
            eval_return = float(np.nanmean(values)) if np.isfinite(values).any() else None
        done = Report(update, self.num_updates, update * self.steps, report.metrics, recent,
                      eval_return)  # fmt: skip
        for index, callback in enumerate(self.callbacks):
            if callback(done) is True and self.reason is None:
                name = getattr(callback, "__name__", f"callback {index}")
                self.reason = f"{name} asked to stop after update {update}"
        if self.eval_every:
            if evals is not None:  # between evaluations the rules wait for the next one
                self._rules(eval_return, update)
        else:
            self._rules(recent, update)

    eval_every = 0
    """Set by the session when the run evaluates: the rules then watch the evaluation return."""

    def _rules(self, value: float | None, update: int) -> None:
        if value is None or self.reason is not None:
            return
        what = "evaluation return" if self.eval_every else "recent return"
        if self.stop_at_return is not None and value >= self.stop_at_return:
            self.reason = (
                f"the {what} {value:.1f} reached --stop-at-return {self.stop_at_return:g} at "
                f"update {update}"
            )
            return
        if self.plateau is None:
            return
        if value > self.best:
            self.best, self.stale = value, 0
            return
        self.stale += 1
        if self.stale >= self.plateau:
            self.reason = (
                f"the {what} has not improved on {self.best:.1f} for {self.stale} reports "
                f"(--stop-on-plateau {self.plateau}) at update {update}"
            )

    def _recent(self, metrics: dict[str, np.ndarray]) -> float | None:
        if "episode/return" not in metrics:
            return None
        self.returns.append(np.asarray(metrics["episode/return"]))
        self.counts.append(np.asarray(metrics["episode/count"]))
        returns, counts = np.concatenate(self.returns, 1), np.concatenate(self.counts, 1)
        final = recent_mean_return(returns, counts, FINAL_WINDOW_EPISODES)
        return float(np.nanmean(final)) if np.isfinite(final).any() else None

    def close(self, summary: dict[str, Any]) -> None:
        pass
