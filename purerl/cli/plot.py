"""``purerl plot RUN_DIR...``: overlay runs' learning curves and print their table.

Each argument is a run directory, finished or still in progress. The figure shows each run's
episode return against frames per seed, smoothed with a trailing moving average over
``--window`` updates, as the mean over seeds with a +- std band, written to ``--out``. A
markdown table with one row per run goes to stdout: final mean return +- std across seeds (each
seed's mean over its last 100 or more episodes), best smoothed mean return, frames per seed,
wall-clock seconds and training steps/s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import tyro

from purerl.cli.parsing import parse
from purerl.config import ConfigError


@dataclasses.dataclass(frozen=True)
class PlotArgs:
    run_dirs: Annotated[tuple[str, ...], tyro.conf.Positional, tyro.conf.arg(metavar="RUN_DIR")]
    """Run directories to overlay."""
    out: Annotated[str, tyro.conf.arg(metavar="PATH.png")] = "compare.png"
    """PNG to write."""
    window: int = 100
    """Moving-average window in updates."""

    def __post_init__(self):
        if not self.run_dirs:
            raise ConfigError("give at least one run directory")
        if self.window < 1:
            raise ConfigError(f"--window must be at least 1, got {self.window}")
        if not self.out.lower().endswith(".png"):
            raise ConfigError(f"--out writes a PNG; give a path ending in .png, not {self.out}")


def main(argv: Sequence[str], prog: str) -> int:
    args = parse(PlotArgs, argv, prog, __doc__)
    from purerl.run.compare import comparison_table
    from purerl.run.plots import compare_runs

    rows = compare_runs([Path(p) for p in args.run_dirs], Path(args.out), args.window)
    print(comparison_table(rows))
    print(f"\nfigure: {args.out}")
    return 0
