"""Memory and disk: whether a run's state fits its device, and which failed writes the user
can fix. Sizes in messages are in human units (``format_bytes``)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import jax

from purerl.config import ConfigError
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
    raise ConfigError(
        f"the agents' state needs {format_bytes(need)} per device ({seeds} seed(s); its largest "
        f"part, {largest}, is {format_bytes(state_bytes[largest])} a seed) but the "
        f"{device.platform} device has {format_bytes(capacity)}; lower the flags that size "
        f"{largest}, or --num-seeds"
    )


def is_disk_full(err: BaseException | None) -> bool:
    """Whether ``err`` (or what caused it) is a full device or exceeded quota."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def out_of_memory_message(cfg: Any, placement: parallel.Placement | None) -> str:
    devices = placement.num_devices if placement else 1
    return (
        f"the device ran out of memory ({cfg.num_seeds} seed(s) x {cfg.num_envs} envs on "
        f"{devices} device(s)); lower --num-envs, --num-seeds or the minibatch size (raise "
        "--num-minibatches), or spread the work over more devices with --num-devices"
    )
