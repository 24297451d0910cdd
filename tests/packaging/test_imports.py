"""Importing purerl has no side effects: no JAX backend, no environment library, no process
settings, until something is made or a command runs."""

import subprocess
import sys

from tests.helpers import ROOT

CHECK = """
import sys
import jax._src.xla_bridge as xla_bridge
import importlib, pkgutil
import purerl
modules = [m.name for m in pkgutil.walk_packages(purerl.__path__, "purerl.")]
assert "purerl.run.session" in modules and "purerl.core.loop" in modules, modules
for name in modules:
    if name != "purerl.__main__":
        importlib.import_module(name)
from purerl import algos
for name in algos.names():
    algos.get(name).presets  # the presets import the algorithms and EnvPool's game list
assert not xla_bridge._backends, f"a JAX backend was created: {list(xla_bridge._backends)}"
heavy = ("gymnax", "envpool", "brax", "mujoco", "orbax.checkpoint", "ray")
heavy = [m for m in heavy if m in sys.modules]
assert not heavy, f"imported at import time: {heavy}"
import jax
assert jax.config.read("jax_cpu_enable_async_dispatch"), "a process setting changed at import"
print("clean")
"""


def run_snippet(code: str) -> str:
    """What ``python -c CODE`` printed, in a fresh process; it must exit 0."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_imports_create_no_backend_and_load_no_environment_library():
    assert run_snippet(CHECK) == "clean"


GYMNAX = """
import sys
from purerl import envs
env = envs.make("Catch-bsuite", num_envs=2)
loaded = [m for m in ("seaborn", "matplotlib") if m in sys.modules]
assert not loaded, f"gymnax's drawing libraries were loaded at start: {loaded}"
import gymnax.environments.misc.pong as pong
import gymnax.environments.bsuite.catch as catch
assert len(pong.sns.color_palette("cubehelix", 3)) == 3  # the real seaborn, loaded on first use
assert catch.plt.figure is sys.modules["matplotlib.pyplot"].figure
assert pong.colors.to_hex((1, 0, 0)) == "#ff0000"  # ``from matplotlib import colors``
import seaborn
assert seaborn.color_palette is pong.sns.color_palette
print("deferred")
"""


def test_gymnax_loads_its_drawing_libraries_only_when_they_are_used():
    assert run_snippet(GYMNAX) == "deferred"


THREADS = """
from concurrent.futures import ThreadPoolExecutor
from purerl import envs
with ThreadPoolExecutor(4) as pool:
    made = list(pool.map(lambda i: envs.make("CartPole-v1", num_envs=2), range(4)))
print(len(made))
"""


def test_environments_made_from_several_threads_at_once_import_gymnax_whole():
    assert run_snippet(THREADS) == "4"
