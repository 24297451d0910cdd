"""Writes device-check reports into the results page, between its markers.

    python -m benchmarks.device.publish docs/device/2026-11-26-h200/run1/report.json \\
        docs/device/2026-11-26-h200/run2/report.json --benchmarks BENCHMARKS.md

Rows are merged by name in the order the reports are given: a later report's row replaces an
earlier one's (a check measured again). The section between ``<!-- device-report:start -->``
and ``<!-- device-report:end -->`` is replaced (added at the end of the page if the markers are
missing): the machine from the first report's header, the commands, and one table row per
check with its status, figures and error or reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.device.report import Row, format_figures

START_MARKER = "<!-- device-report:start -->"
END_MARKER = "<!-- device-report:end -->"


def merged_rows(paths: list[Path]) -> tuple[dict, list[tuple[Row, str]]]:
    """The header of the first report that names its devices, and each check's latest row with
    the folder of the report it came from."""
    headers, rows = [], {}
    for path in paths:
        data = json.loads(path.read_text())
        headers.append(data["header"])
        for raw in data["rows"]:
            rows[raw["name"]] = (Row.from_json(raw), path.parent.name)
    named = [h for h in headers if h.get("devices")]
    return (named or headers or [{}])[0], list(rows.values())


def section(paths: list[Path], root: Path) -> str:
    header, rows = merged_rows(paths)
    devices = ", ".join(header.get("devices", [])) or "unknown devices"
    sources = ", ".join(
        f"[{p.parent.name}]({p.parent.relative_to(root).as_posix()}/report.md)" for p in paths
    )
    lines = [
        START_MARKER,
        f"Measured {header.get('date', '?')} on {devices} ({header.get('cpu_cores', '?')} CPU "
        f"cores, Python {header.get('python', '?')}, jax {header.get('jax', '?')}) by "
        f"`python -m benchmarks.device`; reports: {sources} (a later report's row replaces an "
        "earlier one's). Steps/s count environment steps of all seeds, frames/s Atari frames "
        "(steps x 4); compile is timed apart; medians of 3 calls after a warm-up, beside "
        "`benchmarks/reference.py` in the same process, calls alternating.",
        "",
        "| check | status | figures | error or reason | from |",
        "|---|---|---|---|---|",
    ]
    for row, source in rows:
        note = (row.error or row.why or "").replace("|", "/")
        figures = format_figures(row.figures).replace("|", "/")
        lines.append(f"| {row.name} | {row.status} | {figures} | {note} | {source} |")
    lines.append(END_MARKER)
    return "\n".join(lines)


def replace_section(page: str, text: str) -> str:
    if START_MARKER in page and END_MARKER in page:
        before = page[: page.index(START_MARKER)]
        after = page[page.index(END_MARKER) + len(END_MARKER) :]
        return before + text + after
    return page.rstrip("\n") + "\n\n## On one GPU: the device check\n\n" + text + "\n"


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
        help="the results page to write into (default: BENCHMARKS.md)",
    )
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.reports if not p.is_file()]
    if missing:
        print(f"error: no report at {', '.join(missing)}", file=sys.stderr)
        return 2
    root = args.benchmarks.resolve().parent
    text = section([p.resolve() for p in args.reports], root)
    page = args.benchmarks.read_text() if args.benchmarks.exists() else ""
    args.benchmarks.write_text(replace_section(page, text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
