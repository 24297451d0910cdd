"""Test defaults: CPU only, small sizes, deterministic hypothesis runs."""

import os

# Must be set before jax is imported anywhere in the test session.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import hypothesis  # noqa: E402

from purerl.runtime import configure_jax  # noqa: E402

configure_jax()

hypothesis.settings.register_profile("purerl", max_examples=40, deadline=None, derandomize=True)
hypothesis.settings.load_profile("purerl")
