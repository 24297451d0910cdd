"""Memory and disk: whether a run's state fits its device, and which failed writes the user
can fix. Sizes in messages are in human units (``format_bytes``)."""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path
from typing import Any

import jax

from purerl.config import ConfigError, flag
from purerl.core import parallel


def check_output_file(path: str | Path, what: str) -> None:
    """Refuses a file to write that cannot be written, before any work goes into it: a
    directory of that name, a file where a directory of its path must be, or a folder this
    user may not write to (a missing folder is created when the file is written).

    Raises:
        ConfigError: naming ``what`` (a flag, say) and the path.
    """
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{what} {path} is a directory; give the path of a file to write")
    folder = next(parent for parent in [*target.parents, Path(".")] if parent.exists())
    if not folder.is_dir():
        raise ConfigError(f"{what} {path} cannot be written: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path} cannot be written: {folder} is not writable")


def disk_bytes(directory: Path) -> int:
    """Space the files under ``directory`` take on disk (allocated blocks: many small files
    round up)."""
    return sum(f.stat().st_blocks * 512 for f in directory.rglob("*") if f.is_file())


def tree_bytes(tree: Any) -> int:
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree))


def format_bytes(count: float) -> str:
    """``1536`` -> ``1.5 KiB``: sizes in messages, in the largest unit that keeps them >= 1."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def check_memory(
    cfg: Any, device: Any, placement: parallel.Placement | None, state_bytes: dict[str, int]
) -> None:
    """Refuses a run whose agents' state alone cannot fit in its device's memory (training
    needs more on top: rollouts, activations, gradients)."""
    capacity = parallel.memory_capacity(device)
    seeds = cfg.num_seeds
    if placement is not None and placement.mode == "seeds":
        seeds //= placement.num_devices
    need = sum(state_bytes.values()) * seeds
    if capacity is None or need <= capacity:
        return
    largest = max(state_bytes, key=state_bytes.get)
    flags = ", ".join(sizing_flags(cfg, largest)) or f"the flags that size {largest}"
    raise ConfigError(
        f"the agents' state needs {format_bytes(need)} per device ({seeds} seed(s); its largest "
        f"part, {largest}, is {format_bytes(state_bytes[largest])} a seed) but the "
        f"{device.platform} device has {format_bytes(capacity)}; lower {flags}, or --num-seeds"
    )


def sizing_flags(cfg: Any, field: str) -> list[str]:
    """The configuration's flags named after state field ``field``, which size it (``buffer``:
    ``--buffer-size``)."""
    return [flag(f.name) for f in dataclasses.fields(cfg) if f.name.startswith(f"{field}_")]


def is_disk_full(err: BaseException | None) -> bool:
    """Whether ``err`` (or what caused it) is a full device or exceeded quota."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def out_of_memory_message(
    cfg: Any, placement: parallel.Placement | None, state_bytes: dict[str, int] | None = None
) -> str:
    """What to lower when a run ran out of device memory: first the flags that size the
    largest part of the agents' state (``state_bytes``, bytes of one seed's state by field)
    where the configuration has them (a replay buffer's ``--buffer-size``), then the counts
    every run has, and the minibatch size where there is one."""
    devices = placement.num_devices if placement else 1
    where = f"{cfg.num_seeds} seed(s) x {cfg.num_envs} envs on {devices} device(s)"
    flags = []
    if state_bytes:
        largest = max(state_bytes, key=state_bytes.get)
        flags = sizing_flags(cfg, largest)
        if flags:
            size = format_bytes(state_bytes[largest])
            where += f"; the largest part of the agents' state is {largest}, {size} a seed"
    flags += ["--num-envs", "--num-seeds"]
    if any(f.name == "num_minibatches" for f in dataclasses.fields(cfg)):
        flags.append("the minibatch size (raise --num-minibatches)")
    return (
        f"the device ran out of memory ({where}); lower {', '.join(flags[:-1])} or {flags[-1]}, "
        "or spread the work over more devices with --num-devices"
    )
