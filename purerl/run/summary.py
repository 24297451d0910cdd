"""What a run writes besides its checkpoints: the sinks its metrics go to while it trains
(``metrics.jsonl``, TensorBoard, W&B, the progress bar), and at its end the ``summary.json``
record, the learning curves and the line that says how it went.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from purerl.core import parallel
from purerl.core.loop import Snapshot, TrainResult
from purerl.core.program import collector_paused
from purerl.core.report import Sink
from purerl.core.stats import FINAL_WINDOW_EPISODES
from purerl.run import rundir
from purerl.run.setup import Setup
from purerl.run.sinks import ProgressSink, notify
from purerl.runtime import curves_disabled_by_env


def make_sinks(setup: Setup, run_dir: Path | None, start: Snapshot | None) -> list[Sink]:
    """The metrics file, TensorBoard and W&B when asked for (with a run directory), and the
    progress bar."""
    cfg, options = setup.cfg, setup.options
    if run_dir is None:
        return progress_sinks(setup, start)
    steps, frame_skip = cfg.env_steps_per_update, setup.env.spec.frame_skip
    sinks: list[Sink] = [rundir.MetricsWriter(run_dir, steps, frame_skip)]
    if options.tensorboard:
        from purerl.run.tensorboard import TensorBoardSink

        first = 0 if start is None else start.updates_done
        log_dir = rundir.writable_tensorboard_dir(run_dir)
        sinks.append(TensorBoardSink(log_dir, steps, frame_skip, first))
    if options.wandb_project:
        from purerl.run.wandb_sink import WandbSink

        record = rundir.ConfigRecord.new(setup.request.spec.name, cfg, options).to_json()
        sinks.append(
            WandbSink(options.wandb_project, run_dir.name, record, steps, frame_skip, str(run_dir))
        )
    return sinks + progress_sinks(setup, start)


def progress_sinks(setup: Setup, start: Snapshot | None) -> list[Sink]:
    """The progress bar, when the run options ask for one."""
    cfg = setup.cfg
    if not setup.options.progress:
        return []
    history = None if start is None else start.history
    return [
        ProgressSink(
            cfg.num_updates,
            cfg.env_steps_per_update,
            cfg.num_seeds,
            setup.env.spec.frame_skip,
            cfg.seed,
            history=history,
        )
    ]


def make_summary(setup: Setup, result: TrainResult, resumed_from: int) -> rundir.Summary:
    """The ``summary.json`` record of a run, over all of its processes."""
    cfg = setup.cfg
    final = result.final_returns
    finite = final[np.isfinite(final)]
    sessions = result.sessions
    train_time = sum(s["train_time_s"] for s in sessions)
    trained_steps = sum(s["env_steps"] for s in sessions)
    done = result.timing.updates_done
    steps_per_seed = done * cfg.env_steps_per_update
    frame_skip = setup.env.spec.frame_skip
    return rundir.Summary(
        algo=setup.request.spec.name,
        env=cfg.env,
        final_mean_return=float(finite.mean()) if finite.size else None,
        final_std_return=float(finite.std()) if finite.size else None,
        per_seed_final_return=[float(x) if np.isfinite(x) else None for x in final],
        final_return_window_episodes=FINAL_WINDOW_EPISODES,
        num_seeds=cfg.num_seeds,
        num_updates=done,
        env_steps_per_seed=steps_per_seed,
        total_env_steps=steps_per_seed * cfg.num_seeds,
        total_frames=steps_per_seed * cfg.num_seeds * frame_skip,
        resumed_from_update=resumed_from,
        wall_time_s=sum(s["wall_time_s"] for s in sessions),
        compile_time_s=sum(s["compile_time_s"] for s in sessions),
        train_time_s=train_time,
        checkpoint_time_s=sum(s["checkpoint_time_s"] for s in sessions),
        steps_per_second=trained_steps / max(train_time, 1e-9),
        sessions=sessions,
        interrupted=result.interrupted,
        eval_time_s=sum(s.get("eval_time_s", 0.0) for s in sessions),
        **last_evaluation(result.evaluations),
        device=parallel.memory_report(setup.placement),
    )


def last_evaluation(evaluations: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """``final_eval_return`` and ``final_eval_update`` of the run's last evaluation, if any."""
    if not evaluations or not len(evaluations.get("update", ())):
        return {}
    returns = np.asarray(evaluations["eval/return"], np.float64)[:, -1]
    if not np.isfinite(returns).any():
        return {"final_eval_update": int(evaluations["update"][-1])}
    return {
        "final_eval_return": float(np.nanmean(returns)),
        "final_eval_update": int(evaluations["update"][-1]),
    }


def finish(
    setup: Setup, run_dir: Path, summary: rundir.Summary, result: TrainResult, sinks: Sequence[Sink]
) -> None:
    """Writes the summary and learning curves (from the run's history in memory) and says
    where they went and how a stopped run goes on. The final line comes before the curves are
    drawn."""
    rundir.write_summary(run_dir, summary)
    notify(sinks, final_line(summary, run_dir))
    graphs = draw_curves(setup, run_dir, summary, result)
    if graphs:
        notify(sinks, "learning curves: " + ", ".join(str(path) for path in graphs))
    if result.interrupted:
        how = setup.request.resume_hint(run_dir)
        saved = (
            "checkpoint saved" if setup.options.checkpoints else "no checkpoint (--no-checkpoints)"
        )
        notify(
            sinks,
            f"stopped at update {summary.num_updates} of {setup.cfg.num_updates}; {saved}; "
            f"continue with: {how}",
        )


def draws_curves(setup: Setup) -> bool:
    """Whether the run ends by drawing its learning curves: ``--curves`` (the default), unless
    ``PURERL_CURVES=0``."""
    return setup.options.curves and not curves_disabled_by_env()


def draw_curves(
    setup: Setup, run_dir: Path, summary: rundir.Summary, result: TrainResult
) -> list[Path]:
    """The run's learning curves drawn from its history in memory (``--curves``): the paths
    written, none when turned off."""
    if not draws_curves(setup):
        return []
    from purerl.run.plots import Curves, draw_trial_graphs

    cfg = setup.cfg
    returns = result.history["episode/return"]
    steps = cfg.env_steps_per_update * setup.env.spec.frame_skip
    frames = np.arange(1, returns.shape[1] + 1, dtype=np.int64) * steps
    status = "interrupted" if summary.interrupted else "finished"
    # The evaluations of every process of the run, as metrics.jsonl holds them.
    evaluations = rundir.read_evaluations(run_dir, cfg.num_seeds)
    curves = Curves(
        setup.request.spec.name, cfg.env, status, cfg.seed, frames, returns, evaluations
    )
    with collector_paused():  # matplotlib's figures are cycles of many objects, soon gone
        return draw_trial_graphs(run_dir, curves, setup.options.plot_window)


def final_line(summary: rundir.Summary, run_dir: Path) -> str:
    mean, std = summary.final_mean_return, summary.final_std_return
    ret = "no finished episode" if mean is None else f"{mean:.1f} +- {std:.1f}"
    if summary.final_eval_return is not None:
        ret += f", evaluation {summary.final_eval_return:.1f} (update {summary.final_eval_update})"
    return (
        f"final mean return {ret} over {summary.num_seeds} seed(s) | "
        f"{summary.total_env_steps:,} steps in {summary.wall_time_s:.1f} s "
        f"(compile {summary.compile_time_s:.1f} s, "
        f"{summary.steps_per_second:,.0f} steps/s) | {run_dir}"
    )
