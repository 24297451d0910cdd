"""``python -m benchmarks.mujoco`` as a user runs it (its ``__main__``, in this process), tiny."""

import pytest

from benchmarks.tests.runs import run_module

ROWS = [
    "envpool host",
    "envpool xla",
    "purerl rollout",
    "purerl update",
    "reference rollout",
    "reference update",
]


@pytest.mark.slow
@pytest.mark.envpool
def test_tiny_mujoco_bench_prints_every_row_and_the_comparison():
    pytest.importorskip("envpool")
    proc = run_module(
        "benchmarks.mujoco",
        *("--num-envs", "2", "--seeds", "1", "--rollout-len", "8", "--num-epochs", "1"),
        *("--num-minibatches", "2", "--updates", "1", "--repeats", "1"),
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:3] for row in rows] == [["| 2", "1", name] for name in ROWS]
    for row in rows:
        assert float(row.split(" | ")[4].replace(",", "")) > 0  # steps/s
    assert "2 env(s) x 1 seed(s): purerl over reference: update " in proc.stdout
    assert "peak resident memory" in proc.stdout


def test_mujoco_bench_help_lists_flags():
    proc = run_module("benchmarks.mujoco", "--help")
    assert proc.returncode == 0
    for flag in ["--num-envs", "--seeds", "--updates", "--repeats", "--rollout-len"]:
        assert flag in proc.stdout
