"""Process-wide settings that entry points (the command line, the Python API, benchmarks,
tests) apply first. Nothing here runs at import time: library code never changes global JAX
configuration by being imported.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

from purerl.config import ConfigError

CACHE_ENV = "PURERL_CACHE_DIR"
"""Moves the persistent compilation cache (default ``$XDG_CACHE_HOME/purerl/jax``)."""
CACHE_SWITCH_ENV = "PURERL_COMPILATION_CACHE"
"""``0``, ``off``, ``false`` or ``no`` turn the persistent compilation cache off."""
CACHE_MIN_COMPILE_S = 0.2
"""Programs that compile faster than this are not cached (loading would cost about as much)."""


def configure_jax() -> None:
    """Settings every purerl process uses; call before the first JAX computation.

    CPU async dispatch is turned off: with it, the CPU runtime occasionally deadlocks with every
    worker idle while the host waits on a buffer (jax-ml/jax#25861, seen here in the test suite
    under jax 0.10.2). purerl runs whole chunks of training as single programs, so dispatching
    them asynchronously buys nothing. The setting only takes effect before JAX creates its CPU
    client, which no purerl import does.
    """
    jax.config.update("jax_cpu_enable_async_dispatch", False)


def child_process_env(**extra: str) -> dict[str, str]:
    """The environment for a short-lived Python child that a purerl process starts while it may
    hold an accelerator: JAX's default on a GPU is to reserve 75 % of its memory at start-up,
    which the parent's reservation leaves no room for, so the child allocates as it goes."""
    return {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false", **extra}


def default_cache_dir() -> Path:
    """``$PURERL_CACHE_DIR``, else ``$XDG_CACHE_HOME/purerl/jax`` (``~/.cache/purerl/jax``)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "purerl" / "jax"


CURVES_SWITCH_ENV = "PURERL_CURVES"
"""``0``, ``off``, ``false`` or ``no`` keep runs from drawing their learning curves (batch jobs,
sweeps, test suites: about 0.7 s of a short run's process, matplotlib included)."""
OFF = ("0", "off", "false", "no")


def cache_disabled_by_env() -> bool:
    return os.environ.get(CACHE_SWITCH_ENV, "").strip().lower() in OFF


def curves_disabled_by_env() -> bool:
    return os.environ.get(CURVES_SWITCH_ENV, "").strip().lower() in OFF


def enable_compilation_cache(enabled: bool = True) -> Path | None:
    """Points JAX's persistent compilation cache at ``default_cache_dir()``.

    A second run of the same configuration then loads its compiled programs instead of
    compiling them again. A cache directory configured already (``JAX_COMPILATION_CACHE_DIR``,
    or by the program embedding purerl) is left as it is. An unwritable cache directory turns
    the cache off rather than failing the run.

    Returns:
        The cache directory in use, or None when the cache is off.
    """
    current = jax.config.jax_compilation_cache_dir
    if current:
        return Path(current)
    if not enabled or cache_disabled_by_env():
        return None
    directory = default_cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(directory, os.W_OK):
        return None
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_S)
    return directory


def quiet_libraries() -> None:
    """Keeps library chatter off the terminal of a CLI.

    Orbax logs through absl's Python logger: routine warnings (opening a checkpoint directory
    read-only), and every failure of its background save and restore threads with a full
    traceback, once per thread. The same failure is raised again in the calling thread, where
    the command turns what the user can cause (a full disk, an unreadable checkpoint) into one
    line and lets anything else end with its traceback; the logged copies would only bury that
    line under hundreds of others.
    """
    import logging

    logging.getLogger("absl").setLevel(logging.CRITICAL)
    # Orbax saves through asyncio; a save that fails part way (a full disk) can leave tasks
    # that asyncio reports on its own logger as the process ends.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)


def initialize_distributed(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Joins this process to a multi-process run (``jax.distributed``), once.

    Must run before anything creates a JAX backend; purerl's imports do not, so the command line
    calls it after parsing. Arguments left None are detected from the environment where JAX
    knows how (SLURM, Open MPI, Kubernetes). CPU runs use the gloo collectives.
    """
    if jax.distributed.is_initialized():
        return
    if jax.config.jax_platforms in ("cpu", "cpu,"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(coordinator_address, num_processes, process_id)
    except ValueError as err:
        if "defined" not in str(err):  # what only a launcher or the flags can give
            raise
        raise ConfigError(
            "--distributed found no launcher (SLURM, Open MPI, Kubernetes) to say where process "
            "0 is and how many processes there are; outside one, give --coordinator-address "
            "HOST:PORT, --num-processes and --process-id"
        ) from None
