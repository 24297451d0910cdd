"""Overlay runs and print their table: ``python experiments/plot.py runs/a runs/b --out fig.png``.

Each argument is a run directory (``experiments/ppo.py`` / ``dqn.py`` write them under
``runs/``), finished or still in progress. The figure shows each run's episode return against
frames per seed, smoothed with a trailing moving average over ``--window`` updates, as the mean
over seeds with a +- std band. It is written to ``--out`` (default ``compare.png`` in the
current directory). A markdown table with one row per run goes to stdout: final mean return
+- std across seeds (each seed's mean over its last 100+ episodes), best smoothed mean return,
frames per seed, wall-clock seconds and training steps/s.

Exit codes: 0 done, 2 invalid arguments or a directory that is not a run (one ``error:`` line
on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from purerl.plots import NotARunError, compare_runs
from purerl.runs import comparison_table


class UsageError(Exception):
    """Invalid command-line input; reported as one line with exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one ``error:`` line (as for the other experiment CLIs)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = OneLineParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", type=Path, help="run directories to overlay")
    parser.add_argument(
        "--out", type=Path, default=Path("compare.png"), help="PNG to write (default: %(default)s)"
    )
    parser.add_argument(
        "--window", type=int, default=100, help="moving-average window in updates (default: 100)"
    )
    args = parser.parse_args(list(argv))
    if args.window < 1:
        raise UsageError(f"--window must be at least 1, got {args.window}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        rows = compare_runs(args.run_dirs, args.out, args.window)
    except (UsageError, NotARunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(comparison_table(rows))
    print(f"\nfigure: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
