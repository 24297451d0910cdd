"""Process-wide JAX settings that entry points (CLIs, benchmarks, tests) apply at start-up.

Nothing here runs at import time: library code never changes global JAX configuration.
"""

from __future__ import annotations

import jax


def configure_jax() -> None:
    """Settings every purerl process uses; call before the first JAX computation.

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
