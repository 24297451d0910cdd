"""Signals while a run starts and trains: the first SIGINT or SIGTERM asks the run to stop (after
saving a checkpoint once training has started); a second Ctrl-C aborts at once."""

from __future__ import annotations

import signal
import sys
from typing import Any


class Stopped(Exception):
    """A signal arrived before training started; nothing was written."""

    def __init__(self, signum: int):
        super().__init__(
            f"stopped by {signal.Signals(signum).name} before training started; nothing was written"
        )
        self.signum = signum


class StopOnSignal:
    """Turns the first SIGINT or SIGTERM into a stop request; a second SIGINT aborts at once."""

    def __init__(self):
        self.signum: int | None = None
        self.previous: dict[int, Any] = {}
        self.training = False
        """Set once training has started: a stop then saves a checkpoint first."""

    def __enter__(self) -> StopOnSignal:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self.handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum
        what = (
            "saving a checkpoint after the current chunk"
            if self.training
            else "stopping before training starts"
        )
        print(
            f"\n{signal.Signals(signum).name}: {what} (Ctrl-C again aborts at once)",
            file=sys.stderr,
            flush=True,
        )

    def requested(self) -> bool:
        return self.signum is not None
