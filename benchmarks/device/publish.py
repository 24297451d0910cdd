"""Puts device-check reports on the results page: lists them in the results store and renders
BENCHMARKS.md again.

    python -m benchmarks.device.publish docs/device/2026-11-26-h200/run1/report.json \\
        docs/device/2026-11-26-h200/run2/report.json

The reports (oldest first; a later report's row replaces an earlier one's, a check measured
again) replace the list in ``benchmarks/results/device.json`` beside ``--benchmarks``, and the
page is rendered from every record (``benchmarks.page``): its "On one GPU" section shows the
machine, each comparison beside the reference, the Atari command and the learning run, and
links the reports, which keep every row. Reports must lie inside the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks import page, results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.device.publish",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files, oldest first")
    parser.add_argument(
        "--benchmarks",
        type=Path,
        default=Path("BENCHMARKS.md"),
        help="the results page, at the repository root (default: BENCHMARKS.md)",
    )
    args = parser.parse_args(argv)
    root = args.benchmarks.resolve().parent
    missing = [str(p) for p in args.reports if not p.is_file()]
    if missing:
        print(f"error: no report at {', '.join(missing)}", file=sys.stderr)
        return 2
    outside = [str(p) for p in args.reports if root not in p.resolve().parents]
    if outside:
        print(
            f"error: {', '.join(outside)} outside {root}: copy it under docs/device/",
            file=sys.stderr,
        )
        return 2
    results_dir = root / "benchmarks" / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    listed = [p.resolve().relative_to(root).as_posix() for p in args.reports]
    (results_dir / results.DEVICE_REPORTS).write_text(
        json.dumps({"reports": listed}, indent=1) + "\n", encoding="utf-8"
    )
    args.benchmarks.write_text(page.render(root, results_dir), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
