"""Trial graphs and run comparisons: valid, non-blank PNGs of the documented size."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from purerl.run.plots import NotARunError, compare_runs, write_trial_graphs
from purerl.run.rundir import GRAPH_FILES
from tests.helpers import ROOT, learning_curves, png_is_a_plot, write_synthetic_run


@pytest.fixture
def run_copy(tiny_run, tmp_path):
    """The session's tiny run, copied (graphs are written into the run directory)."""
    shutil.copytree(tiny_run, tmp_path / "ppo-tiny")
    return tmp_path / "ppo-tiny"


def test_trial_graphs_of_a_real_run(run_copy):
    paths = write_trial_graphs(run_copy, window=3)
    assert [p.name for p in paths] == list(GRAPH_FILES)
    assert all(p.parent == run_copy for p in paths)
    for path in paths:
        png_is_a_plot(path)
    assert not list(run_copy.glob("*.tmp"))  # written aside, then renamed


def test_trial_graphs_of_a_run_in_progress_with_gaps(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", learning_curves(3, 60), finished=False)
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write('{"update": 61, "env_st')
    for path in write_trial_graphs(run_dir):  # default window 100 > 60 updates
        png_is_a_plot(path)


def test_compare_runs_overlays_runs_and_returns_rows(run_copy, tmp_path):
    other = write_synthetic_run(tmp_path / "synthetic", learning_curves(2, 40), finished=False)
    out = tmp_path / "compare.png"
    rows = compare_runs([run_copy, other], out, window=5)
    png_is_a_plot(out)
    assert [r["run"] for r in rows] == ["ppo-tiny", "synthetic"]
    assert [r["status"] for r in rows] == ["finished", "in progress"]
    assert rows[0]["seeds"] == 2 and rows[0]["frames"] == 384 and rows[1]["frames"] == 4000
    assert rows[0]["final_mean_return"] > 0 and rows[1]["best_mean_return"] > 100


def test_compare_checks_every_directory_before_drawing(run_copy, tmp_path):
    out = tmp_path / "compare.png"
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotARunError, match="no config.json"):
        compare_runs([run_copy, tmp_path / "empty"], out)
    assert not out.exists()


def test_a_run_without_any_finished_episode_still_plots(tmp_path):
    run_dir = write_synthetic_run(tmp_path / "run", np.full((2, 8), np.nan), finished=False)
    paths = write_trial_graphs(run_dir)
    assert all(p.exists() for p in paths)


def test_drawing_selects_no_backend_and_leaves_no_pyplot_figures(tmp_path):
    # In a fresh interpreter: purerl.run.plots draws on its own Agg canvases, so a user's
    # backend choice and pyplot's figure list are left as they were.
    code = (
        "import pathlib, numpy as np, matplotlib\n"
        "backend_before = matplotlib.rcParams._get_backend_or_none()\n"
        "from purerl.run.plots import write_trial_graphs\n"
        "from tests.helpers import write_synthetic_run\n"
        f"write_trial_graphs(write_synthetic_run(pathlib.Path({str(tmp_path / 'r')!r}),"
        " np.ones((1, 3))))\n"
        "assert matplotlib.rcParams._get_backend_or_none() == backend_before\n"
        "import matplotlib.pyplot as plt\n"
        "assert plt.get_fignums() == []\n"
    )
    # Without MPLBACKEND the backend starts unresolved, which is what an import could change.
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
