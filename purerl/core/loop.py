"""The compiled-chunk loop: updates of every seed as one program, run chunk after chunk.

A chunk is ``lax.scan`` over ``algo.update``, vmapped over seeds and compiled once per chunk
length. Update ``u`` of every seed draws its key as ``fold_in(seed_key, u)``, so results do not
depend on how the run is cut into chunks: one chunk of 2N equals two chunks of N. Between chunks
the host evaluates the agents when asked to (``Evaluation``), hands metrics to sinks and saves
checkpoints at their cadence; the time those take is kept apart from training time.
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

from purerl.config import MAX_UPDATES
from purerl.core.algo import Algo
from purerl.core.parallel import Placement, fetch, place, replicas_fingerprints
from purerl.core.report import ChunkReport, Sink, emit
from purerl.core.stats import FINAL_WINDOW_EPISODES, recent_mean_return
from purerl.core.types import Array, Key, Metrics

S = TypeVar("S")

HISTORY_KEYS = ("episode/return", "episode/count")
"""Per-update metrics a run keeps from its start, ``[S, U]`` each: what the final return
needs (and what a checkpoint carries, so that a resumed run has them too)."""


class Agent(NamedTuple, Generic[S]):
    """One independent training session: the algorithm state and its key stream."""

    state: S
    key: Key
    """Update ``u`` uses ``fold_in(key, u)``."""
    seed: Array
    """int32 seed this agent was built from."""


class Snapshot(NamedTuple):
    """Where a run continues from: agents stacked over seeds, and the run's history so far
    (``HISTORY_KEYS``, ``[S, updates_done]``); a checkpoint restores one."""

    agents: Any
    history: dict[str, np.ndarray]
    updates_done: int
    record: dict[str, Any]
    """What the run recorded about itself (``sessions``: one timing record per process)."""


EVAL_STREAM = MAX_UPDATES
"""``fold_in`` of an agent's key that starts its evaluation key stream. Updates fold in their
step, which stays below ``MAX_UPDATES``, so no update draws it."""


def evaluation_key(key: Key, updates_done: Array | int) -> Key:
    """The key of the evaluation after ``updates_done`` updates of an agent whose update keys
    come from ``key`` (``Agent.key``): a stream of its own, derived from the update count."""
    return jax.random.fold_in(jax.random.fold_in(key, EVAL_STREAM), updates_done)


EvalFn = Callable[[Any, Array], Metrics]
"""``(agents, updates_done) -> metrics``: an evaluation of agents stacked over seeds, each metric
``[S]``; pure, so it can be compiled. It reads the agents and changes nothing."""


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


def init_agent(algo: Algo[S], seed: Array) -> Agent[S]:
    """The agent of ``seed``: ``init_agent_from_key`` of ``jax.random.key(seed)``."""
    return init_agent_from_key(algo, jax.random.key(seed), seed)


def init_agent_from_key(algo: Algo[S], key: Key, seed: Array | int = 0) -> Agent[S]:
    """A fresh agent: state from one half of ``key``, update keys from the other."""
    init_key, run_key = jax.random.split(key)
    return Agent(strong_types(algo.init(init_key)), run_key, jnp.asarray(seed, jnp.int32))


def strong_types(tree: Any) -> Any:
    """``tree`` with no weakly typed leaves (an environment's ``time = 0`` is one).

    A restored checkpoint's arrays are strongly typed; a weak leaf in a fresh state would trace
    the chunk into a different program, and a resumed run would compile again.
    """

    def strong(x: Array) -> Array:
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return x
        return jax.lax.convert_element_type(x, x.dtype)

    return jax.tree.map(strong, tree)


def init_agents(
    algo: Algo[S],
    seeds: Sequence[int],
    placement: Placement | None = None,
    hparams: Any = None,
) -> Agent[S]:
    """Agents for ``seeds``, stacked along a leading seed axis ``[S, ...]``.

    With a ``placement`` they are built on its devices: split over the seed axis, or, for data
    parallelism, one replica per device stacked ``[D, S, ...]``. ``hparams`` gives each agent
    its own traced hyperparameters (fields ``[S]``, a sweep's); by default every agent gets
    ``algo.hparams``.
    """
    seeds = jnp.asarray(seeds, jnp.int32)
    if hparams is None and algo.hparams is not None:
        hparams = jax.tree.map(lambda x: np.full(seeds.shape, x, np.float32), algo.hparams)
    if placement is not None and placement.mode == "data":
        seeds, hparams = jax.tree.map(
            lambda x: jnp.broadcast_to(x, (placement.num_devices, *x.shape)), (seeds, hparams)
        )
    agents = init_program(algo, placement)((seeds, hparams))
    # Committed to where they are (no copy), as restored checkpoints are: the chunk program
    # then lowers to the same text, and a resumed run loads it from the compilation cache.
    return jax.device_put(agents, jax.tree.map(lambda x: x.sharding, agents))


@functools.lru_cache(maxsize=32)
def init_program(algo: Algo[S], placement: Placement | None) -> Callable[[Any], Agent[S]]:
    """The jitted ``(seeds, hparams) -> agents`` of an algorithm, built once per algorithm and
    placement (restoring a checkpoint builds fresh agents again, and should not compile again).

    The traced hyperparameters come in as data and replace the ``state.hparams`` that ``init``
    built: nothing else in a fresh state depends on them, so the program is the same for every
    value of them.
    """

    def build(inputs: tuple[Array, Any]) -> Agent[S]:
        def one(seed: Array, hparams: Any) -> Agent[S]:
            agent = init_agent(algo, seed)
            if hparams is None:
                return agent
            return agent._replace(state=agent.state._replace(hparams=hparams))

        return jax.vmap(one)(*inputs)

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


def over_seeds(
    fn: Callable[[Agent[S]], tuple[Agent[S], Any]], lockstep: Sequence[str] = ()
) -> Callable[[Agent[S]], tuple[Agent[S], Any]]:
    """Maps ``fn`` (agent to agent and outputs) over the leading seed axis.

    A single seed skips ``vmap`` (a reshape drops and restores the axis): XLA's batched kernels
    for a batch of one are measurably slower on CPU than the unbatched ones. Several seeds share
    one copy of ``state.step`` and of the ``lockstep`` leaves (``Algo.lockstep``): all seeds of a
    program start together and advance alike, so seed 0's copy goes in unmapped and comes out
    broadcast to every seed. ``vmap`` refuses to compile if ``fn`` makes one depend on a
    seed's data.
    """
    paths = tuple(f"state.{path}" for path in ("step", *lockstep))

    def call(agents: Agent[S]) -> tuple[Agent[S], Any]:
        num_seeds = jax.tree.leaves(agents)[0].shape[0]
        if num_seeds == 1:
            out = fn(jax.tree.map(lambda x: x.reshape(x.shape[1:]), agents))
            return jax.tree.map(lambda x: x.reshape((1,) + x.shape), out)
        axes = replace_paths(jax.tree.map(lambda _: 0, agents), paths, lambda _: None)
        shared = replace_paths(agents, paths, lambda x: x[0])
        out, rest = jax.vmap(fn, in_axes=(axes,), out_axes=(axes, 0))(shared)
        return replace_paths(out, paths, lambda x: jnp.broadcast_to(x, (num_seeds, *x.shape))), rest

    return call


def replace_paths(tree: Any, paths: Sequence[str], change: Callable[[Any], Any]) -> Any:
    """``tree`` (nested NamedTuples) with ``change`` applied at each dotted attribute path."""
    for path in paths:
        tree = replace_path(tree, path.split("."), change)
    return tree


def replace_path(tree: Any, names: list[str], change: Callable[[Any], Any]) -> Any:
    child = getattr(tree, names[0])
    new = change(child) if len(names) == 1 else replace_path(child, names[1:], change)
    return tree._replace(**{names[0]: new})


def compile_chunk(
    algo: Algo[S],
    agents: Agent[S],
    num_updates: int,
    stream: StreamFn | None = None,
    placement: Placement | None = None,
):
    """AOT-compiles the chunk over all seeds of ``agents``; the input agents are donated."""
    chunk = over_seeds(make_run_chunk(algo, num_updates, stream), algo.lockstep)
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
    ``num_updates`` near ``num_updates / target_chunks`` is preferred (one length). Failing
    that, a smaller divisor, as long as the run stays within ``4 * target_chunks`` chunks: a
    chunk costs about a millisecond on the host, a second compiled length seconds. Only then
    does the run end with one shorter chunk. With ``checkpoint_every`` the default size is its
    largest divisor not above that target, so chunks end at every checkpoint.
    """
    if updates_per_chunk is None:
        target = max(1, math.ceil(num_updates / target_chunks))
        if checkpoint_every:
            limit = min(target, checkpoint_every)
            updates_per_chunk = max(d for d in divisors(checkpoint_every) if d <= limit)
        else:
            candidates = divisors(num_updates)
            near = [d for d in candidates if target // 2 <= d <= 2 * target]
            most = 4 * target_chunks
            smaller = [d for d in candidates if d < target and num_updates // d <= most]
            if near:
                updates_per_chunk = min(near, key=lambda d: abs(d - target))
            else:
                updates_per_chunk = max(smaller, default=target)
    remaining = num_updates - start
    if remaining <= 0:
        return []
    size = min(updates_per_chunk, remaining)
    full, rest = divmod(remaining, size)
    return [size] * full + ([rest] if rest else [])


def plan_evaluated_chunks(
    num_updates: int,
    updates_per_chunk: int | None,
    eval_every: int,
    checkpoint_every: int | None = None,
    start: int = 0,
    target_chunks: int = 20,
) -> list[int]:
    """Chunk lengths from ``start`` of a run that evaluates every ``eval_every`` updates: every
    multiple of it ends a chunk.

    Without an explicit size, chunks are a divisor of ``eval_every`` (and of ``checkpoint_every``)
    nearest ``num_updates / target_chunks`` by ratio, so one length (two when it does not
    divide ``num_updates``) serves the whole run. A resumed run keeps the uninterrupted run's
    chunk ends, after one chunk that reaches the first of them.
    """
    if updates_per_chunk is None:
        target = max(1.0, num_updates / target_chunks)
        common = math.gcd(eval_every, checkpoint_every or 0)
        updates_per_chunk = min(divisors(common), key=lambda d: abs(math.log(d / target)))
    ends = np.cumsum(plan_chunks(num_updates, updates_per_chunk))
    later = [int(end) for end in ends if end > start]
    lengths = [b - a for a, b in zip([start, *later[:-1]], later, strict=True)]
    return cut_at_multiples(lengths, start, eval_every)


def cut_at_multiples(lengths: list[int], start: int, every: int) -> list[int]:
    """``lengths`` (chunks from update ``start``) cut so that a chunk ends at every multiple of
    ``every``."""
    ends, end = set(), start
    for length in lengths:
        end += length
        ends.add(end)
    first = (start // every + 1) * every
    ends.update(range(first, end + 1, every))
    cuts = sorted(ends)
    return [b - a for a, b in zip([start, *cuts[:-1]], cuts, strict=True)]


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending, in ``O(sqrt(n))``."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


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


def checkpoint_due(
    policy: CheckpointPolicy, before: int, after: int, total: int, seconds_since_save: float
) -> bool:
    """Whether a chunk ending at ``after`` (from ``before``) gets a checkpoint."""
    if after >= total:
        return True
    every = policy.every_updates
    if every and after // every > before // every:
        return True
    return policy.every_seconds is not None and seconds_since_save >= policy.every_seconds


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
    if start is None:
        agents = init_agents(algo, [spec.seed + i for i in range(spec.num_seeds)], placement)
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
    compiled = {n: compile_chunk(algo, agents, n, stream, placement) for n in sorted(set(lengths))}
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
                history.mean_final_return(),
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
