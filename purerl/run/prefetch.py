"""Modules a run needs only later, imported in the background while it trains.

Once the first chunk has run, training happens inside XLA: the interpreter is free, and a small
program leaves a core idle. The modules a run needs at its end (orbax for its first checkpoint,
matplotlib for the learning curves) are imported meanwhile on a daemon thread, instead of one
after the other once training is done. (While the programs compile, the second core compiles
the initialisation: ``purerl.core.program.build_program``.) A failed import is ignored here:
the same import where the module is used raises it, and is reported there.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Sequence
from typing import Any

from purerl.core.program import collector_paused
from purerl.core.report import ChunkReport


def prefetch(modules: Sequence[str]) -> threading.Thread | None:
    """Starts importing ``modules`` on a daemon thread; None when there is nothing to import.

    Python's import lock makes this safe: a module the main thread asks for while the thread
    is importing it is handed over once complete.
    """
    wanted = list(modules)
    if not wanted:
        return None
    thread = threading.Thread(target=_load, args=(wanted,), name="purerl-prefetch", daemon=True)
    thread.start()
    return thread


def _load(modules: list[str]) -> None:
    # Imports make little garbage; a full collection meanwhile walks everything the run's
    # programs left in JAX's caches, holding the interpreter the training loop reports through.
    with collector_paused():
        for name in modules:
            with contextlib.suppress(Exception):  # reported where the module is used
                importlib.import_module(name)


class PrefetchSink:
    """A sink that starts importing ``modules`` when the first chunk reports."""

    def __init__(self, modules: Sequence[str]):
        self.modules = list(modules)
        self.thread: threading.Thread | None = None

    def write(self, report: ChunkReport) -> None:
        if self.thread is None and self.modules:
            self.thread = prefetch(self.modules)

    def close(self, summary: dict[str, Any]) -> None:
        pass
