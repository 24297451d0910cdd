"""The training program: agents, and the compiled chunk of updates that advances them.

An ``Agent`` is one independent training session: its algorithm state and key stream. A chunk is
``lax.scan`` over ``algo.update``, mapped over seeds (``over_seeds``) and compiled ahead of time
once per chunk length (``compile_chunk``). Update ``u`` of every seed draws its key as
``fold_in(seed_key, u)``, so results do not depend on how a run is cut into chunks: one chunk of
2N equals two chunks of N. Evaluations draw from a stream of their own (``evaluation_key``).
``purerl.core.loop`` runs these programs chunk after chunk.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from purerl.config import MAX_UPDATES
from purerl.core.algo import Algo
from purerl.core.parallel import DEVICE_AXIS, Placement, place
from purerl.core.report import emit
from purerl.core.types import Array, Key, Metrics

S = TypeVar("S")


class Agent(NamedTuple, Generic[S]):
    """One independent training session: the algorithm state and its key stream."""

    state: S
    key: Key
    """Update ``u`` uses ``fold_in(key, u)``."""
    seed: Array
    """int32 seed this agent was built from."""


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
    return committed(init_program(algo, placement)(init_inputs(algo, seeds, placement, hparams)))


def init_inputs(
    algo: Algo[S], seeds: Sequence[int], placement: Placement | None, hparams: Any = None
) -> tuple[Array, Any]:
    """What ``init_program`` takes: the seeds and each agent's traced hyperparameters."""
    seeds = jnp.asarray(seeds, jnp.int32)
    if hparams is None and algo.hparams is not None:
        hparams = jax.tree.map(lambda x: np.full(seeds.shape, x, np.float32), algo.hparams)
    if placement is not None and placement.mode == "data":
        seeds, hparams = jax.tree.map(
            lambda x: jnp.broadcast_to(x, (placement.num_devices, *x.shape)), (seeds, hparams)
        )
    return seeds, hparams


def committed(agents: Agent[S]) -> Agent[S]:
    """``agents`` committed to where they are (no copy), as restored checkpoints are: the chunk
    program then lowers to the same text, and a resumed run loads it from the compilation
    cache."""
    return jax.device_put(agents, jax.tree.map(lambda x: x.sharding, agents))


def agents_sharding(placement: Placement | None) -> jax.sharding.Sharding:
    """Where ``init_agents`` puts every leaf of the agents: the default device, or split over
    the placement's devices along the leading axis."""
    if placement is None:
        device = jax.config.jax_default_device or jax.devices()[0]
        if isinstance(device, str):
            device = jax.devices(device)[0]
        return jax.sharding.SingleDeviceSharding(device)
    return jax.sharding.NamedSharding(placement.mesh, jax.sharding.PartitionSpec(DEVICE_AXIS))


@contextlib.contextmanager
def straight_line_threefry() -> Iterator[None]:
    """While lowering an initialisation: JAX's Threefry hash as the straight-line code it
    emits on accelerators, instead of the five-iteration loop it emits for CPUs.

    The same integer operations, so the same bits. At XLA's default settings XLA:CPU compiles
    an initialisation (a dozen random draws for the networks' weights) in about half the time
    this way: PPO's 1.3 s -> 0.85 s, SAC's 1.7 s -> 0.85 s. Inside a chunk the loop compiles
    faster, so chunks keep it, and so does everything under lighter settings (``xla_defaults``).
    JAX has no public switch for this: where its internals differ, nothing changes.
    """
    try:
        from jax._src.interpreters import mlir
        from jax._src.random.threefry2x32 import threefry2x32_p

        cpu_rules = mlir._platform_specific_lowerings["cpu"]
        loop_rule = cpu_rules.pop(threefry2x32_p)
    except (ImportError, AttributeError, KeyError):
        yield
        return
    try:
        yield
    finally:
        cpu_rules[threefry2x32_p] = loop_rule


def xla_defaults() -> bool:
    """Whether XLA compiles with its default optimisation settings: ``XLA_FLAGS`` sets neither
    the backend's optimisation level nor XLA:CPU's fusion emitters (``purerl doctor --quick``
    and the test suite lower both; there the rolled Threefry loop compiles faster)."""
    flags = os.environ.get("XLA_FLAGS", "")
    return (
        "xla_backend_optimization_level" not in flags and "xla_cpu_use_fusion_emitters" not in flags
    )


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off meanwhile (back on after, if it was on).

    Tracing and lowering a chunk make hundreds of thousands of objects that live on in JAX's
    caches; each full collection while they accumulate walks all of them again: 0.1-0.2 s of
    a short run's compile. Their garbage is collected once the collector is back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_paused()
def build_program(
    algo: Algo[S],
    seeds: Sequence[int],
    lengths: Sequence[int],
    stream: StreamFn | None = None,
    placement: Placement | None = None,
) -> tuple[Agent[S], dict[int, Any]]:
    """Fresh agents for ``seeds`` and the compiled chunk of each length in ``lengths``,
    compiled together: the initialisation compiles on a second thread while the chunks are
    traced, lowered and compiled against its output's shapes (XLA compiles outside Python's
    lock). Results are those of ``init_agents`` and ``compile_chunk``, the same programs."""
    inputs = init_inputs(algo, seeds, placement)
    traced = init_program(algo, placement).trace(inputs)
    with straight_line_threefry() if xla_defaults() else contextlib.nullcontext():
        lowered = traced.lower()
    done: dict[str, Any] = {}

    def compile_init() -> None:
        try:
            done["init"] = lowered.compile()
        except BaseException as err:  # raised again on the main thread
            done["error"] = err

    # Started first, the init compile has the second core while the chunks trace and lower
    # (Python, one core); the other way round was 0.1-0.3 s slower for PPO, DQN and SAC.
    worker = threading.Thread(target=compile_init, name="purerl-init-compile", daemon=True)
    worker.start()
    try:
        sharding = agents_sharding(placement)
        shapes = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), traced.out_info
        )
        compiled = {n: compile_chunk(algo, shapes, n, stream, placement) for n in lengths}
    finally:
        worker.join()
    if "error" in done:
        raise done["error"]
    return committed(done["init"](inputs)), compiled


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
    return chunk_program(algo, num_updates, stream, placement).lower(agents).compile()


@functools.lru_cache(maxsize=32)
def chunk_program(
    algo: Algo[S], num_updates: int, stream: StreamFn | None, placement: Placement | None
) -> Any:
    """The jitted chunk of ``num_updates`` updates over seeds, built once per algorithm, length,
    stream and placement: another run of the same algorithm object in this process (other
    seeds, a resumed run) traces, lowers and compiles it no more (JAX keeps each of those per
    jitted function and input shapes), as ``init_program`` does for the agents."""
    chunk = over_seeds(make_run_chunk(algo, num_updates, stream), algo.lockstep)
    if placement is not None:
        chunk = place(placement, chunk)
    return jax.jit(chunk, donate_argnums=0)
