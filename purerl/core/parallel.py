"""Devices: the only module that knows about them (mesh, device axis, placement, processes).

A run uses a one-dimensional ``Mesh`` over its devices with axis ``DEVICE_AXIS``. The compiled
chunk of updates is the same function in every mode; ``jax.shard_map`` places it:

- ``seeds`` (independent agents): the seed axis of the stacked agents ``[S, ...]`` is split
  across the devices; each device vmaps its ``S / D`` agents. Nothing is communicated.
- ``data`` (data parallel): every agent is replicated on all devices, each device steps
  ``num_envs / D`` of its environments, and gradients and metrics are averaged over the device
  axis (the algorithm is built with ``axis_name=DEVICE_AXIS``). Agents are stacked
  ``[D, S, ...]``: device ``d`` holds replica ``d`` of every seed.

Several processes (hosts) join through ``jax.distributed``; the mesh then spans every process's
devices and each process runs the same program on its own devices.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from purerl.config import ConfigError

DEVICE_AXIS = "device"
MODES = ("seeds", "data")


def select_devices(device: str | int, num_devices: int | None) -> list[jax.Device]:
    """The devices a run uses.

    Args:
        device: ``auto`` (GPUs if JAX sees any, else CPUs), ``cpu``, ``gpu`` or a device index
            into ``jax.devices()``.
        num_devices: how many of that kind (default: all of them; one for an index).

    Raises:
        ConfigError: no device of the requested kind, or not that many.
    """
    # A distributed run's --num-devices counts every process's devices, not this one's.
    if num_devices is not None and device in ("auto", "cpu") and not distributed():
        request_cpu_devices(num_devices)
    if isinstance(device, int) or device.isdigit():
        everything = jax.devices()
        if int(device) >= len(everything):
            raise ConfigError(f"--device {device}: JAX sees only {len(everything)} device(s)")
        chosen = [everything[int(device)]]
    elif device in ("auto", "cpu", "gpu"):
        kind = device if device != "auto" else ("gpu" if _has_gpu() else "cpu")
        if kind == "gpu" and not _has_gpu():
            raise ConfigError(
                "--device gpu: JAX sees no GPU (backend "
                f"{jax.default_backend()}); install CUDA-enabled JAX with "
                "pip install 'purerl[cuda12]', or use --device cpu"
            )
        chosen = jax.devices(kind)
    else:
        raise ConfigError(f"--device must be auto, cpu, gpu or a device index, got {device!r}")
    if num_devices is not None:
        if num_devices < 1 or num_devices > len(chosen):
            fix = ""
            if chosen[0].platform == "cpu":
                fix = (
                    f"; JAX started its CPU backend before purerl could ask for more: set "
                    f"JAX_NUM_CPU_DEVICES={num_devices} before the first JAX call"
                )
            raise ConfigError(
                f"--num-devices {num_devices}: {len(chosen)} {chosen[0].platform} device(s) "
                f"are available{fix}"
            )
        chosen = chosen[:num_devices]
    return chosen


def request_cpu_devices(count: int) -> None:
    """Has JAX's CPU backend start with at least ``count`` devices, if it has not started yet.

    XLA:CPU runs one device's program on a pool shared by all cores, and for the small programs
    of vector-env RL handing work between threads costs about what it saves. Two CPU devices run
    two programs at once instead, so seeds split over as many CPU devices as cores keep every
    core busy with its own program (speed-ups in BENCHMARKS.md). Once the backend exists its
    device count is fixed; ``select_devices`` then says how to set it.
    """
    if jax.config.jax_num_cpu_devices >= count:
        return
    # Once the backend exists the update raises; select_devices then reports the count it has.
    with contextlib.suppress(RuntimeError):
        jax.config.update("jax_num_cpu_devices", count)


def distributed() -> bool:
    """Whether this process joined a multi-process run (``jax.distributed``)."""
    return jax.distributed.is_initialized()


def usable_cores() -> int:
    """CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def even_split(count: int, most: int) -> int:
    """The most devices, at most ``most``, that ``count`` agents split over evenly."""
    return max(d for d in range(1, min(most, count) + 1) if count % d == 0)


def cpu_seed_split(num_seeds: int) -> int:
    """How many CPU devices, at most one per usable core, the seeds of a run would split over
    evenly (1: no split helps)."""
    return even_split(num_seeds, usable_cores())


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a run's agents live and how they are split."""

    mesh: Mesh
    mode: str
    """``seeds`` or ``data`` (see the module docstring)."""

    @property
    def num_devices(self) -> int:
        return self.mesh.devices.size

    @property
    def axis_name(self) -> str | None:
        """The axis algorithms average over: the device axis in data-parallel mode."""
        return DEVICE_AXIS if self.mode == "data" else None

    def sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, P(DEVICE_AXIS))

    def describe(self) -> str:
        devices = self.mesh.devices.ravel()
        kinds = sorted({d.device_kind for d in devices})
        processes = len({d.process_index for d in devices})
        where = f" on {processes} processes" if processes > 1 else ""
        return f"{len(devices)} x {', '.join(kinds)}{where} ({self.mode}-parallel)"


def make_placement(devices: Sequence[jax.Device], mode: str, num_seeds: int, num_envs: int):
    """Checks that the work splits evenly and builds the mesh.

    Raises:
        ConfigError: an unknown mode, or seeds / environments that do not divide across the
            devices.
    """
    if mode not in MODES:
        raise ConfigError(f"--parallel must be one of {list(MODES)}, got {mode!r}")
    count = len(devices)
    if mode == "seeds" and num_seeds % count:
        raise ConfigError(
            f"--num-seeds {num_seeds} does not split across {count} devices; use a multiple "
            f"of {count} or --num-devices dividing it"
        )
    if mode == "data" and num_envs % count:
        raise ConfigError(
            f"--num-envs {num_envs} does not split across {count} devices; use a multiple of "
            f"{count} or --num-devices dividing it"
        )
    return Placement(Mesh(np.asarray(devices), (DEVICE_AXIS,)), mode)


def place(placement: Placement, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` (a function of stacked agents) run per device under ``shard_map``.

    In ``seeds`` mode ``fn`` gets each device's ``[S / D, ...]`` slice. In ``data`` mode it gets
    that device's replicas ``[S, ...]`` (the leading device axis is dropped and restored).
    """
    if placement.mode == "seeds":
        local = fn
    else:

        def local(tree):
            out = fn(jax.tree.map(lambda x: x[0], tree))
            return jax.tree.map(lambda x: x[None], out)

    return jax.shard_map(
        local, mesh=placement.mesh, in_specs=P(DEVICE_AXIS), out_specs=P(DEVICE_AXIS)
    )


def replicas_fingerprints(tree: Any) -> list[str]:
    """A digest of each data-parallel replica of ``tree`` (leaves ``[D, ...]``)."""
    leaves = [np.asarray(x) for x in jax.tree.leaves(fetch(tree))]
    count = leaves[0].shape[0]
    return [
        hashlib.sha256(b"".join(leaf[d].tobytes() for leaf in leaves)).hexdigest()
        for d in range(count)
    ]


def is_main_process() -> bool:
    """Process 0 writes metrics, summaries and plots."""
    return jax.process_index() == 0


def fetch(tree: Any) -> Any:
    """Device arrays as host NumPy arrays, gathered from every process when there are several."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)


def memory_capacity(device: jax.Device) -> int | None:
    """Bytes of memory ``device`` can hold: its own memory on an accelerator, the host's
    physical memory for a CPU device; None where neither is known."""
    stats = device.memory_stats() or {}
    if stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    if device.platform == "cpu":
        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return None
    return None


def memory_report(placement: Placement | None) -> dict[str, Any]:
    """Device kind, device memory in use and at peak (where JAX reports it: GPUs), and the
    process's peak resident memory, for summaries."""
    import resource

    devices = list(placement.mesh.devices.flat) if placement else [jax.devices()[0]]
    report: dict[str, Any] = {
        "device_kind": devices[0].device_kind,
        "num_devices": len(devices),
        "host_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    stats = [d.memory_stats() for d in devices if d.process_index == jax.process_index()]
    if stats and all(stats):
        report["device_memory_in_use_mib"] = max(s.get("bytes_in_use", 0) for s in stats) / 2**20
        peak = max(s.get("peak_bytes_in_use", 0) for s in stats)
        report["device_memory_peak_mib"] = peak / 2**20
    return report
