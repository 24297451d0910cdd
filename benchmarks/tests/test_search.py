"""``python -m benchmarks.search`` as a user runs it (its ``__main__``, in this process), tiny."""

import pytest

from benchmarks.tests.runs import run_module


def run_bench(*args):
    return run_module("benchmarks.search", *args)


@pytest.mark.slow
@pytest.mark.long
def test_tiny_search_bench_prints_single_sequential_and_sweep_rows():
    proc = run_bench("--num-configs", "2", "--total-timesteps", "1024", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[:2] for row in rows] == [
        ["| one configuration", "1"],
        ["| 2 x one configuration, sequential (one compile)", "2"],
        ["| sweep, one program", "2"],
    ]
    assert "1,024 steps per configuration" in proc.stdout
    assert "peak resident memory" in proc.stdout


def test_search_bench_help_lists_flags():
    proc = run_bench("--help")
    assert proc.returncode == 0
    for flag in ["--num-configs", "--total-timesteps", "--repeats", "--env"]:
        assert flag in proc.stdout
