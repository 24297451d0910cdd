"""Process-wide JAX settings that entry points (CLIs, benchmarks, tests) apply at start-up.

Nothing here runs at import time: library code never changes global JAX configuration.
"""

from __future__ import annotations

import jax


def configure_jax() -> None:
    """Settings every purerl process uses; call before the first JAX computation.

    That includes importing gymnax (it builds arrays at import), so the experiment scripts call
    this before importing the rest of purerl: settings of the CPU client are fixed when the
    client is created.

    CPU async dispatch is turned off: with it, the CPU runtime occasionally deadlocks with every
    worker idle while the host waits on a buffer (jax-ml/jax#25861, seen here in the test suite
    under jax 0.10.2). purerl runs whole chunks of training as single programs, so dispatching
    them asynchronously buys nothing.
    """
    jax.config.update("jax_cpu_enable_async_dispatch", False)


def quiet_libraries() -> None:
    """Keeps library chatter off the terminal of a CLI: only errors from orbax's absl logger.

    Orbax logs routine warnings (such as opening a checkpoint directory read-only) through
    Python logging; without a configured handler they would reach stderr, where a CLI's only
    output should be its own messages.
    """
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)


def start_distributed_from_argv(argv: list[str]) -> None:
    """Calls ``jax.distributed.initialize`` when ``argv`` holds ``--distributed``.

    It must run before anything initialises a JAX backend, and importing environment
    libraries (gymnax) already does, so the experiment scripts call this before their other
    imports. The flags are read again, with the rest, by the CLI.
    """
    if "--distributed" not in argv:
        return
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--coordinator-address")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    known, _ = parser.parse_known_args(argv)
    initialize_distributed(known.coordinator_address, known.num_processes, known.process_id)


def initialize_distributed(
    coordinator_address: str | None, num_processes: int | None, process_id: int | None
) -> None:
    """Joins this process to a multi-process run (``jax.distributed``), once.

    Arguments left None are detected from the environment where JAX knows how (SLURM,
    Open MPI, Kubernetes). CPU runs use the gloo collectives.
    """
    if jax.distributed.is_initialized():
        return
    if jax.config.jax_platforms in ("cpu", "cpu,"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address, num_processes, process_id)
