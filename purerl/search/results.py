"""The files of a search directory, and the progress lines a search prints.

``results.csv`` has one row per configuration in spec order; ``results.md`` is the same ranked
best first (complete configurations by mean final return, then the rest); ``best_config.json``
is the top row's configuration in the run directory's ``config.json`` format.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np

from purerl import algos
from purerl.options import options_for
from purerl.run.compare import format_return, markdown_table
from purerl.run.rundir import ConfigRecord, write_json
from purerl.search.plan import describe, format_value
from purerl.search.spec import SearchSpec
from purerl.search.sweep import ConfigResult

DONE = "done"


class Row(NamedTuple):
    """One configuration's outcome."""

    index: int
    """Position in the spec's list of configurations."""
    batch: int
    """The compiled program (local) or Ray trial that trained it."""
    values: dict[str, Any]
    """The searched parameters' values."""
    result: ConfigResult
    updates_done: int
    status: str
    """``done``, ``stopped early at ... steps`` (ASHA), or ``error: ...``."""

    @property
    def seeds(self) -> list[int]:
        cfg = self.result.config
        return [cfg.seed + s for s in range(cfg.num_seeds)]

    @property
    def complete(self) -> bool:
        return self.status == DONE and bool(np.isfinite(self.result.returns).all())


def ranked(rows: list[Row]) -> list[Row]:
    """Best first: complete configurations by mean final return, then partial ones, then
    those without any return (ties keep spec order)."""

    def key(row: Row) -> tuple:
        mean = row.result.mean
        return (not row.complete, -mean if math.isfinite(mean) else math.inf, row.index)

    return sorted(rows, key=key)


def csv_value(value: Any) -> Any:
    """Floats at full precision (a re-run can be compared to them), tuples as JSON lists."""
    if isinstance(value, tuple):
        return json.dumps(list(value))
    if isinstance(value, float | np.floating):
        return repr(float(value)) if math.isfinite(value) else ""
    return value


def write_csv(path: Path, spec: SearchSpec, rows: list[Row]) -> None:
    names = [p.name for p in spec.searched]
    seed_offsets = range(spec.num_seeds)
    header = ["config", "batch", *names, "mean_return", "std_return"]
    header += [f"return_seed_{s}" for s in seed_offsets]
    header += ["diverged_seeds", "steps_per_second", "updates", "status"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for row in sorted(rows, key=lambda r: r.index):
            res = row.result
            writer.writerow(
                [row.index, row.batch, *(csv_value(row.values[n]) for n in names)]
                + [csv_value(res.mean), csv_value(res.std)]
                + [csv_value(float(r)) for r in res.returns]
                + [int(res.diverged.sum()), csv_value(res.steps_per_second)]
                + [row.updates_done, row.status]
            )


def per_seed_returns(row: Row) -> str:
    """Each seed's final return with one decimal, ``-`` where it has none."""
    return ", ".join("-" if not math.isfinite(r) else f"{r:.1f}" for r in row.result.returns)


def results_table(spec: SearchSpec, rows: list[Row], limit: int | None = None) -> str:
    """The ranked rows as a markdown table (the first ``limit`` of them), best first."""
    names = [p.name for p in spec.searched]
    header = ["rank", "config", *names, "final return", "per seed", "steps/s", "status"]
    lines = [
        [str(rank), str(row.index), *(format_value(row.values[n]) for n in names)]
        + [format_return(row.result.mean, row.result.std), per_seed_returns(row)]
        + [f"{row.result.steps_per_second:,.0f}", row.status]
        for rank, row in enumerate(ranked(rows)[:limit], 1)
    ]
    # Numbers right-aligned: rank, config, final return and steps/s.
    right = {0, 1, len(names) + 2, len(names) + 4}
    return markdown_table(header, lines, right_columns=right)


def write_results(search_dir: Path, spec: SearchSpec, rows: list[Row]) -> Row | None:
    """Writes results.csv, results.md, best_config.json and the plot; returns the best row.

    No ``best_config.json`` is written when no configuration finished an episode.
    """
    from purerl.search.plot import plot_returns

    write_csv(search_dir / "results.csv", spec, rows)
    seeds = f"{spec.num_seeds} seed{'s' if spec.num_seeds != 1 else ''}"
    title = f"# Search: {spec.algo} on {spec.env}, {len(rows)} configurations x {seeds}"
    note = (
        "Final return: mean +- std across seeds of each seed's mean return over its last 100+ "
        "episodes. steps/s: the configuration's share of its program's steps/s."
    )
    table = results_table(spec, rows)
    (search_dir / "results.md").write_text(f"{title}\n\n{note}\n\n{table}\n", encoding="utf-8")
    plot_returns(search_dir / "returns_vs_params.png", spec, rows)
    best = ranked(rows)[0] if rows else None
    if best is None or not math.isfinite(best.result.mean):
        return None
    options = options_for(algos.get(spec.algo))()
    record = ConfigRecord.new(spec.algo, best.result.config, options)
    write_json(search_dir / "best_config.json", record.to_json())
    return best


class SearchProgress:
    """Progress lines: one when a batch starts, one when it ends with the best so far."""

    def __init__(self, num_configs: int, num_batches: int, out: IO[str] | None = None):
        self.num_configs = num_configs
        self.num_batches = num_batches
        self.rows: list[Row] = []
        # None: whatever sys.stdout is when printing. Ray pickles its callbacks, which hold
        # this object, and an open stream does not pickle.
        self.out = out

    def say(self, text: str) -> None:
        print(text, file=self.out or sys.stdout, flush=True)

    def started(self, batch: int, num_configs: int, grouped: str) -> None:
        self.say(
            f"[batch {batch + 1}/{self.num_batches}] {num_configs} configuration(s) as one "
            f"program ({grouped}): compiling and training"
        )

    def finished(self, batch: int, rows: list[Row]) -> None:
        self.rows.extend(rows)
        best = ranked(self.rows)[0]
        self.say(
            f"[batch {batch + 1}/{self.num_batches}] done: {len(self.rows)}/{self.num_configs} "
            f"configurations | best so far: config {best.index} ({describe(best.values)}) "
            f"-> {format_return(best.result.mean, best.result.std)}"
        )
