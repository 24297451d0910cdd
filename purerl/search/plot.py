"""Final return against each searched parameter, one panel per parameter (matplotlib, Agg)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from purerl.search.plan import format_value
from purerl.search.spec import ParamSpec, SearchSpec

PANEL_SIZE = (4.0, 3.2)
"""Inches per panel."""
LOG_SPAN = 100.0
"""A numeric grid or choice whose positive values span this factor is drawn on a log axis too
(values like 1e-4, 1e-3, 1e-2 are log-spaced)."""


def axis_positions(param: ParamSpec, values: list[Any]) -> tuple[np.ndarray, list | None, bool]:
    """x positions of ``values``; tick labels for categorical values; whether to use a log axis.

    Numbers are placed at their value. Anything else (strings, booleans, layer widths) is
    placed at the index of its first appearance, labelled with the value.
    """
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
    if numeric:
        x = np.asarray(values, np.float64)
        positive = (x > 0).all()
        spans = positive and x.max() / x.min() >= LOG_SPAN
        return x, None, param.kind == "loguniform" or bool(spans)
    labels = list(dict.fromkeys(format_value(v) for v in values))
    x = np.asarray([labels.index(format_value(v)) for v in values], np.float64)
    return x, labels, False


def plot_returns(path: Path, spec: SearchSpec, rows: list) -> None:
    """Writes one panel per searched parameter: each seed's final return as a small dot and
    each configuration's mean over seeds as a larger marker. With nothing searched (one
    configuration) the single panel is against the configuration index."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = list(spec.searched) or [ParamSpec("config", "grid", ())]
    ordered = sorted(rows, key=lambda r: r.index)
    cols = min(3, len(params))
    nrows = math.ceil(len(params) / cols)
    fig, axes = plt.subplots(
        nrows, cols, figsize=(PANEL_SIZE[0] * cols, PANEL_SIZE[1] * nrows), squeeze=False
    )
    for ax, param in zip(axes.flat, params, strict=False):
        values = [r.index if param.name == "config" else r.values[param.name] for r in ordered]
        draw_panel(ax, param, values, ordered)
    for ax in list(axes.flat)[len(params) :]:
        ax.set_visible(False)
    fig.suptitle(f"{spec.algo} on {spec.env}: final return ({spec.num_seeds} seed(s) each)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_panel(ax: Any, param: ParamSpec, values: list[Any], rows: list) -> None:
    x, labels, log = axis_positions(param, values)
    # Categorical positions get a little spread so seeds of one value do not hide each other.
    spread = 0.08 if labels is not None else 0.0
    for xi, row in zip(x, rows, strict=True):
        returns = np.asarray(row.result.returns, np.float64)
        offsets = np.linspace(-spread, spread, returns.size) if returns.size > 1 else 0.0
        ax.scatter(xi + offsets, returns, s=10, color="tab:blue", alpha=0.45, linewidths=0)
    means = np.asarray([row.result.mean for row in rows], np.float64)
    ax.scatter(x, means, s=42, color="tab:orange", edgecolors="black", linewidths=0.5, zorder=3)
    if log:
        ax.set_xscale("log")
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels, rotation=30 if len(labels) > 4 else 0)
    ax.set_xlabel(param.name + (" (log)" if log else ""))
    ax.set_ylabel("final return")
    ax.grid(alpha=0.3)
    ax.scatter([], [], s=10, color="tab:blue", label="seed")
    ax.scatter([], [], s=42, color="tab:orange", edgecolors="black", label="config mean")
    ax.legend(fontsize="small", loc="best")
