"""Benchmark tests run on the CPU, with the process settings of the benchmarks."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from purerl.runtime import configure_jax  # noqa: E402

configure_jax()
