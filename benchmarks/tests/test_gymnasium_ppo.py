"""``python -m benchmarks.gymnasium_ppo`` as a user runs it, tiny (Stable-Baselines3's row only
where it is installed: it is not a purerl dependency)."""

import pytest

from benchmarks.gymnasium_ppo import sb3_available
from benchmarks.tests.runs import run_module


@pytest.mark.slow
def test_tiny_bench_prints_both_purerl_rows_and_the_callback_cost():
    proc = run_module("benchmarks.gymnasium_ppo", "--total-timesteps", "512", "--repeats", "1",
                      "--warmup-timesteps", "256")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ")[0] for line in proc.stdout.splitlines() if line.startswith("| ")]
    expected = ["| purerl gymnasium", "| purerl gymnax"] + (["| sb3"] if sb3_available() else [])
    assert rows[1:] == expected
    assert "callback path / gymnax:" in proc.stdout
