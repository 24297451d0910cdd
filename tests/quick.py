"""XLA flags the test session compiles with (set in ``tests/conftest.py`` before JAX starts)."""

QUICK_COMPILE_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
"""LLVM's optimisation off and XLA:CPU's older loop emitters: the suite's small programs
compile in about a third of the default time and run slower, which a few updates do not feel.
``tests.helpers.default_level_env`` removes them for runs that must compile as users' runs do."""

USERS_EMITTERS = {"xla_cpu_use_fusion_emitters": True}
"""Compile options that undo the quick emitters for one program: with the older emitters,
programs of different chunk lengths round floats differently, so tests that compare such
programs bit for bit compile them with the fusion emitters users get
(``tests.helpers.emitters_as_users``)."""
