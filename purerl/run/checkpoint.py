"""Checkpoints of whole runs with orbax: the only module that imports orbax.

A checkpoint is ``<run_dir>/checkpoints/<updates_done>/`` and holds every seed's agent (algorithm
state, key stream, seed), the per-update episode statistics the summary is computed from, and a
JSON record naming the algorithm, its configuration and the format version. ``purerl.run.rundir``
owns the run directory's format, these paths and the record (``CheckpointRecord``) included; this
module reads and writes through orbax what it lays out, and opens no file itself. Orbax writes
each checkpoint into a temporary directory and renames it when complete, so a killed process
leaves at most an unfinished temporary directory, never a checkpoint that looks complete.

Each checkpoint carries the CRC-32 of every file orbax wrote for it (``rundir.seal_checkpoint``),
computed in orbax's background thread once the files are written and before the rename, so the
training loop does not wait for it and a complete checkpoint always has them. A restore checks
the files against them first: a checkpoint damaged on disk, even by one flipped bit that would
still decode, is unreadable like a truncated one. Checkpoints saved before purerl recorded
checksums restore unchecked.

State fields listed as *transient* are not saved; a restore takes them from a freshly
initialised agent instead. That is how a live EnvPool simulator (``env_state``, ``obs``: reset on
resume) or a large replay buffer (``buffer``) is left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import logging
import math
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from purerl.core.loop import HISTORY_KEYS, Snapshot
from purerl.run.capacity import disk_bytes
from purerl.run.rundir import (
    CHECKSUM_ALGORITHM,
    CheckpointRecord,
    DamagedFileError,
    RunIdentity,
    checkpoint_path,
    checkpoints_dir,
    complete_checkpoints,
    damaged_files,
    json_ready,
    read_checksums,
    saving_checkpoint_path,
    seal_checkpoint,
    writable_checkpoints_dir,
)

FORMAT_VERSION = 2
"""The checkpoint format this purerl writes and reads. Version 2: continuous policies act in
units of their action range (version 1's parameters would act with other actions)."""


class CheckpointError(Exception):
    """A checkpoint that cannot be used; the message says which and what to do."""


class UnreadableCheckpointError(CheckpointError):
    """A checkpoint whose files cannot be read (truncated, corrupted, not a checkpoint)."""

    def __init__(self, step: int, message: str, reason: str):
        super().__init__(message)
        self.step = step
        self.reason = reason


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _keys_to_data(tree: Any) -> Any:
    """Typed PRNG keys as their raw uint32 data, which every array format can store."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def _data_to_keys(tree: Any, like: Any) -> Any:
    """Inverse of ``_keys_to_data``, taking key implementations from ``like``."""

    def convert(x, ref):
        return jax.random.wrap_key_data(x, impl=jax.random.key_impl(ref)) if _is_key(ref) else x

    return jax.tree.map(convert, tree, like)


def _strip(agents: Any, transient: Sequence[str]) -> Any:
    return agents._replace(state=agents.state._replace(**{name: () for name in transient}))


def _abstract(tree: Any) -> Any:
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding), tree)


class _FinishingLoop(asyncio.SelectorEventLoop):
    """An event loop that lets its pending tasks end before it closes.

    Orbax runs a restore's array reads as tasks of a fresh loop and closes the loop as soon as
    one read fails; the reads still in flight in TensorStore's threads then hand their results
    to a closed loop, and each prints a ``RuntimeError: Event loop is closed`` traceback (the
    abandoned tasks, when collected, one more each). Ending the tasks first (each read finishes
    or fails on its own, bounded by ``FINISH_S``), and dropping what still arrives after the
    close (a result nobody will read), leaves nothing to report but the error orbax raises.
    """

    FINISH_S = 60.0

    def call_soon_threadsafe(self, callback: Any, *args: Any, context: Any = None) -> Any:
        if self.is_closed():
            return None
        return super().call_soon_threadsafe(callback, *args, context=context)

    def close(self) -> None:
        if not self.is_closed() and not self.is_running():
            pending = [task for task in asyncio.all_tasks(self) if not task.done()]
            if pending:
                self.run_until_complete(asyncio.wait(pending, timeout=self.FINISH_S))
        super().close()


class _FinishingPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return _FinishingLoop()


@contextlib.contextmanager
def _orbax_quietly() -> Iterator[None]:
    """Around orbax calls: event loops that end their reads before closing
    (``_FinishingLoop``), and orbax's absl log lines held back (routine warnings such as a
    read-only manager's, and copies of the errors it raises, which the caller reports)."""
    absl = logging.getLogger("absl")
    level, policy = absl.level, asyncio.get_event_loop_policy()
    absl.setLevel(logging.CRITICAL)
    asyncio.set_event_loop_policy(_FinishingPolicy())
    try:
        yield
    finally:
        asyncio.set_event_loop_policy(policy)
        absl.setLevel(level)


def _manager(
    directory: Path,
    keep_last: int = 1,
    keep_best: int = 0,
    read_only: bool = False,
    on_written: Callable[[], None] | None = None,
):
    """An orbax manager of ``directory``; ``on_written`` is called in its background thread once
    a checkpoint's files are written, before the checkpoint is renamed complete."""
    import orbax.checkpoint as ocp

    policies = ocp.checkpoint_managers
    preserve = [policies.LatestN(max(keep_last, 1))]
    if keep_best > 0:
        preserve.append(
            policies.BestN(
                get_metric_fn=lambda m: m["mean_return"],
                n=keep_best,
                keep_checkpoints_without_metrics=False,
            )
        )
    options = ocp.CheckpointManagerOptions(
        preservation_policy=policies.AnyPreservationPolicy(preserve),
        enable_async_checkpointing=not read_only,
        async_options=ocp.AsyncOptions(post_finalization_callback=on_written),
        create=not read_only,
        read_only=read_only,
    )
    return ocp.CheckpointManager(directory, options=options)


class Checkpointer:
    """Saves checkpoints of a run asynchronously, keeping the latest and the best ones.

    Args:
        run_dir: the run directory; checkpoints go to its ``checkpoints/``.
        identity: the run's identity, stored with each checkpoint and checked on restore.
        keep_last: how many of the most recent checkpoints to keep.
        keep_best: how many of the best (by mean recent return over seeds) to keep as well.
        transient: state fields left out (see the module docstring).
        metrics: called before each save: makes the run's metrics rows durable and returns the
            latest chunk's, which the checkpoint carries (``rundir.MetricsWriter.sync``), so a
            resume can restore rows the file lost.
    """

    def __init__(
        self,
        run_dir: Path,
        identity: RunIdentity,
        keep_last: int = 3,
        keep_best: int = 1,
        transient: Sequence[str] = (),
        metrics: Callable[[], list[dict[str, Any]]] | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.directory = writable_checkpoints_dir(self.run_dir)  # no link to write through
        self.identity = identity
        self.transient = tuple(transient)
        self.metrics = metrics
        self.saving: int | None = None
        """The checkpoint orbax is writing in the background (``seal`` reads it; ``save`` sets it
        only after ``require_space`` waited for the one before)."""
        # Saves run in orbax's background threads, each on an event loop of its own: a save
        # that fails part way (a full disk) closes its loop with writes still in flight, which
        # then report to the closed loop, each with a traceback, unless the loops are
        # ``_FinishingLoop``s. So the manager lives inside ``_orbax_quietly`` until ``close``.
        self.quiet = contextlib.ExitStack()
        self.keep = (keep_last, keep_best)
        self._manager: Any = None
        self.last_saved: int | None = None
        """Updates done at the run's latest checkpoint: the last this process saved, or the
        one a resumed run continues from."""

    @property
    def manager(self) -> Any:
        """The orbax manager, made at the first save: a new run imports orbax (about a quarter
        of a second) while its programs compile (``purerl.run.prefetch``), not before."""
        if self._manager is None:
            self.quiet.enter_context(_orbax_quietly())
            try:
                self._manager = _manager(self.directory, *self.keep, on_written=self.seal)
            except BaseException:
                self.quiet.close()
                raise
        return self._manager

    def save(
        self,
        updates_done: int,
        agents: Any,
        history: dict[str, np.ndarray],
        mean_return: float | None,
        sessions: Sequence[dict[str, Any]] = (),
    ) -> None:
        """Starts writing checkpoint ``updates_done``; returns once the arrays are copied.

        ``sessions`` (one timing record per process so far) is stored in the checkpoint's
        record, so a resumed run can report the time of the whole run.
        """
        import orbax.checkpoint as ocp

        self.require_space()
        tree = {
            "agents": _keys_to_data(_strip(agents, self.transient)),
            "history": {k: np.asarray(history[k], np.float32) for k in HISTORY_KEYS},
        }
        finite = mean_return is not None and math.isfinite(mean_return)
        record = CheckpointRecord(
            *self.identity,
            format_version=FORMAT_VERSION,
            updates_done=updates_done,
            mean_return=float(mean_return) if finite else None,
            transient=list(self.transient),
            sessions=list(sessions),
            metrics_rows=self.metrics() if self.metrics is not None else [],
            checksum=CHECKSUM_ALGORITHM,
        )
        self.saving = updates_done
        self.manager.save(
            updates_done,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(tree), record=ocp.args.JsonSave(record.to_json())
            ),
            metrics={"mean_return": float(mean_return)} if finite else None,
            force=True,
        )
        self.last_saved = updates_done

    def seal(self) -> None:
        """Writes the checksums of the checkpoint being saved (orbax calls this in its
        background thread, on the primary process only, once every process has written)."""
        seal_checkpoint(saving_checkpoint_path(self.run_dir, self.saving))

    def require_space(self) -> None:
        """Refuses to start a save the disk cannot hold: with less free space than
        ``SPACE_MARGIN`` times the newest checkpoint on disk.

        A save that runs out of space part way fails in orbax's background threads, after the
        run has moved on; checking first stops the run cleanly, with every complete
        checkpoint intact.

        Raises:
            OSError: ``ENOSPC``, naming the checkpoint directory.
        """
        # The previous save must end first (orbax would wait for it too), so that the space it
        # takes is counted; orbax names a checkpoint being written "<step>.orbax-checkpoint-tmp".
        self.manager.wait_until_finished()
        complete = complete_checkpoints(self.run_dir)
        if not complete:
            return
        need = SPACE_MARGIN * disk_bytes(checkpoint_path(self.run_dir, complete[-1]))
        if shutil.disk_usage(self.directory).free < need:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.directory))

    def close(self) -> None:
        """Waits for pending saves to finish (raising what a failed one raised) and stops the
        manager's background threads either way."""
        if self._manager is None:
            self.quiet.close()
            return
        try:
            self.manager.wait_until_finished()
        finally:
            try:
                self.manager.close()
            finally:
                self.quiet.close()


SPACE_MARGIN = 1.5
"""Free space a save asks for, in sizes of the newest checkpoint (checkpoints of one run all
have the same size)."""


@_orbax_quietly()
def available_steps(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoints of a run, oldest first."""
    directory = checkpoints_dir(run_dir)
    if not directory.is_dir():
        return []
    manager = _manager(directory, read_only=True)
    try:
        return sorted(manager.all_steps())
    finally:
        manager.close()


def _read_record(manager: Any, step: int) -> Any:
    """Checkpoint ``step``'s record as stored (``CheckpointRecord.to_json``, an older format's,
    or whatever JSON its record file holds)."""
    import orbax.checkpoint as ocp

    return manager.restore(step, args=ocp.args.Composite(record=ocp.args.JsonRestore())).record


def intact_steps(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoints of a run whose files match their checksums (or that
    have none to check: saved before purerl recorded them), oldest first. Hashes their files,
    restores nothing."""
    intact = []
    for step in complete_checkpoints(run_dir):
        path = checkpoint_path(run_dir, step)
        try:
            checksums = read_checksums(path)
        except DamagedFileError:
            continue
        if checksums is None or not damaged_files(path, checksums):
            intact.append(step)
    return intact


@_orbax_quietly()
def data_parallel_replicas(run_dir: Path, which: str) -> int | None:
    """How many data-parallel replicas checkpoint ``which`` of a run stacks (None: seeds mode,
    or no readable record; ``restore`` then reports the checkpoint). A run keeps its layout
    from its first checkpoint to its last."""
    manager = _manager(checkpoints_dir(run_dir), read_only=True)
    try:
        record = _read_record(manager, resolve_step(run_dir, which))
        return CheckpointRecord.from_json(record).replicas
    except Exception:  # orbax raises many types for unreadable files; restore says which
        return None
    finally:
        manager.close()


@_orbax_quietly()
def best_step(run_dir: Path, steps: Sequence[int]) -> int:
    """The step with the highest recorded mean return (the latest one if none has a return)."""
    manager = _manager(checkpoints_dir(run_dir), read_only=True)
    returns = {}
    try:
        for step in steps:
            try:
                returns[step] = CheckpointRecord.from_json(_read_record(manager, step)).mean_return
            except Exception:  # an unreadable checkpoint is never the best one
                returns[step] = None
    finally:
        manager.close()
    scored = [s for s in steps if returns[s] is not None]
    return max(scored, key=lambda s: (returns[s], s)) if scored else max(steps)


def resolve_step(run_dir: Path, which: str) -> int:
    """``latest``, ``best`` or a step number, checked against what exists.

    Raises:
        CheckpointError: missing run directory, no complete checkpoint, or an unknown step.
    """
    run_dir = Path(run_dir)
    require_run_dir(run_dir)
    steps = available_steps(run_dir)
    if not steps:
        raise CheckpointError(
            f"{run_dir} has no complete checkpoint (looked in {checkpoints_dir(run_dir)}); a run "
            "saves its first one after its first chunk of updates"
        )
    if which == "latest":
        return steps[-1]
    if which == "best":
        return best_step(run_dir, steps)
    if not which.isdigit() or int(which) not in steps:
        raise CheckpointError(
            f"no checkpoint {which!r} in {run_dir}; choose latest, best or one of {steps}"
        )
    return int(which)


def require_run_dir(run_dir: Path) -> None:
    """Raises ``CheckpointError`` unless ``run_dir`` is a directory, saying what it is instead."""
    if run_dir.is_dir():
        return
    if run_dir.exists():
        raise CheckpointError(f"{run_dir} is a file, not a run directory")
    raise CheckpointError(f"run directory {run_dir} does not exist")


BUDGET_FIELDS = frozenset({"total_timesteps"})
"""Configuration fields a checkpoint may differ in from its run (``--resume`` extends them)."""


def added_fields(algo: str, saved: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``algo``'s configuration that a checkpoint's ``saved`` configuration lacks,
    at their defaults (as JSON holds them): added to purerl after the checkpoint was written (DQN's
    ``network``), they read as the run's ``config.json`` reads, and the run resumes."""
    from purerl import algos

    fields = dataclasses.fields(algos.get(algo).config_cls)
    missing = [f for f in fields if f.name not in saved and f.default is not dataclasses.MISSING]
    return json_ready({f.name: f.default for f in missing})


def _check_identity(record: CheckpointRecord, expected: RunIdentity, where: str) -> None:
    """Raises ``CheckpointError`` unless ``record`` is of this format and carries the identity
    ``expected``."""
    if record.format_version != FORMAT_VERSION:
        raise CheckpointError(
            f"{where} has format version {record.format_version}, this purerl reads "
            f"version {FORMAT_VERSION}: its policy would not act as it was trained to; train the "
            "run again"
        )
    if record.algo != expected.algo:
        raise CheckpointError(
            f"{where} was written by {record.algo}, not {expected.algo}; use the "
            f"{record.algo} command"
        )
    if record.placement != expected.placement:
        layout = record.placement or {"mode": "seeds", "devices": 1}
        raise CheckpointError(
            f"{where} was written with {layout['devices']} device(s) in {layout['mode']} mode; "
            f"resume with --parallel {layout['mode']} --num-devices {layout['devices']}"
        )
    saved, wanted = {**added_fields(record.algo, record.config), **record.config}, expected.config
    # The budget is not what makes a checkpoint a run's own: a resume may extend it.
    differ = sorted(
        k for k in (set(saved) | set(wanted)) - BUDGET_FIELDS if saved.get(k) != wanted.get(k)
    )
    if differ:
        detail = ", ".join(f"{k}: {saved.get(k)!r} vs {wanted.get(k)!r}" for k in differ[:4])
        raise CheckpointError(
            f"{where} does not match this run's configuration ({detail}); it belongs to another run"
        )


def _intact_record(manager: Any, run_dir: Path, step: int) -> CheckpointRecord:
    """Checkpoint ``step``'s record, once it and the checkpoint's files are found intact: a
    record of a form this purerl writes, for this step and of a format no newer than its own,
    and files that match their checksums (if it was saved with them).

    Raises:
        DamagedFileError: a wrong record or damaged files, said in words (and whatever orbax
            raises for a record file it cannot read).
    """
    record = CheckpointRecord.from_json(_read_record(manager, step))
    if record.updates_done != step:
        raise DamagedFileError(f"its record is of update {record.updates_done}, not {step}")
    if record.format_version > FORMAT_VERSION:
        raise DamagedFileError(
            f"it is of checkpoint format {record.format_version}, written by a newer purerl "
            f"(this one reads format {FORMAT_VERSION})"
        )
    path = checkpoint_path(run_dir, step)
    checksums = read_checksums(path)
    if checksums is None and record.checksum is not None:
        raise DamagedFileError("its checksum file is missing")
    damaged = damaged_files(path, checksums) if checksums is not None else []
    if len(damaged) == 1:
        raise DamagedFileError(
            f"its file {damaged[0]} does not match the checksum saved with it (damaged on disk)"
        )
    if damaged:
        raise DamagedFileError(
            f"{len(damaged)} of its files do not match the checksums saved with them (damaged "
            f"on disk): {', '.join(damaged[:3])}{', ...' if len(damaged) > 3 else ''}"
        )
    return record


@_orbax_quietly()
def restore(
    run_dir: Path,
    step: int,
    fresh_agents: Any,
    expected: RunIdentity,
    any_layout: bool = False,
) -> Snapshot:
    """Restores checkpoint ``step`` of ``run_dir`` onto the structure of ``fresh_agents``.

    Args:
        fresh_agents: agents as ``purerl.core.program.init_agents`` builds them for this run;
            they give shapes, dtypes, shardings, container types and the transient fields.
        expected: the run's identity the checkpoint must carry.
        any_layout: read a checkpoint of any device layout onto one device's ``fresh_agents``
            (evaluation; a resume must keep the layout): seeds-mode agents are stacked ``[S,
            ...]`` on any number of devices, and of data-parallel ``[D, S, ...]`` replicas,
            identical by construction, the first is kept.

    Raises:
        CheckpointError: the checkpoint belongs to another run or cannot be read.
    """
    import orbax.checkpoint as ocp

    where = f"checkpoint {step} of {run_dir}"
    manager = _manager(checkpoints_dir(run_dir), read_only=True)
    try:
        try:
            record = _intact_record(manager, run_dir, step)
        except Exception as err:  # orbax raises many types for unreadable files
            raise _unreadable(step, where, err) from err
        if any_layout:
            expected = expected._replace(placement=record.placement)
        _check_identity(record, expected, where)
        transient, done = tuple(record.transient), record.updates_done
        num_seeds = jax.tree.leaves(fresh_agents)[0].shape[0]
        history = {k: jax.ShapeDtypeStruct((num_seeds, done), jnp.float32) for k in HISTORY_KEYS}
        stored = _strip(fresh_agents, transient)
        replicas = record.replicas if any_layout else None
        if replicas:
            stored = jax.tree.map(lambda x: jnp.broadcast_to(x, (replicas, *x.shape)), stored)
        target = {"agents": _abstract(_keys_to_data(stored)), "history": history}
        try:
            restored = manager.restore(
                step, args=ocp.args.Composite(state=ocp.args.StandardRestore(target))
            ).state
        except Exception as err:
            raise _unreadable(step, where, err) from err
    finally:
        manager.close()
    saved = restored["agents"]
    if replicas:
        saved = jax.tree.map(lambda x: x[0], saved)
    agents = _data_to_keys(saved, _strip(fresh_agents, transient))
    fresh_fields = {name: getattr(fresh_agents.state, name) for name in transient}
    agents = agents._replace(state=agents.state._replace(**fresh_fields))
    history = {k: np.asarray(v) for k, v in restored["history"].items()}
    return Snapshot(agents, history, done, record.to_json())


def _unreadable(step: int, where: str, err: Exception) -> UnreadableCheckpointError:
    reason = plain_reason(err)
    return UnreadableCheckpointError(
        step,
        f"{where} cannot be read ({reason}); it may be corrupted or from another version",
        reason,
    )


TENSORSTORE_ERROR = re.compile(r"\b([A-Z][A-Z_]+): .*?Error reading \"([^\"/]+)")


def plain_reason(err: BaseException) -> str:
    """Why a checkpoint could not be read, in words (orbax and tensorstore raise many types,
    with messages about their internals)."""
    import json

    chain = []
    while err is not None and len(chain) < 8:
        chain.append(err)
        err = err.__cause__ or err.__context__
    if isinstance(chain[0], DamagedFileError):
        return str(chain[0])
    if any(isinstance(e, json.JSONDecodeError) for e in chain):
        return "its record file is not valid JSON (cut short or overwritten?)"
    if any(isinstance(e, FileNotFoundError) for e in chain):
        return "some of its files are missing"
    for e in chain:  # TensorStore: "<STATUS>: ... Error reading "<array>/.zarray" in ..."
        found = TENSORSTORE_ERROR.search(str(e))
        if found:
            status, array = found.groups()
            return f"the file holding {array} is cut short or damaged ({status})"
    first = str(chain[0]).strip().splitlines()
    return (first[0] if first else type(chain[0]).__name__)[:200]


def restore_named(run_dir: Path, which: str, fresh_agents: Any, expected: RunIdentity):
    """Restores checkpoint ``which`` (``latest``, ``best`` or an update count) for reading, onto
    one device whatever layout the run trained with (``restore``'s ``any_layout``). Nothing is
    written or moved.

    ``latest`` is the newest checkpoint that can be read, as for a resume: unreadable newer
    ones are skipped and returned. A run still training deletes old checkpoints as it saves new
    ones, possibly while one is being read; ``latest`` and ``best`` then look again, and an
    explicit step says it is gone.

    Returns:
        ``(step, snapshot, skipped)``, ``skipped`` the errors of the newer checkpoints passed
        over (``latest`` only).
    """
    for _ in range(3):
        if which == "latest":
            resolve_step(run_dir, which)  # the run and at least one checkpoint exist
            try:
                snapshot, skipped = restore_newest_readable(
                    run_dir, available_steps(run_dir), fresh_agents, expected, any_layout=True
                )
            except UnreadableCheckpointError:
                continue  # one was deleted while it was read: look again
            return snapshot.updates_done, snapshot, skipped
        step = resolve_step(run_dir, which)
        try:
            return step, restore(run_dir, step, fresh_agents, expected, any_layout=True), []
        except UnreadableCheckpointError as err:
            if not vanishing(run_dir, step, err):
                raise
            if which not in ("latest", "best"):
                raise CheckpointError(
                    f"checkpoint {step} of {run_dir} was deleted while it was read (the run is "
                    "still training and keeps only its newest checkpoints); choose latest"
                ) from None
    raise CheckpointError(
        f"the checkpoints of {run_dir} kept being replaced while they were read; try again"
    )


DELETION_WAIT_S = 2.0
"""How long a checkpoint that lost files while it was read is watched for its directory to go:
orbax deletes a checkpoint the keep policies let go file by file, then the directory."""


def vanishing(run_dir: Path, step: int, err: UnreadableCheckpointError) -> bool:
    """Whether checkpoint ``step``, which failed to read with ``err``, is being deleted (by
    the run, still training) rather than damaged: its directory is gone, or it lacked files and
    its directory goes within ``DELETION_WAIT_S``. A damaged checkpoint stays."""
    path = checkpoint_path(run_dir, step)
    if not path.exists():
        return True
    if not lacks_files(err):
        return False
    deadline = time.monotonic() + DELETION_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if not path.exists():
            return True
    return False


def lacks_files(err: BaseException | None) -> bool:
    """Whether ``err`` or what caused it says a file was not found."""
    while err is not None:
        if isinstance(err, FileNotFoundError) or "NOT_FOUND" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def restore_newest_readable(
    run_dir: Path,
    steps: Sequence[int],
    fresh_agents: Any,
    expected: RunIdentity,
    any_layout: bool = False,
) -> tuple[Snapshot, list[UnreadableCheckpointError]]:
    """Restores the newest of ``steps`` that can be read, skipping unreadable ones
    (``any_layout`` as for ``restore``).

    Returns:
        The snapshot, and the errors of the newer checkpoints that were skipped.

    Raises:
        CheckpointError: none of ``steps`` can be read, or one belongs to another run (a
            foreign checkpoint is never skipped over).
    """
    skipped: list[UnreadableCheckpointError] = []
    for step in sorted(steps, reverse=True):
        try:
            return restore(run_dir, step, fresh_agents, expected, any_layout), skipped
        except UnreadableCheckpointError as err:
            if vanishing(run_dir, step, err):
                raise  # deleted while it was read (a run still training): not damaged
            skipped.append(err)
    reasons = "; ".join(f"{err.step}: {err.reason}" for err in skipped)
    raise CheckpointError(f"no checkpoint of {run_dir} can be read ({reasons})")
