"""The host loop: compiled chunks of updates for all seeds, and the reporting between them.

A chunk is ``lax.scan`` over ``algo.update``, vmapped over seeds and compiled once per chunk
length. Update ``u`` of every seed draws its key as ``fold_in(seed_key, u)``, so results do not
depend on how the run is cut into chunks: one chunk of 2N updates equals two chunks of N.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from purerl.algos import Algo
from purerl.checkpoint import HISTORY_KEYS, Checkpointer, Snapshot
from purerl.envs.stats import recent_mean_return
from purerl.logging import ChunkReport, Sink, emit
from purerl.parallel import Placement, fetch, place, replicas_fingerprints
from purerl.types import Array, Key, Metrics

S = TypeVar("S")

FINAL_WINDOW_EPISODES = 100
"""The final return of a seed is its mean over at least this many last finished episodes."""


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is reported. Nothing here changes its result."""

    run_dir: str | None = None
    """Run directory (default: runs/<algo>-<env>-<timestamp>). Must not exist or be empty."""
    updates_per_chunk: int | None = None
    """Updates per compiled chunk, i.e. between log points (default: about 20 chunks)."""
    progress: bool = True
    """Show a progress bar (a plain line per chunk when stdout is not a terminal)."""
    stream: bool = False
    """Also stream progress from inside each chunk through a JAX callback (finer-grained bar)."""
    checkpoints: bool = True
    """Save checkpoints into <run-dir>/checkpoints/<updates>/ (orbax)."""
    checkpoint_every: int | None = None
    """Updates between checkpoints (default: after every chunk); one is always saved at the end."""
    keep_checkpoints: int = 3
    """How many of the latest checkpoints to keep."""
    keep_best: int = 1
    """How many of the best checkpoints (by mean recent return over seeds) to keep as well."""
    tensorboard: bool = False
    """Also write TensorBoard event files to <run-dir>/tensorboard (pip install
    'purerl[tensorboard]')."""
    wandb_project: str | None = None
    """Also log to this Weights & Biases project (needs wandb installed)."""
    plot_window: int = 100
    """Moving-average window (updates) of the smoothed learning curve written at the end."""
    device: str = "auto"
    """Devices to train on: auto (GPUs if JAX sees any, else CPU), cpu, gpu, or a device index."""
    num_devices: int | None = None
    """How many devices of that kind (default: all; one for an index)."""
    parallel: str = "seeds"
    """With several devices: seeds (independent agents, seeds split across devices) or data (each
    agent's environments split across devices, gradients averaged)."""
    distributed: bool = False
    """Join a multi-process run (jax.distributed); coordinator, process count and id come from
    the flags below or, under SLURM and similar launchers, from the environment."""
    coordinator_address: str | None = None
    """host:port of process 0, for --distributed."""
    num_processes: int | None = None
    """Processes in the run, for --distributed."""
    process_id: int | None = None
    """This process's index, for --distributed."""
    checkpoint_buffer: bool = True
    """Include DQN's replay buffer in checkpoints (exact resume; off saves space, and a resumed
    run then refills an empty buffer)."""


class Agent(NamedTuple, Generic[S]):
    """One independent training session: the algorithm state and its key stream."""

    state: S
    key: Key
    """Update ``u`` uses ``fold_in(key, u)``."""
    seed: Array
    """int32 seed this agent was built from."""


class TrainSpec(Protocol):
    """What the loop needs to know of an algorithm's configuration."""

    num_seeds: int
    seed: int

    @property
    def num_updates(self) -> int: ...

    @property
    def env_steps_per_update(self) -> int: ...


def init_agent(algo: Algo[S], seed: Array) -> Agent[S]:
    init_key, run_key = jax.random.split(jax.random.key(seed))
    return Agent(algo.init(init_key), run_key, jnp.asarray(seed, jnp.int32))


def init_agents(
    algo: Algo[S], seeds: Sequence[int], placement: Placement | None = None
) -> Agent[S]:
    """Agents for ``seeds``, stacked along a leading seed axis ``[S, ...]``.

    With a ``placement`` they are built on its devices: split over the seed axis, or, for data
    parallelism, one replica per device stacked ``[D, S, ...]``.
    """
    seeds = jnp.asarray(seeds, jnp.int32)
    if placement is not None and placement.mode == "data":
        seeds = jnp.broadcast_to(seeds, (placement.num_devices, *seeds.shape))
    return init_program(algo, placement)(seeds)


@functools.lru_cache(maxsize=32)
def init_program(algo: Algo[S], placement: Placement | None) -> Callable[[Array], Agent[S]]:
    """The jitted ``seeds -> agents`` of an algorithm, built once per algorithm and placement
    (restoring a checkpoint builds fresh agents again, and should not compile again)."""
    build = jax.vmap(lambda seed: init_agent(algo, seed))
    return jax.jit(build if placement is None else place(placement, build))


StreamFn = Callable[[Array, Array, Metrics], None]
"""Host function called from inside a chunk with ``(seed, updates_done, metrics)``."""


def make_run_chunk(
    algo: Algo[S], num_updates: int, stream: StreamFn | None = None
) -> Callable[[Agent[S]], tuple[Agent[S], Metrics]]:
    """``num_updates`` updates of one agent, returning metrics stacked ``[num_updates]``."""

    def run_chunk(agent: Agent[S]) -> tuple[Agent[S], Metrics]:
        def body(state, _):
            state, metrics = algo.update(state, jax.random.fold_in(agent.key, state.step))
            if stream is not None:
                emit(stream, agent.seed, state.step, metrics)
            return state, metrics

        state, metrics = jax.lax.scan(body, agent.state, length=num_updates)
        return agent._replace(state=state), metrics

    return run_chunk


def over_seeds(fn: Callable[[Agent[S]], Any]) -> Callable[[Agent[S]], Any]:
    """Maps ``fn`` over the leading seed axis.

    A single seed skips ``vmap`` (a reshape drops and restores the axis): XLA's batched kernels
    for a batch of one are measurably slower on CPU than the unbatched ones.
    """
    mapped = jax.vmap(fn)

    def call(agents: Agent[S]) -> Any:
        if jax.tree.leaves(agents)[0].shape[0] != 1:
            return mapped(agents)
        out = fn(jax.tree.map(lambda x: x.reshape(x.shape[1:]), agents))
        return jax.tree.map(lambda x: x.reshape((1,) + x.shape), out)

    return call


def compile_chunk(
    algo: Algo[S],
    agents: Agent[S],
    num_updates: int,
    stream: StreamFn | None = None,
    placement: Placement | None = None,
):
    """AOT-compiles the chunk over all seeds of ``agents``; the input agents are donated."""
    chunk = over_seeds(make_run_chunk(algo, num_updates, stream))
    if placement is not None:
        chunk = place(placement, chunk)
    return jax.jit(chunk, donate_argnums=0).lower(agents).compile()


def plan_chunks(
    num_updates: int,
    updates_per_chunk: int | None,
    target_chunks: int = 20,
    checkpoint_every: int | None = None,
    start: int = 0,
) -> list[int]:
    """Chunk lengths covering updates ``start`` to ``num_updates`` (a resumed run starts later).

    Each distinct length costs a compile, so without an explicit size a divisor of
    ``num_updates`` near ``num_updates / target_chunks`` is preferred (one length); if none is
    within a factor of two, the run ends with one shorter chunk. With ``checkpoint_every`` the
    default size is its largest divisor not above that target, so chunks end at every
    checkpoint.
    """
    if updates_per_chunk is None:
        target = max(1, math.ceil(num_updates / target_chunks))
        if checkpoint_every:
            updates_per_chunk = max(
                d for d in range(1, min(target, checkpoint_every) + 1) if checkpoint_every % d == 0
            )
        else:
            near = range(max(1, target // 2), 2 * target + 1)
            divisors = [d for d in near if num_updates % d == 0]
            updates_per_chunk = min(divisors, key=lambda d: abs(d - target)) if divisors else target
    remaining = num_updates - start
    if remaining <= 0:
        return []
    size = min(updates_per_chunk, remaining)
    full, rest = divmod(remaining, size)
    return [size] * full + ([rest] if rest else [])


class NonFiniteLossError(RuntimeError):
    """Training produced a NaN or infinite loss."""


def check_finite(report: ChunkReport) -> None:
    """Raises ``NonFiniteLossError`` if a loss of the chunk is NaN or infinite.

    Updates that report ``optim/gradient_steps`` of 0 took no gradient step (DQN before
    ``learning_starts``); their loss is undefined, not diverged, and is not checked.
    """
    losses = report.metrics.get("loss/total")
    if losses is None:
        return
    stepped = report.metrics.get("optim/gradient_steps", np.ones_like(losses)) > 0
    bad = ~np.isfinite(losses) & stepped
    if not bad.any():
        return
    seed, offset = np.argwhere(bad)[0]
    update = report.first_update + int(offset) + 1
    raise NonFiniteLossError(
        f"the loss of seed index {seed} became non-finite at update {update}; lower --lr or "
        "--max-grad-norm, or turn on --normalize-obs"
    )


@dataclasses.dataclass
class TrainResult(Generic[S]):
    agents: Agent[S]
    summary: dict[str, Any]
    final_returns: np.ndarray
    interrupted: bool = False
    """True when ``should_stop`` ended the run early (after saving a checkpoint)."""


class History:
    """The per-update statistics the final return is computed from, ``[S, U]`` each."""

    def __init__(self, start: dict[str, np.ndarray] | None = None):
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in HISTORY_KEYS}
        for name, values in (start or {}).items():
            self.parts[name].append(np.asarray(values))

    def add(self, metrics: dict[str, np.ndarray]) -> None:
        for name, parts in self.parts.items():
            parts.append(metrics[name])

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.concatenate(parts, axis=1) for name, parts in self.parts.items()}

    def final_returns(self) -> np.ndarray:
        arrays = self.arrays()
        return recent_mean_return(
            arrays["episode/return"], arrays["episode/count"], FINAL_WINDOW_EPISODES
        )


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


def checkpoint_due(before: int, after: int, total: int, every: int | None) -> bool:
    """Whether a chunk ending at ``after`` (from ``before``) gets a checkpoint."""
    if after >= total or not every:
        return True
    return after // every > before // every


def train(
    algo: Algo[S],
    spec: TrainSpec,
    options: RunOptions,
    sinks: Sequence[Sink] = (),
    frame_skip: int = 1,
    stream: StreamFn | None = None,
    *,
    checkpointer: Checkpointer | None = None,
    start: Snapshot | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    placement: Placement | None = None,
) -> TrainResult[S]:
    """Trains ``spec.num_seeds`` agents for ``spec.num_updates`` updates each.

    Args:
        checkpointer: where to save checkpoints (at the cadence of ``options``, at the end and
            when stopped early); None saves none.
        start: a restored checkpoint to continue from instead of fresh agents.
        should_stop: polled after every chunk; True saves a checkpoint and ends the run.
        placement: the devices and how the work is split over them (one device without).

    Returns:
        The final agents (stacked over seeds), the run summary, and per-seed final returns.
    """
    begin = time.perf_counter()
    if start is None:
        agents = init_agents(algo, [spec.seed + i for i in range(spec.num_seeds)], placement)
        history, done = History(), 0
    else:
        agents, history, done = start.agents, History(start.history), start.updates_done
    first = done
    lengths = plan_chunks(
        spec.num_updates,
        options.updates_per_chunk,
        checkpoint_every=options.checkpoint_every,
        start=done,
    )
    compiled = {n: compile_chunk(algo, agents, n, stream, placement) for n in sorted(set(lengths))}
    jax.block_until_ready(agents)
    compile_time = time.perf_counter() - begin

    interrupted = False
    for length in lengths:
        agents, metrics = compiled[length](agents)
        metrics = host_metrics(metrics, agents, placement)
        now = time.perf_counter()
        report = ChunkReport(done, metrics, now - begin, now - begin - compile_time)
        check_finite(report)
        history.add(report.metrics)
        for sink in sinks:
            sink.write(report)
        done, before = done + length, done
        interrupted = should_stop()
        if checkpointer and (
            interrupted or checkpoint_due(before, done, spec.num_updates, options.checkpoint_every)
        ):
            final = history.final_returns()
            mean = float(np.nanmean(final)) if np.isfinite(final).any() else None
            checkpointer.save(done, agents, history.arrays(), mean)
        if interrupted:
            break

    summary = make_summary(
        spec, history.final_returns(), done, first, frame_skip, begin, compile_time
    )
    for sink in sinks:
        sink.close(summary)
    return TrainResult(agents, summary, history.final_returns(), interrupted)


def make_summary(
    spec: TrainSpec,
    final: np.ndarray,
    done: int,
    first: int,
    frame_skip: int,
    begin: float,
    compile_time: float,
) -> dict[str, Any]:
    """The ``summary.json`` record (README documents its keys)."""
    wall = time.perf_counter() - begin
    steps_per_seed = done * spec.env_steps_per_update
    session_steps = (done - first) * spec.env_steps_per_update * spec.num_seeds
    any_finite = np.isfinite(final).any()
    return {
        "final_mean_return": _finite_or_none(np.nanmean(final) if any_finite else np.nan),
        "final_std_return": _finite_or_none(np.nanstd(final) if any_finite else np.nan),
        "per_seed_final_return": [_finite_or_none(x) for x in final],
        "final_return_window_episodes": FINAL_WINDOW_EPISODES,
        "num_seeds": spec.num_seeds,
        "num_updates": done,
        "env_steps_per_seed": steps_per_seed,
        "total_env_steps": steps_per_seed * spec.num_seeds,
        "total_frames": steps_per_seed * spec.num_seeds * frame_skip,
        "resumed_from_update": first,
        "wall_time_s": wall,
        "compile_time_s": compile_time,
        "train_time_s": wall - compile_time,
        "steps_per_second": session_steps / max(wall - compile_time, 1e-9),
    }


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
