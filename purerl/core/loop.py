"""The host driver: runs a training program chunk after chunk, between chunks doing what
cannot be compiled.

``train`` initialises (or restores) the agents, plans the chunks (``purerl.core.schedule``),
compiles each chunk length once (``purerl.core.program``) and runs them. Between chunks the
host evaluates the agents when asked to (``Evaluation``), checks the losses, hands metrics to
sinks and saves checkpoints at their cadence; the time those take is kept apart from training
time (``Timing``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import jax
import numpy as np

from purerl.core.algo import Algo
from purerl.core.parallel import Placement, fetch, replicas_fingerprints
from purerl.core.program import (
    Agent,
    EvalFn,
    StreamFn,
    build_program,
    collector_paused,
    compile_chunk,
)
from purerl.core.report import ChunkReport, Sink
from purerl.core.schedule import checkpoint_due, plan_chunks, plan_evaluated_chunks
from purerl.core.stats import FINAL_WINDOW_EPISODES, recent_mean_return
from purerl.core.types import Metrics

S = TypeVar("S")

HISTORY_KEYS = ("episode/return", "episode/count")
"""Per-update metrics a run keeps from its start, ``[S, U]`` each: what the final return
needs (and what a checkpoint carries, so that a resumed run has them too)."""


class Snapshot(NamedTuple):
    """Where a run continues from: agents stacked over seeds, and the run's history so far
    (``HISTORY_KEYS``, ``[S, updates_done]``); a checkpoint restores one."""

    agents: Any
    history: dict[str, np.ndarray]
    updates_done: int
    record: dict[str, Any]
    """What the run recorded about itself (``sessions``: one timing record per process)."""


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """An evaluation the loop runs after every ``every`` updates (update counts that are
    multiples of it, resumed runs too): chunks are cut to end there, and its metrics reach the
    sinks with the chunk that ends there (``ChunkReport.evals``)."""

    every: int
    program: EvalFn


class TrainSpec(Protocol):
    """What the loop needs to know of an algorithm's configuration."""

    num_seeds: int
    seed: int

    @property
    def num_updates(self) -> int: ...

    @property
    def env_steps_per_update(self) -> int: ...


class Saver(Protocol):
    """Where checkpoints go (``purerl.run.checkpoint.Checkpointer``)."""

    last_saved: int | None

    def save(
        self, updates_done: int, agents: Any, history: dict, mean_return: Any, sessions: list
    ) -> None: ...


@dataclasses.dataclass(frozen=True)
class CheckpointPolicy:
    """When the loop saves: after the first chunk that reaches ``every_updates`` more updates or
    ``every_seconds`` more wall-clock time, at the end, and when stopped early."""

    saver: Saver
    every_updates: int | None = None
    every_seconds: float | None = None


@dataclasses.dataclass
class Timing:
    """Where one process's time went; training excludes compiling and checkpoint saves."""

    first_update: int
    updates_done: int = 0
    compile_time_s: float = 0.0
    train_time_s: float = 0.0
    checkpoint_time_s: float = 0.0
    eval_time_s: float = 0.0
    """Spent evaluating (``Evaluation``), compile excluded."""
    wall_time_s: float = 0.0

    def record(self, env_steps: int) -> dict[str, Any]:
        """This process's line of ``summary.json``'s ``sessions``."""
        return {
            "first_update": self.first_update,
            "last_update": self.updates_done,
            "env_steps": env_steps,
            "wall_time_s": self.wall_time_s,
            "compile_time_s": self.compile_time_s,
            "train_time_s": self.train_time_s,
            "checkpoint_time_s": self.checkpoint_time_s,
            "eval_time_s": self.eval_time_s,
            "steps_per_second": env_steps / max(self.train_time_s, 1e-9),
        }


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss."""


def first_nonfinite(report: ChunkReport) -> tuple[int, int] | None:
    """``(seed index, update)`` of the first NaN or infinite loss of a chunk, or None.

    Updates that report ``optim/gradient_steps`` of 0 took no gradient step (DQN before
    ``learning_starts``); their loss is undefined, not diverged, and is not checked.
    """
    losses = report.metrics.get("loss/total")
    if losses is None:
        return None
    stepped = report.metrics.get("optim/gradient_steps", np.ones_like(losses)) > 0
    bad = ~np.isfinite(losses) & stepped
    if not bad.any():
        return None
    seed, offset = np.argwhere(bad)[0]
    return int(seed), report.first_update + int(offset) + 1


class TrainResult(NamedTuple, Generic[S]):
    agents: Agent[S]
    history: dict[str, np.ndarray]
    """Every per-update metric of the updates this process ran and those restored, ``[S, U]``
    (restored runs: only the episode statistics of the updates before the checkpoint)."""
    final_returns: np.ndarray
    """``[S]`` mean over each seed's last ``FINAL_WINDOW_EPISODES``+ episodes (NaN: none)."""
    timing: Timing
    sessions: list[dict[str, Any]]
    """One record per process of the run so far (earlier ones from the checkpoint)."""
    interrupted: bool
    """True when ``should_stop`` ended the run early (after saving a checkpoint)."""
    evaluations: dict[str, np.ndarray] | None = None
    """The evaluations this process ran (``Evaluation``): ``update`` ``[E]``, the update counts
    they followed, and each evaluation metric ``[S, E]``; None without an evaluation."""


class History:
    """Per-update metrics ``[S, U]`` of the run so far: the final return needs the episode
    statistics of every update, restored ones included."""

    def __init__(self, start: dict[str, np.ndarray] | None = None):
        self.parts: dict[str, list[np.ndarray]] = {}
        for name, values in (start or {}).items():
            self.parts[name] = [np.asarray(values)]

    def add(self, metrics: dict[str, np.ndarray]) -> None:
        for name, values in metrics.items():
            self.parts.setdefault(name, []).append(np.asarray(values))

    def arrays(self, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        keys = self.parts if names is None else names
        return {name: np.concatenate(self.parts[name], axis=1) for name in keys}

    def final_returns(self) -> np.ndarray:
        arrays = self.arrays(HISTORY_KEYS)
        return recent_mean_return(
            arrays["episode/return"], arrays["episode/count"], FINAL_WINDOW_EPISODES
        )

    def mean_final_return(self) -> float | None:
        final = self.final_returns()
        return float(np.nanmean(final)) if np.isfinite(final).any() else None


def host_metrics(metrics: Metrics, agents: Agent, placement: Placement | None) -> Metrics:
    """A chunk's metrics on the host as ``[S, n]`` arrays.

    Data-parallel replicas report the same (averaged) metrics; their parameters must stay
    identical, which a digest per replica checks after every chunk.
    """
    metrics = fetch(metrics)
    if placement is None or placement.mode != "data":
        return metrics
    digests = replicas_fingerprints(agents.state.params)
    if len(set(digests)) != 1:
        raise RuntimeError(
            f"data-parallel replicas diverged: {len(set(digests))} distinct parameter sets "
            "across devices"
        )
    return {name: values[0] for name, values in metrics.items()}


def train(
    algo: Algo[S],
    spec: TrainSpec,
    *,
    sinks: Sequence[Sink] = (),
    updates_per_chunk: int | None = None,
    stream: StreamFn | None = None,
    checkpoints: CheckpointPolicy | None = None,
    start: Snapshot | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    placement: Placement | None = None,
    evaluation: Evaluation | None = None,
) -> TrainResult[S]:
    """Trains ``spec.num_seeds`` agents for ``spec.num_updates`` updates each.

    Args:
        sinks: get every chunk's metrics on the host (``ChunkReport``).
        updates_per_chunk: updates per compiled chunk (default: about 20 chunks).
        stream: host function called from inside chunks after every update.
        checkpoints: where and when to save (also at the end and when stopped early).
        start: a restored checkpoint to continue from instead of fresh agents.
        should_stop: polled after every chunk; True saves a checkpoint and ends the run.
        placement: the devices and how the work is split over them (one device without).
        evaluation: run after every ``evaluation.every`` updates, its metrics reported with the
            chunk that ends there; it reads the agents and changes nothing of the training.

    Raises:
        NonFiniteLossError: a loss turned NaN or infinite (nothing after it is saved).
    """
    begin = time.perf_counter()
    agents = None
    if start is None:
        history, done, earlier = History(), 0, []
    else:
        agents, history, done = start.agents, History(start.history), start.updates_done
        earlier = list(start.record.get("sessions", []))
    timing = Timing(first_update=done, updates_done=done)
    every = checkpoints.every_updates if checkpoints else None
    if evaluation is None:
        lengths = plan_chunks(
            spec.num_updates, updates_per_chunk, checkpoint_every=every, start=done
        )
    else:
        lengths = plan_evaluated_chunks(
            spec.num_updates, updates_per_chunk, evaluation.every, every, done
        )
    with collector_paused():  # the compile of a resumed run, and evaluations, as well
        if agents is None:
            seeds = [spec.seed + i for i in range(spec.num_seeds)]
            agents, compiled = build_program(algo, seeds, sorted(set(lengths)), stream, placement)
        else:
            compiled = {
                n: compile_chunk(algo, agents, n, stream, placement) for n in sorted(set(lengths))
            }
        evaluate = None
        if evaluation is not None and any(
            u % evaluation.every == 0 for u in np.cumsum([done, *lengths])[1:]
        ):
            evaluate = jax.jit(evaluation.program).lower(agents, np.int32(done)).compile()
    jax.block_until_ready(agents)
    timing.compile_time_s = time.perf_counter() - begin
    steps_per_update = spec.env_steps_per_update * spec.num_seeds

    def sessions() -> list[dict[str, Any]]:
        timing.wall_time_s = time.perf_counter() - begin
        steps = (timing.updates_done - timing.first_update) * steps_per_update
        return [*earlier, timing.record(steps)]

    last_save = time.perf_counter()
    interrupted = False
    evaluated: list[tuple[int, Metrics]] = []
    for length in lengths:
        chunk_start = time.perf_counter()
        agents, metrics = compiled[length](agents)
        metrics = host_metrics(metrics, agents, placement)
        timing.train_time_s += time.perf_counter() - chunk_start
        evals = None
        if evaluate is not None and (done + length) % evaluation.every == 0:
            eval_start = time.perf_counter()
            evals = fetch(evaluate(agents, np.int32(done + length)))
            timing.eval_time_s += time.perf_counter() - eval_start
            evaluated.append((done + length, evals))
        wall = time.perf_counter() - begin
        report = ChunkReport(done, metrics, wall, timing.train_time_s, evals)
        bad = first_nonfinite(report)
        if bad is not None:
            raise NonFiniteLossError(nonfinite_message(*bad, checkpoints))
        history.add(report.metrics)
        for sink in sinks:
            sink.write(report)
        done, before = done + length, done
        timing.updates_done = done
        interrupted = should_stop()
        now = time.perf_counter()
        if checkpoints and (
            interrupted
            or checkpoint_due(checkpoints, before, done, spec.num_updates, now - last_save)
        ):
            checkpoints.saver.save(
                done,
                agents,
                history.arrays(HISTORY_KEYS),
                checkpoint_score(history, evaluated),
                sessions(),
            )
            last_save = time.perf_counter()
            timing.checkpoint_time_s += last_save - now
        if interrupted:
            break
    return TrainResult(
        agents,
        history.arrays(),
        history.final_returns(),
        timing,
        sessions(),
        interrupted,
        None if evaluation is None else stack_evaluations(evaluated),
    )


def checkpoint_score(history: History, evaluated: list[tuple[int, Metrics]]) -> float | None:
    """What ``--keep-best`` ranks a checkpoint by: the mean over seeds of the latest evaluation
    return when the run evaluates, else of the recent training return."""
    if evaluated:
        returns = np.asarray(evaluated[-1][1].get("eval/return", np.nan), np.float64)
        if np.isfinite(returns).any():
            return float(np.nanmean(returns))
    return history.mean_final_return()


def stack_evaluations(evaluated: list[tuple[int, Metrics]]) -> dict[str, np.ndarray]:
    """``TrainResult.evaluations`` from ``(update, metrics [S])`` pairs."""
    out = {"update": np.asarray([update for update, _ in evaluated], np.int64)}
    for name in evaluated[0][1] if evaluated else ():
        out[name] = np.stack([np.asarray(m[name]) for _, m in evaluated], axis=1)
    return out


def nonfinite_message(seed: int, update: int, checkpoints: CheckpointPolicy | None) -> str:
    kept = checkpoints.saver.last_saved if checkpoints else None
    where = (
        f"checkpoint {kept}, saved before it, is kept"
        if kept is not None
        else "no checkpoint was saved before it"
    )
    return (
        f"the loss of seed index {seed} became non-finite at update {update} ({where}); lower "
        "--lr or --max-grad-norm, or turn on --normalize-obs, and start a new run"
    )
