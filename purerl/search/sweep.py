"""Hyperparameter sweeps as one program: K configurations x S seeds, vmapped together.

The numeric hyperparameters that change no shape (the fields of each algorithm's
``hparams_cls``: learning rate, discount, clip, coefficients, exploration schedule, ...) are
*traced*: every agent carries them as float32 scalars in ``state.hparams`` and the update reads
them from there, so agents with different values share one compiled update and are vmapped
like seeds. Agent ``(k, s)`` (index ``k * S + s``) uses configuration ``k`` and seed
``cfg.seed + s``; it computes what a single run of configuration ``k`` with that seed computes.

Every other field (``num_envs``, ``rollout_len``, ``hidden_sizes``, ``anneal_lr``, ``loss``,
...) is *grouped*: it sets a shape, a loop length or a Python branch, so configurations are
partitioned by those fields and each group is one ``train`` call (one compile).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from purerl import algos
from purerl.algos import Algo, AlgoSpec
from purerl.config import ConfigError
from purerl.core import parallel
from purerl.core.loop import HISTORY_KEYS, Snapshot, TrainResult, train
from purerl.core.parallel import Placement
from purerl.core.program import Agent, init_agents
from purerl.core.report import ChunkReport, Sink
from purerl.core.stats import FINAL_WINDOW_EPISODES, recent_mean_return

NONFINITE_LOSS = "sweep/nonfinite_loss"
"""Per-update metric of a sweep: the agent's loss was NaN or infinite after a gradient step."""


def static_key(cfg: Any, traced: Sequence[str]) -> tuple:
    """The fields of ``cfg`` that must agree for configurations to share one program."""
    return tuple(
        (f.name, getattr(cfg, f.name)) for f in dataclasses.fields(cfg) if f.name not in traced
    )


def group_configs(configs: Sequence[Any], traced: Sequence[str]) -> list[list[int]]:
    """Partitions configurations by their grouped (non-traced) fields.

    Returns:
        Lists of indices into ``configs``, groups in order of first appearance and indices
        ascending within each group.
    """
    groups: dict[tuple, list[int]] = {}
    for index, cfg in enumerate(configs):
        groups.setdefault(static_key(cfg, traced), []).append(index)
    return list(groups.values())


def split_groups(groups: list[list[int]], max_configs: int | None) -> list[list[int]]:
    """Cuts each group into consecutive batches of at most ``max_configs`` configurations."""
    if max_configs is None:
        return [list(g) for g in groups]
    return [g[i : i + max_configs] for g in groups for i in range(0, len(g), max_configs)]


def batch_configs(
    configs: Sequence[Any], traced: Sequence[str], max_configs_per_batch: int | None = None
) -> list[list[int]]:
    """The batches ``sweep`` trains, one compiled program each, in the order it trains them.

    Returns:
        Lists of indices into ``configs``: each group of ``group_configs`` cut by
        ``split_groups`` into batches of at most ``max_configs_per_batch``.
    """
    return split_groups(group_configs(configs, traced), max_configs_per_batch)


def stack_hparams(hparams_cls: type, configs: Sequence[Any]) -> Any:
    """Hyperparameters of every agent of a batch, each field ``[K * S]`` float32.

    Agent ``k * S + s`` gets configuration ``k``'s values; ``S`` is the shared ``num_seeds``.
    """
    num_seeds = configs[0].num_seeds
    values = np.array([[getattr(c, f) for f in hparams_cls._fields] for c in configs], np.float32)
    per_agent = np.repeat(values, num_seeds, axis=0)
    return hparams_cls(*(jnp.asarray(per_agent[:, i]) for i in range(per_agent.shape[1])))


def sweep_agents(
    algo: Algo, spec: AlgoSpec, configs: Sequence[Any], placement: Placement | None = None
) -> Agent:
    """Fresh agents for a batch, stacked ``[K * S, ...]``, agent ``(k, s)`` at ``k * S + s``.

    ``algo`` is built from ``configs[0]``; the other configurations differ only in traced
    fields, which ``init_agents`` takes per agent: that gives what ``init`` of configuration
    ``k`` would, as nothing else in a fresh state depends on them (Adam's moments start at zero
    whatever the rate, and schedules are functions of the step count read at update time).
    """
    base = configs[0]
    seeds = [base.seed + s for _ in configs for s in range(base.num_seeds)]
    return init_agents(algo, seeds, placement, hparams=stack_hparams(spec.hparams_cls, configs))


def flag_nonfinite_losses(algo: Algo) -> Algo:
    """``algo`` whose metrics flag a non-finite loss instead of reporting ``loss/total``.

    ``train`` stops the whole run when a ``loss/total`` turns non-finite; in a sweep that would
    throw away every healthy configuration of the batch with the one whose learning rate
    diverged. The flag lets the sweep mark just that agent. Updates without a gradient step
    (DQN before ``learning_starts``) have an undefined loss and are not flagged.
    """

    def update(state: Any, key: Any) -> tuple[Any, dict]:
        state, metrics = algo.update(state, key)
        metrics = dict(metrics)
        loss = metrics.pop("loss/total")
        stepped = metrics.get("optim/gradient_steps", 1) > 0
        metrics[NONFINITE_LOSS] = ~jnp.isfinite(loss) & stepped
        return state, metrics

    return algo._replace(update=update)


class ChunkProgress(NamedTuple):
    """Where a batch stands after a chunk; per-agent arrays are ``[K * S]``."""

    updates_done: int
    recent_returns: np.ndarray
    """Mean return over at least the last 100 finished episodes (NaN: none finished yet)."""
    diverged: np.ndarray
    """bool: the agent's loss became non-finite at some update."""
    train_time_s: float
    """Since the first chunk started (compile excluded)."""
    wall_time_s: float


class AgentTracker:
    """A sink that keeps per-agent recent returns and divergence, optionally reporting them."""

    def __init__(self, num_agents: int, on_chunk: Callable[[ChunkProgress], None] | None = None):
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in HISTORY_KEYS}
        self.diverged = np.zeros(num_agents, bool)
        self.on_chunk = on_chunk

    def write(self, report: ChunkReport) -> None:
        for name, parts in self.parts.items():
            parts.append(report.metrics[name])
        self.diverged |= np.asarray(report.metrics[NONFINITE_LOSS]).any(axis=1)
        if self.on_chunk is not None:
            done = report.first_update + report.metrics[HISTORY_KEYS[0]].shape[1]
            returns = recent_mean_return(
                *(np.concatenate(self.parts[k], 1) for k in HISTORY_KEYS), FINAL_WINDOW_EPISODES
            )
            self.on_chunk(
                ChunkProgress(
                    done, returns, self.diverged.copy(), report.train_time_s, report.wall_time_s
                )
            )

    def close(self, summary: dict[str, Any]) -> None:
        pass


class ConfigResult(NamedTuple):
    """One configuration of a sweep, over its seeds."""

    config: Any
    returns: np.ndarray
    """``[S]`` final returns; NaN for a seed that finished no episode or diverged."""
    diverged: np.ndarray
    """``[S]`` bool: the seed's loss became non-finite."""
    steps_per_second: float
    """This configuration's share of its batch's steps/s (compile excluded)."""

    @property
    def mean(self) -> float:
        finite = self.returns[np.isfinite(self.returns)]
        return float(finite.mean()) if finite.size else float("nan")

    @property
    def std(self) -> float:
        finite = self.returns[np.isfinite(self.returns)]
        return float(finite.std()) if finite.size else float("nan")


class BatchResult(NamedTuple):
    """A trained batch: per-configuration results and the raw ``train`` result."""

    configs: list[ConfigResult]
    train: TrainResult
    """Agents stacked ``[K * S, ...]``, agent ``(k, s)`` at ``k * S + s``."""


def empty_history(num_agents: int) -> dict[str, np.ndarray]:
    return {name: np.zeros((num_agents, 0), np.float32) for name in HISTORY_KEYS}


def run_batch(
    spec: AlgoSpec,
    configs: Sequence[Any],
    updates_per_chunk: int | None = None,
    sinks: Sequence[Sink] = (),
    on_chunk: Callable[[ChunkProgress], None] | None = None,
    placement: Placement | None = None,
) -> BatchResult:
    """Trains configurations that differ only in traced fields as one vmapped program.

    Args:
        spec: the algorithm (``purerl.algos.get(name)``).
        configs: K configurations with equal grouped fields (``num_seeds`` included).
        updates_per_chunk: chunking of the run (between progress reports); nothing is written.
        sinks: more sinks, given ``[K * S, chunk]`` metrics after each chunk.
        on_chunk: called with the batch's ``ChunkProgress`` after each chunk.
        placement: the agents split over devices (``batch_placement``); default one device.

    Returns:
        Per-configuration results in the order of ``configs``, and ``train``'s result.

    Raises:
        ConfigError: the environment has side effects (EnvPool) and cannot be vmapped.
    """
    keys = {static_key(cfg, spec.traced) for cfg in configs}
    if len(keys) != 1:
        raise ValueError("configurations of one batch may differ only in traced fields")
    base = configs[0]
    num_agents = len(configs) * base.num_seeds
    env, algo = spec.make(base)
    if not env.pure:
        raise ConfigError(
            f"{base.env} steps outside JAX and cannot be vmapped over configurations; sweeps "
            "need a pure JAX environment"
        )
    algo = flag_nonfinite_losses(algo)
    agents = sweep_agents(algo, spec, configs, placement)
    start = Snapshot(agents, empty_history(num_agents), 0, {})
    tracker = AgentTracker(num_agents, on_chunk)
    result = train(
        algo,
        dataclasses.replace(base, num_seeds=num_agents),
        sinks=[tracker, *sinks],
        updates_per_chunk=updates_per_chunk,
        start=start,
        placement=placement,
    )
    returns = np.where(tracker.diverged, np.nan, result.final_returns)
    steps = result.timing.updates_done * base.env_steps_per_update * num_agents
    share = steps / max(result.timing.train_time_s, 1e-9) / len(configs)
    per_config = [
        ConfigResult(cfg, returns[k * base.num_seeds : (k + 1) * base.num_seeds], div, share)
        for k, (cfg, div) in enumerate(
            zip(configs, tracker.diverged.reshape(len(configs), -1), strict=True)
        )
    ]
    return BatchResult(per_config, result)


BeforeBatch = Callable[[int, list[int], Placement | None], Sequence[Sink]]
"""``(number, indices, placement) -> sinks``: called as a batch starts; the sinks it returns
get the batch's chunks and are closed when it ends."""
AfterBatch = Callable[[int, list[int], BatchResult], None]
"""``(number, indices, result)``: called as a batch ends."""


def sweep(
    algo_name: str,
    configs: Sequence[Any],
    updates_per_chunk: int | None = None,
    max_configs_per_batch: int | None = None,
    on_batch: AfterBatch | None = None,
    num_devices: int | None = None,
    before_batch: BeforeBatch | None = None,
) -> list[ConfigResult]:
    """Trains every configuration, one compiled program per batch of a group.

    Args:
        algo_name: a registered algorithm (``purerl.algos.names()``).
        configs: the configurations; seeds per configuration are each one's ``num_seeds``.
        updates_per_chunk: chunking (default: ``purerl.core.loop.train``'s).
        max_configs_per_batch: split groups into batches of at most this many (memory bound).
        on_batch: called after each batch with its number, its indices into ``configs`` (the
            batches of ``batch_configs``) and its result.
        num_devices: split each batch's agents over up to this many devices (``batch_placement``;
            on a CPU, CPU devices: one per core runs small programs side by side).
        before_batch: called before each batch with its number, indices and placement (None:
            one device); returns more sinks for that batch, such as a progress bar.

    Returns:
        One result per configuration, in the order of ``configs``.
    """
    spec = algos.get(algo_name)
    if num_devices is not None:
        parallel.select_devices("auto", num_devices)  # the devices exist, before any training
    results: list[ConfigResult | None] = [None] * len(configs)
    batches = batch_configs(configs, spec.traced, max_configs_per_batch)
    for number, indices in enumerate(batches):
        chosen = [configs[i] for i in indices]
        placement = batch_placement(num_devices, len(chosen) * chosen[0].num_seeds, chosen[0])
        sinks = before_batch(number, indices, placement) if before_batch is not None else ()
        try:
            batch = run_batch(spec, chosen, updates_per_chunk, sinks, placement=placement)
        finally:
            for sink in sinks:
                sink.close(None)
        for i, res in zip(indices, batch.configs, strict=True):
            results[i] = res
        if on_batch is not None:
            on_batch(number, indices, batch)
    return results


def batch_placement(num_devices: int | None, num_agents: int, cfg: Any) -> Placement | None:
    """A batch's ``num_agents`` agents split over the most devices, at most ``num_devices``, that
    divide them evenly; None (one device) when that is one."""
    if num_devices is None:
        return None
    count = parallel.even_split(num_agents, num_devices)
    if count == 1:
        return None
    devices = parallel.select_devices("auto", count)
    return parallel.make_placement(devices, "seeds", num_agents, cfg.num_envs)
