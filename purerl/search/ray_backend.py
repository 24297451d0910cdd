"""Ray Tune backend: each trial trains one batch of configurations as one vmapped program.

A batch is a group of configurations that share their grouped fields, or a slice of one
(``--configs-per-trial``). Trials run wherever Ray places them, each on ``cpus_per_trial`` CPUs
and ``gpus_per_trial`` GPUs (fractions pack several trials on one GPU), on a local Ray instance
or the cluster at ``address`` (``ray start --head``). Every chunk of updates a trial reports its
agents' recent returns through ``ray.tune.report``; with ASHA (Li et al. 2020) Tune stops the
trials whose mean recent return lags at a rung, and a stopped trial's last report is its result.

Ray is imported only here and only when this backend runs (``pip install 'purerl[search]'``).
Results come back through Tune's result channel, so a multi-node cluster needs no shared
storage; Tune's own files go to ``<search_dir>/ray``.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from purerl.extras import import_extra
from purerl.options import hint
from purerl.search.plan import SearchPlan
from purerl.search.results import DONE, Row, SearchProgress
from purerl.search.sweep import ConfigResult
from purerl.search.trial import train_trial

REQUIREMENT = "'purerl[search]'"
ASHA_REDUCTION = 3
"""ASHA keeps the top third at each rung."""
ASHA_FIRST_RUNG = 9
"""The first rung is at 1/9 of the budget, so with reduction 3 the rungs are 1/9 and 1/3."""
GPU_MEMORY_SHARE = 0.9
"""Of a trial's GPU fraction, what JAX may allocate (the rest is headroom for the runtime)."""


@dataclasses.dataclass(frozen=True)
class RayOptions:
    """Where and how trials run."""

    address: str | None = None
    """Ray cluster to connect to (``ray start --head`` prints it); None starts a local one."""
    cpus_per_trial: float = 1.0
    gpus_per_trial: float = 0.0
    asha: bool = False
    """Stop lagging trials early (ASHA on the mean recent return of the trial's agents)."""
    updates_per_chunk: Annotated[int | None, hint("about 20 reports per trial", "INT")] = None
    """Updates between reports."""


def trial_env(options: RayOptions) -> dict[str, str]:
    """Environment a trial sets before it starts JAX: the driver's JAX/XLA settings (a remote
    node does not inherit them) and, for a GPU fraction, a matching cap on JAX's GPU memory."""
    env = {k: v for k, v in os.environ.items() if k.startswith(("JAX_", "XLA_"))}
    if 0 < options.gpus_per_trial < 1:
        # JAX preallocates 75% of the GPU by default; packed trials would starve each other.
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        share = GPU_MEMORY_SHARE * options.gpus_per_trial
        env.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", f"{share:.3f}")
    return env


def batch_rows(plan: SearchPlan, batch: int, metrics: dict | None, error: Any) -> list[Row]:
    """Rows of one trial from its last report (ASHA-stopped trials included)."""
    indices = plan.batches[batch]
    num_seeds = plan.configs[indices[0]].num_seeds
    failed = None
    if error is not None:
        # Ray's errors carry the trial's traceback; a table cell gets its first line.
        first_line = (str(error).strip().splitlines() or [""])[0][:120]
        failed = f"error: {type(error).__name__}: {first_line}"
    if not metrics or "returns" not in metrics:
        num_agents = len(indices) * num_seeds
        failed = failed or "error: the trial reported nothing"
        metrics = {"returns": [None] * num_agents, "diverged": [False] * num_agents}
        metrics |= {"updates": 0, "env_steps": 0, "steps_per_second": 0.0}
    returns = np.asarray([np.nan if r is None else r for r in metrics["returns"]], np.float64)
    diverged = np.asarray(metrics["diverged"], bool)
    updates = int(metrics["updates"])
    share = metrics["steps_per_second"] / len(indices)
    rows = []
    for k, i in enumerate(indices):
        seeds = slice(k * num_seeds, (k + 1) * num_seeds)
        result = ConfigResult(plan.configs[i], returns[seeds], diverged[seeds], share)
        status = DONE
        if updates < plan.configs[i].num_updates:
            status = f"stopped early at {metrics['env_steps']:,} steps"
        rows.append(Row(i, batch, plan.assignments[i], result, updates, failed or status))
    return rows


def run_ray(
    plan: SearchPlan, options: RayOptions, search_dir: Path, progress: SearchProgress
) -> list[Row]:
    """Runs every batch of ``plan`` as a Ray Tune trial; returns one row per configuration."""
    ray = import_extra("ray", REQUIREMENT, "--backend ray")
    tune = import_extra("ray.tune", REQUIREMENT, "--backend ray")
    started = not ray.is_initialized()
    if started:
        with warnings.catch_warnings():
            # JAX warns on any fork once its runtime has threads; Ray forks only to exec its
            # own processes at once, which is safe.
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
            ray.init(address=options.address, include_dashboard=False, log_to_driver=False)
    try:
        callback = progress_callback(tune, plan, progress)
        grid = make_tuner(tune, plan, options, search_dir, [callback]).fit()
    finally:
        if started:
            ray.shutdown()
    rows = []
    for result in grid:
        rows += batch_rows(plan, result.config["batch"], result.metrics, result.error)
    return sorted(rows, key=lambda r: r.index)


def make_tuner(
    tune: Any, plan: SearchPlan, options: RayOptions, search_dir: Path, callbacks: list
) -> Any:
    """One trial per batch, with the requested resources and (optionally) ASHA."""
    trainable = tune.with_parameters(
        train_trial,
        algo_name=plan.algo,
        batches=[[dataclasses.asdict(plan.configs[i]) for i in b] for b in plan.batches],
        env_vars=trial_env(options),
        updates_per_chunk=options.updates_per_chunk,
    )
    resources = {"cpu": options.cpus_per_trial, "gpu": options.gpus_per_trial}
    scheduler = make_scheduler(plan) if options.asha else None
    return tune.Tuner(
        tune.with_resources(trainable, resources),
        param_space={"batch": tune.grid_search(list(range(len(plan.batches))))},
        tune_config=tune.TuneConfig(metric="return", mode="max", scheduler=scheduler),
        run_config=tune.RunConfig(
            name="tune",
            storage_path=str(Path(search_dir).resolve() / "ray"),
            verbose=0,
            callbacks=callbacks,
        ),
    )


def make_scheduler(plan: SearchPlan) -> Any:
    """ASHA over environment steps per agent: a time comparable across groups whose updates
    differ in size. Rungs at 1/9 and 1/3 of the budget keep the top third each."""
    from ray.tune.schedulers import ASHAScheduler

    budget = max(cfg.total_timesteps for cfg in plan.configs)
    return ASHAScheduler(
        time_attr="env_steps",
        max_t=budget,
        grace_period=max(1, budget // ASHA_FIRST_RUNG),
        reduction_factor=ASHA_REDUCTION,
    )


def progress_callback(tune: Any, plan: SearchPlan, progress: SearchProgress) -> Any:
    """A Tune callback that prints a progress line as each trial ends."""

    class Progress(tune.Callback):
        def on_trial_complete(self, iteration, trials, trial, **info):
            batch = trial.config["batch"]
            progress.finished(batch, batch_rows(plan, batch, trial.last_result, None))

        def on_trial_error(self, iteration, trials, trial, **info):
            batch = trial.config["batch"]
            error = RuntimeError("the trial failed; see its error.txt under ray/")
            progress.finished(batch, batch_rows(plan, batch, trial.last_result, error))

    return Progress()
