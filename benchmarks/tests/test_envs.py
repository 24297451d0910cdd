"""``python -m benchmarks.envs`` as a user runs it (its ``__main__``, in this process), tiny."""

import pytest

from benchmarks.tests.runs import run_module


def run_bench(*args):
    return run_module("benchmarks.envs", *args)


@pytest.mark.slow
def test_tiny_env_bench_prints_a_row_per_env_and_size():
    proc = run_bench(
        *("--num-envs", "1", "3", "--steps-per-call", "60", "--max-scan-steps", "16"),
        *("--repeats", "1", "--numpy-steps", "50", "--height", "4", "--width", "5"),
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| Snake 4x5", "JAX", "1"],
        ["| CartPole-v1", "JAX", "1"],
        ["| Snake 4x5", "JAX", "3"],
        ["| CartPole-v1", "JAX", "3"],
        ["| Snake 4x5", "NumPy reference", "1"],
        ["| CartPole-v1", "gymnasium", "1"],
    ]
    # 3 games x 16 scan steps (60 // 3 = 20, capped at 16).
    assert rows[2].split(" | ")[3] == "16"
    assert "peak resident memory" in proc.stdout


def test_env_bench_help_lists_flags():
    proc = run_bench("--help")
    assert proc.returncode == 0
    for flag in ["--num-envs", "--steps-per-call", "--repeats", "--obs-mode", "--numpy-steps"]:
        assert flag in proc.stdout
