"""Test defaults: CPU only, deterministic hypothesis runs, a shared compile cache, and the
session-scoped runs that many tests read (trained once, copied where a test changes them)."""

import gc
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

# Must be set before jax creates its backend anywhere in the test session; the variables reach
# the subprocesses the tests start as well.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Many tests build the same small programs again (fresh jit objects over equal configs); JAX's
# persistent cache turns those repeat compiles into loads. A fresh directory per session keeps
# runs independent of each other. Programs that compile in under 0.2 s stay out of it: writing
# and reading back the many tiny ones cost more than compiling them again (the invariants
# module: 129.7 s caching every program, 114.8 s from 0.2 s, 119.5 s from 0.1, 128.0 s from 0.5).
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", tempfile.mkdtemp(prefix="purerl-jax-cache-"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
# The CLI's own cache directory stays out of the user's home during tests.
os.environ.setdefault("PURERL_CACHE_DIR", os.environ["JAX_COMPILATION_CACHE_DIR"])
# Runs draw no learning curves (about 0.2 s a run in process, 0.7 s in a new one, matplotlib's
# import included): the tests of the curves, and the session's shared runs, ask for them
# (``tests.helpers.with_curves``).
os.environ.setdefault("PURERL_CURVES", "0")
from purerl.cli.doctor import quick_compiles  # noqa: E402 (imports no JAX)

# The suite compiles hundreds of small programs and runs most of them for a few updates: with
# LLVM's optimisation off and XLA:CPU's older loop emitters instead of its fusion emitters, it
# compiles them in about half the time of optimisation off alone (a third of the default) and
# runs them slower, which a few updates do not feel. The learning runs, which run long, start
# their own processes with the defaults (``tests.helpers.learn``), the settings users train with.
# These are ``purerl doctor --quick``'s settings (``QUICK_XLA_FLAGS``); flags already set win.
quick_compiles()
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Parallel workers share the cores: each keeps to one core of its own (and so do the
    # processes it starts), before JAX sizes its CPU thread pool from the cores it may use.
    # XLA:CPU otherwise hands the small operations of these programs to a thread pool whose
    # hand-offs cost more than the operations, and the workers' threads fight over the cores.
    worker = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[worker % len(cores)]})
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
    ).strip()

import hypothesis  # noqa: E402
import jax  # noqa: E402
import pytest  # noqa: E402

from purerl.run.rundir import Summary, read_summary  # noqa: E402
from purerl.runtime import configure_jax  # noqa: E402
from tests.helpers import ROOT, TINY_ARGS, default_level_env, run_cli, with_curves  # noqa: E402

configure_jax()
# The backend starts here, with one CPU device, whatever test runs first: a test that asks for
# more (--num-devices on a CPU) then gets the error a started process gets, and never turns its
# worker into a multi-device process for the tests after it.
jax.devices()

hypothesis.settings.register_profile("purerl", max_examples=40, deadline=None, derandomize=True)
hypothesis.settings.load_profile("purerl")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Runs the modules holding a ``long`` test first, then those holding a ``slow`` one, and
    the modules of fast tests last, each module kept whole.

    pytest-xdist hands each worker a contiguous block of the collection and lets idle workers
    steal from the end of the others' blocks, so a 40-60 s test near the end of a block keeps
    one worker busy long after the other ran out (measured: the Ray search test, last in its
    block, ended the suite 40 s after the other worker). Started first, the long tests overlap
    the short ones, and the many sub-second fast tests at the end even the workers out (the
    collection used to end with ``benchmarks/tests``, seconds a test). Module order is kept
    otherwise, so module fixtures are still set up once. This hook sees the whole session's
    items, ``benchmarks/tests`` included.
    """
    with_long = {item.path for item in items if item.get_closest_marker("long")}
    with_slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in with_long) + (item.path not in with_slow))


def pytest_collection_finish(session):
    """Freezes what the collection loaded (every test module, JAX, the libraries) out of the
    garbage collector's reach, as the ``purerl`` command does after its imports: each full
    collection during the session then walks what the tests made, not every module again."""
    gc.collect()
    gc.freeze()


class SessionRun(NamedTuple):
    run_dir: Path
    summary: Summary


def built_once(tmp_path_factory, name: str, build: Callable[[Path], Path]) -> Path:
    """The run directory ``build(folder)`` makes, made once per test session where that costs
    no waiting.

    Parallel workers share their session's temporary root: the first worker to ask builds
    there and leaves a marker when done; a later worker reads that directory, and one that asks
    while it is still being built builds its own copy rather than sit idle.
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return build(tmp_path_factory.mktemp(name))
    shared = tmp_path_factory.getbasetemp().parent
    done = shared / f"{name}.done"
    try:
        os.close(os.open(shared / f"{name}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        if done.is_file():
            return Path(done.read_text(encoding="utf-8"))
        return build(tmp_path_factory.mktemp(name))
    run_dir = build(tmp_path_factory.mktemp(name))
    partial = shared / f"{name}.done.tmp"
    partial.write_text(str(run_dir), encoding="utf-8")
    os.replace(partial, done)
    return run_dir


@pytest.fixture
def curves():
    """This test's runs draw their learning curves (``tests.helpers.with_curves``)."""
    with with_curves():
        yield


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A finished tiny PPO run (2 seeds, 6 updates) with a checkpoint after every update,
    trained through the command line (once per session, ``built_once``). Copy it before
    changing it."""
    return built_once(tmp_path_factory, "tiny", train_tiny_run)


def train_tiny_run(folder: Path) -> Path:
    run_dir = folder / "run"
    with with_curves():
        result = run_cli(
            "train",
            "ppo",
            *TINY_ARGS,
            "--num-seeds",
            "2",
            "--run-dir",
            str(run_dir),
            "--checkpoint-every",
            "1",
            "--keep-checkpoints",
            "10",
            "--updates-per-chunk",
            "1",
        )
    assert result.code == 0, result.stderr
    assert "final mean return" in result.stdout
    return run_dir


def readme_example() -> str:
    """The Python example of the README (its first ``python`` code block)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.fixture(scope="session")
def cartpole_run(tmp_path_factory) -> SessionRun:
    """The README's Python example, run as written in a fresh directory: PPO's CartPole-v1
    preset, 4 seeds x 5e5 steps, through ``purerl.train(run_dir=...)`` (once per session,
    ``built_once``). The learning test's run, and a trained agent for the evaluation, policy
    and plot tests; its summary is the one the run wrote."""
    run_dir = built_once(tmp_path_factory, "readme", run_readme_example)
    summary = read_summary(run_dir)
    assert summary is not None, f"the README example left no summary.json in {run_dir}"
    return SessionRun(run_dir, summary)


README_CHECK = """
from purerl.run.rundir import read_summary
assert result.run_dir.is_absolute(), "the example's run directory must come back absolute"
assert read_summary(result.run_dir) == result.summary
print(result.run_dir)
"""


def run_readme_example(folder: Path) -> Path:
    """The example as a user runs it: a fresh Python process in an empty directory, compiled at
    XLA's default optimisation level (it is also the PPO learning test's run)."""
    proc = subprocess.run(
        [sys.executable, "-c", readme_example() + README_CHECK],
        capture_output=True, text=True, cwd=folder, env=default_level_env(), timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(proc.stdout.strip().splitlines()[-1])


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """A parallel worker ends here, once it has reported every result (its exit status went
    to the controller with them): Python's own shutdown of a worker that compiled hundreds of
    programs only delays the end of the session (measured: the session ended 10.3 s after its
    last test; 1.5 s with this)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
