"""``python -m benchmarks.brax_ppo`` as a user runs it (its ``__main__``, in this process), tiny."""

import pytest

from benchmarks.tests.runs import run_module


def test_brax_bench_help_lists_flags():
    proc = run_module("benchmarks.brax_ppo", "--help")
    assert proc.returncode == 0
    for flag in ["--num-envs", "--rollout-len", "--updates", "--repeats", "--warmup"]:
        assert flag in proc.stdout


@pytest.mark.slow
@pytest.mark.brax
def test_tiny_brax_bench_prints_both_rows_and_every_epoch():
    pytest.importorskip("brax.training", reason="needs the brax extra: pip install 'purerl[brax]'")
    proc = run_module(
        "benchmarks.brax_ppo",
        *("--num-envs", "8", "--rollout-len", "4", "--num-minibatches", "2", "--num-epochs", "1"),
        *("--hidden-sizes", "8", "--updates", "1", "--warmup", "1", "--repeats", "2"),
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(" | ")[0] for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert rows == ["| impl", "| purerl", "| brax.training ppo"]
    epochs = next(line for line in proc.stdout.splitlines() if line.startswith("Brax's steps/s"))
    assert len(epochs.split(": ")[1].split(", ")) == 3  # one warm-up, two timed
