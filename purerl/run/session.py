"""The life of a training run: lock, create or restore, train, finish.

``run`` is what ``purerl train`` and ``purerl.train(..., run_dir=...)`` call. Everything that can
be checked is checked before anything is written (``purerl.run.setup.prepare``): the
configuration, the devices, the environment and the algorithm, optional packages, the run
directory and its lock, and the checkpoint a resumed run continues from. Errors the user can
cause raise ``ConfigError`` (or a subclass) with one line saying what to do; the command line
turns them into exit code 2. What a finished run writes besides its checkpoints comes from
``purerl.run.summary``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path

import jax

from purerl.algos import Algo
from purerl.config import USER_ERRNOS, ConfigError
from purerl.core import parallel
from purerl.core.loop import (
    CheckpointPolicy,
    History,
    NonFiniteLossError,
    Snapshot,
    Timing,
    TrainResult,
    train,
)
from purerl.core.program import init_agents
from purerl.core.report import Sink
from purerl.run import checkpoint, rundir
from purerl.run.capacity import disk_bytes, format_bytes, is_disk_full, out_of_memory_message
from purerl.run.control import EarlyStop
from purerl.run.prefetch import PrefetchSink
from purerl.run.setup import Setup, TrainRequest, cpu_split_hint, make_evaluation, prepare
from purerl.run.signals import StopOnSignal, Stopped
from purerl.run.sinks import ProgressSink, notify, warn
from purerl.run.summary import draws_curves, finish, make_sinks, make_summary


@dataclasses.dataclass(frozen=True)
class Outcome:
    run_dir: Path | None
    """None for a run in memory."""
    summary: rundir.Summary | None
    result: TrainResult | None
    """None when a resumed run was complete already."""
    algo: Algo
    interrupted_by: int | None = None
    """The signal that stopped the run early (after saving), if one did."""


def run(
    request: TrainRequest, stop: StopOnSignal | None = None, sinks: Sequence[Sink] = ()
) -> Outcome:
    """Carries out a run: builds everything first (bad input fails before anything is
    written), then creates or locks the run directory, trains and writes the summary.

    ``purerl train`` and ``purerl.train`` (with or without ``run_dir``) both come here. ``sinks``
    are the caller's: they get the loop's reports and the session's notices (the command line's
    ``ConsoleSink`` prints them). A resumed run is locked before the (slow) set-up, so a run
    another process is training is refused at once; a distributed one only after joining,
    which must come first.
    """
    lock = None
    if request.resume is not None and not request.options.distributed:
        lock = lock_existing(Path(request.resume))
    created: list[Path] | None = None
    """The directories a new run created, removed with what it wrote if it fails early."""
    try:
        setup = prepare(request)
        notify(
            sinks, f"devices: {setup.placement.describe() if setup.placement else setup.devices[0]}"
        )
        if hint := cpu_split_hint(setup):
            notify(sinks, hint)
        if stop is not None and stop.signum is not None:
            raise Stopped(stop.signum)
        main = parallel.is_main_process()
        spec, cfg = request.spec, request.cfg
        with jax.default_device(None if setup.placement else setup.devices[0]):
            run_dir = None
            if request.in_memory:
                pass
            elif request.resume is None:
                run_dir = Path(
                    request.options.run_dir or rundir.default_run_dir(spec.name, cfg.env)
                )
                if main:
                    lock, created = open_new(setup, run_dir)
            else:
                run_dir = Path(request.resume)
                if lock is None and main:
                    lock = lock_existing(run_dir)
            start = None if request.resume is None else restore(setup, run_dir, main, sinks)
            return train_and_finish(setup, run_dir, start, stop, sinks)
    except BaseException as err:
        if created is not None and ended_before_keeping_anything(run_dir, err):
            if lock is not None:
                lock.release()
                lock = None
            rundir.remove_new_run(run_dir, created)
        raise
    finally:
        if lock is not None:
            lock.release()


def later_imports(setup: Setup, run_dir: Path | None, first_save: bool, main: bool) -> list[str]:
    """What a run imports only once training is under way: orbax for its first checkpoint,
    matplotlib for its learning curves (``purerl.run.prefetch`` imports them once training
    has started)."""
    modules = ["orbax.checkpoint"] if first_save else []
    if run_dir is not None and main and draws_curves(setup):
        modules.append("purerl.run.plots")
    return modules


def ended_before_keeping_anything(run_dir: Path, err: BaseException) -> bool:
    """Whether a new run that failed with ``err`` has nothing to keep: no complete checkpoint
    to resume from, and no metrics row either (a run that diverged keeps the rows that show
    how), or a full disk, where the space it holds is better given back."""
    if rundir.complete_checkpoints(run_dir):
        return False
    return is_disk_full(err) or not rundir.has_metrics_rows(run_dir)


def lock_existing(run_dir: Path) -> rundir.RunLock:
    """Locks the run directory a resume continues (raises if it is missing or locked, or if a
    path it would write is a link: ``rundir.require_safe_paths``, before anything is written)."""
    checkpoint.require_run_dir(run_dir)
    rundir.require_safe_paths(run_dir)
    return rundir.RunLock(run_dir).acquire()


def open_new(setup: Setup, run_dir: Path) -> tuple[rundir.RunLock, list[Path]]:
    """Creates and locks a new run directory and writes its ``config.json``; returns the lock
    and the directories it created (``rundir.missing_dirs``). Once locked, what the directory
    holds is this run's: a failure removes it again (``rundir.remove_new_run``)."""
    created = rundir.missing_dirs(run_dir)
    rundir.create_run_dir(run_dir)
    lock = None
    try:
        lock = rundir.RunLock(run_dir).acquire()
        record = rundir.ConfigRecord.new(setup.request.spec.name, setup.cfg, setup.options)
        rundir.write_config(run_dir, record)
    except rundir.RunLockedError:
        raise  # another process got there first: the directory is its
    except BaseException as err:
        if lock is not None:
            lock.release()
        rundir.remove_new_run(run_dir, created)
        if isinstance(err, OSError):
            raise ConfigError(f"cannot write {run_dir / 'config.json'}: {err.strerror}") from err
        raise
    return lock, created


def restore(setup: Setup, run_dir: Path, main: bool, sinks: Sequence[Sink] = ()) -> Snapshot:
    """The checkpoint a resumed run continues from: ``--resume-from``, else the newest one
    that can be read. Unreadable newer ones are set aside (``rundir.set_aside_checkpoint``,
    never deleted) and named in ``resumes.jsonl``."""
    cfg, request = setup.cfg, setup.request
    steps = checkpoint.available_steps(run_dir)
    if not steps:
        raise checkpoint.CheckpointError(
            f"{run_dir} has no complete checkpoint; a run saves one every --checkpoint-minutes, "
            "at its end and when stopped with Ctrl-C"
        )
    if request.resume_from is not None:
        if request.resume_from not in steps:
            raise checkpoint.CheckpointError(
                f"{run_dir} has no checkpoint {request.resume_from}; it has {steps}"
            )
        steps = [request.resume_from]
    newer = [step for step in checkpoint.available_steps(run_dir) if step > steps[-1]]
    fresh = init_agents(setup.algo, [cfg.seed + i for i in range(cfg.num_seeds)], setup.placement)
    start, skipped = checkpoint.restore_newest_readable(run_dir, steps, fresh, setup.identity)
    for err in skipped:
        warn(sinks, f"skipped checkpoint {err.step}: {err.reason}")
    if request.budget_from is not None and cfg.num_updates < start.updates_done:
        raise ConfigError(
            f"--total-timesteps {cfg.total_timesteps:,} is {cfg.num_updates} updates, fewer "
            f"than the {start.updates_done} its checkpoint has done; give more"
        )
    if main:
        # First, as it refuses a metrics.jsonl it cannot read before anything is moved.
        carried = list(start.record.get("metrics_rows", []))
        repair = rundir.restore_metrics(run_dir, start.updates_done, carried)
        moved = [rundir.set_aside_checkpoint(run_dir, err.step) for err in skipped]
        # The run continues from an older checkpoint: the newer ones belong to the history it
        # replaces, and would stand in the way of the checkpoints it saves.
        superseded = [
            rundir.set_aside_checkpoint(run_dir, step, rundir.SUPERSEDED_DIR) for step in newer
        ]
        if superseded:
            warn(
                sinks,
                f"resuming from checkpoint {start.updates_done}: the newer checkpoints "
                f"{', '.join(map(str, newer))} moved to {run_dir / rundir.SUPERSEDED_DIR}",
            )
        if repair.restored:
            warn(
                sinks,
                f"restored the metrics rows of updates {spans(repair.restored)} from "
                f"checkpoint {start.updates_done}",
            )
        if repair.missing:
            warn(
                sinks,
                f"metrics.jsonl lacks the rows of updates {spans(repair.missing)}, which "
                "no checkpoint carries",
            )
        rundir.record_resume(
            run_dir,
            {
                "from_update": start.updates_done,
                "skipped_checkpoints": [
                    {"update": e.step, "reason": e.reason, "moved_to": str(m)}
                    for e, m in zip(skipped, moved, strict=True)
                ],
                "superseded_checkpoints": [
                    {"update": step, "moved_to": str(m)}
                    for step, m in zip(newer, superseded, strict=True)
                ],
                "changed_options": {k: list(v) for k, v in request.option_changes.items()},
                "total_timesteps": [request.budget_from, cfg.total_timesteps]
                if request.budget_from is not None
                else None,
                "restored_metrics_rows": repair.restored,
                "missing_metrics_rows": repair.missing,
            },
        )
        if request.budget_from is not None:
            record = rundir.read_config(run_dir)
            rundir.write_config(
                run_dir, dataclasses.replace(record, config=rundir.fields_json(cfg))
            )
            warn(
                sinks,
                f"budget {request.budget_from:,} -> {cfg.total_timesteps:,} steps per seed: "
                "schedules that follow the budget (an annealed learning rate, epsilon) follow "
                "the new one from here",
            )
    return start


def train_and_finish(
    setup: Setup,
    run_dir: Path | None,
    start: Snapshot | None,
    stop: StopOnSignal | None,
    extra_sinks: Sequence[Sink] = (),
) -> Outcome:
    cfg, options, spec = setup.cfg, setup.options, setup.request.spec
    if start is not None and start.updates_done >= cfg.num_updates:
        return complete(setup, run_dir, start, extra_sinks)
    verb = (
        f"{cfg.num_updates * cfg.env_steps_per_update:,} steps per seed ({cfg.num_updates} updates)"
        if start is None
        else f"resuming at update {start.updates_done}"
    )
    if start is not None and not setup.env.pure:
        verb += " (the environments' own state is not saved: they start fresh episodes)"
    where = "" if run_dir is None else f" -> {run_dir}"
    notify(extra_sinks, f"{spec.name} on {cfg.env}: {cfg.num_seeds} seed(s), {verb}{where}")
    main = parallel.is_main_process()
    sinks = [*make_sinks(setup, run_dir, start), *extra_sinks] if main else []
    early = early_stop(setup, start)
    if early is not None:
        sinks.append(early)
    saver = None
    if options.checkpoints and run_dir is not None:
        saver = checkpoint.Checkpointer(
            run_dir,
            setup.identity,
            options.keep_checkpoints,
            options.keep_best,
            setup.transient,
            metrics=next((s.sync for s in sinks if isinstance(s, rundir.MetricsWriter)), None),
        )
        if start is not None:
            saver.last_saved = start.updates_done  # the checkpoint this run continues from
    policy = (
        CheckpointPolicy(saver, options.checkpoint_every, 60.0 * options.checkpoint_minutes)
        if saver
        else None
    )
    progress = next((s for s in sinks if isinstance(s, ProgressSink)), None)
    stream = progress.on_stream if (progress is not None and options.stream) else None
    loop_start = start
    if start is None and options.init_from:
        from purerl.run.init_from import initial_snapshot

        loop_start = initial_snapshot(setup, options.init_from, extra_sinks)
    sinks.append(
        PrefetchSink(later_imports(setup, run_dir, saver is not None and start is None, main))
    )
    if stop is not None:
        stop.training = True
    try:
        result = train(
            setup.algo,
            cfg,
            sinks=sinks,
            updates_per_chunk=options.updates_per_chunk,
            stream=stream,
            checkpoints=policy,
            start=loop_start,
            should_stop=lambda: bool(
                (stop is not None and stop.requested()) or (early is not None and early.requested())
            ),
            placement=setup.placement,
            evaluation=make_evaluation(setup, extra_sinks),
        )
        if saver is not None:
            saver.close()
            saver = None
    except Exception as err:
        if saver is not None:
            # Pending saves finish (or fail) first, so the message names what is on disk.
            close_quietly(saver)
            saver = None
        if isinstance(err, NonFiniteLossError) and start is not None and run_dir is not None:
            raise diverged_after_resume(err, run_dir, start.updates_done) from err
        if is_disk_full(err) or (isinstance(err, OSError) and err.errno in USER_ERRNOS):
            raise disk_error(err, run_dir, setup) from err
        if isinstance(err, jax.errors.JaxRuntimeError) and (
            "RESOURCE_EXHAUSTED" in str(err) or "out of memory" in str(err).lower()
        ):
            raise ConfigError(
                out_of_memory_message(cfg, setup.placement, setup.state_bytes)
            ) from err
        raise
    finally:
        if saver is not None:
            close_quietly(saver)
    summary = make_summary(setup, result, 0 if start is None else start.updates_done)
    if early is not None and early.reason is not None and main:
        notify(extra_sinks, f"stopped early: {early.reason}; --resume continues it")
    if main:
        for sink in sinks:
            sink.close(summary.to_json())
        if run_dir is not None:
            finish(setup, run_dir, summary, result, extra_sinks)
    signum = stop.signum if (stop is not None and result.interrupted) else None
    return Outcome(run_dir, summary, result, setup.algo, signum)


def early_stop(setup: Setup, start: Snapshot | None) -> EarlyStop | None:
    """The sink of the run's callbacks and stopping rules, if it has any."""
    options, cfg = setup.options, setup.cfg
    rules = options.stop_at_return is not None or options.stop_on_plateau is not None
    if not rules and not setup.request.callbacks:
        return None
    early = EarlyStop(
        setup.request.callbacks,
        cfg.num_updates,
        cfg.env_steps_per_update,
        options.stop_at_return,
        options.stop_on_plateau,
        None if start is None else start.history,
    )
    early.eval_every = options.eval_every
    return early


def diverged_after_resume(
    err: NonFiniteLossError, run_dir: Path, resumed_from: int
) -> NonFiniteLossError:
    """The loop's message, and the checkpoints a resume could start from instead: a checkpoint
    damaged in a way its checksums cannot tell (or saved without them) diverges like this too."""
    intact = checkpoint.intact_steps(run_dir)
    return NonFiniteLossError(
        f"{err}; this run resumed from checkpoint {resumed_from}: if that checkpoint is at fault, "
        f"resume from another with --resume-from (intact checkpoints: "
        f"{spans(intact) if intact else 'none'})"
    )


def spans(updates: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3, 7``."""
    parts: list[str] = []
    start = previous = updates[0]
    for u in [*updates[1:], None]:
        if u is not None and u == previous + 1:
            previous = u
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if u is not None:
            start = previous = u
    return ", ".join(parts)


def complete(setup: Setup, run_dir: Path, start: Snapshot, sinks: Sequence[Sink]) -> Outcome:
    """A resumed run whose final checkpoint is saved: nothing to train. A process stopped
    between that checkpoint and its last outputs left ``summary.json`` or the learning curves
    unwritten; they are written now, from the checkpoint (its history and the sessions it
    records), as that process would have."""
    summary = rundir.read_summary(run_dir)
    graphs = rundir.graph_paths(run_dir) if draws_curves(setup) else ()
    graphs_there = all(path.is_file() for path in graphs)
    if summary is not None and summary.num_updates == start.updates_done and graphs_there:
        notify(
            sinks, f"{run_dir} is already complete ({start.updates_done} updates); nothing to do"
        )
        return Outcome(run_dir, summary, None, setup.algo)
    history = History(start.history)
    sessions = list(start.record.get("sessions", []))
    timing = Timing(first_update=start.updates_done, updates_done=start.updates_done)
    result = TrainResult(
        start.agents, history.arrays(), history.final_returns(), timing, sessions, False
    )
    resumed_from = int(sessions[-1]["first_update"]) if sessions else 0
    summary = make_summary(setup, result, resumed_from)
    if parallel.is_main_process():
        notify(sinks, f"{run_dir} trained all {start.updates_done} updates; writing its outputs")
        finish(setup, run_dir, summary, result, sinks)
    return Outcome(run_dir, summary, result, setup.algo)


def close_quietly(saver: checkpoint.Checkpointer) -> None:
    """Closes a checkpointer on an error path, where the first error is the one to report."""
    with contextlib.suppress(Exception):  # the error being raised says what went wrong
        saver.close()


def disk_error(err: BaseException, run_dir: Path, setup: Setup) -> ConfigError:
    """One line for a write that failed: where, why, and how to go on.

    The checkpoint named as kept is the newest one complete on disk: a save that failed part
    way leaves only orbax's temporary directory, which a resume ignores.
    """
    steps = checkpoint.available_steps(run_dir) if setup.options.checkpoints else []
    after = (
        f"the last complete checkpoint (update {steps[-1]}) is kept"
        if steps
        else "no checkpoint was completed"
    )
    how = (
        f"continue with: {setup.request.resume_hint(run_dir)}"
        if steps
        else f"start the run again (with nothing to resume from, {run_dir} is removed)"
    )
    if is_disk_full(err):
        free = shutil.disk_usage(run_dir).free
        return ConfigError(
            f"no space left on the device of {run_dir} ({format_bytes(free)} free, a checkpoint "
            f"needs about {format_bytes(checkpoint_bytes(setup, run_dir, steps))}); {after}: "
            f"free some space and {how}"
        )
    reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
    return ConfigError(f"cannot write to {run_dir}: {reason}; {after}")


def checkpoint_bytes(setup: Setup, run_dir: Path, steps: list[int]) -> float:
    """The space the newest complete checkpoint takes on disk (allocated blocks, which many
    small files round up), else the state's size in memory."""
    if steps:
        return disk_bytes(rundir.checkpoint_path(run_dir, steps[-1]))
    saved = {k: v for k, v in setup.state_bytes.items() if k not in setup.transient}
    return sum(saved.values()) * setup.cfg.num_seeds
