"""Test defaults: CPU only, small sizes, deterministic hypothesis runs, a shared compile cache."""

import os
import tempfile

# Must be set before jax is imported anywhere in the test session. The environment variables
# reach the CLI subprocesses the tests start as well.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Many tests build the same small programs again (fresh jit objects over equal configs); JAX's
# persistent cache turns those repeat compiles into loads. A fresh directory per session keeps
# runs independent of each other.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="purerl-jax-cache-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")

import hypothesis  # noqa: E402

from purerl.runtime import configure_jax  # noqa: E402

configure_jax()

hypothesis.settings.register_profile("purerl", max_examples=40, deadline=None, derandomize=True)
hypothesis.settings.load_profile("purerl")
