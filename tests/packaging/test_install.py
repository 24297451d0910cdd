"""purerl as users install it: a wheel with everything the command needs, and the ``purerl``
console command working from a fresh virtual environment outside the repository."""

import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.helpers import ROOT

SOURCES = ["pyproject.toml", "README.md", "LICENSE", "purerl"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (so no build files land in the checkout)."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("purerl-*.whl")
    return built


def test_the_wheel_holds_the_package_and_its_command_but_not_the_checkout(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ["purerl/py.typed", "purerl/cli/train.py", "purerl/presets/ppo.py",
                   "purerl/algos/dqn.py", "purerl/envs/snake.py"]:  # fmt: skip
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("experiments/", "benchmarks/", "tests/"))]
    (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
    assert "purerl = purerl.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    (metadata,) = [n for n in names if n.endswith("METADATA")]
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text and "Provides-Extra: wandb" in text
    assert any(n.endswith("licenses/LICENSE") for n in names)


def test_the_wheel_carries_the_version_and_classifiers_of_pyproject(wheel):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    lines = archive.read(metadata).decode().splitlines()
    assert f"Version: {project['version']}" in lines
    assert wheel.name.startswith(f"purerl-{project['version']}-")
    assert [
        line.removeprefix("Classifier: ") for line in lines if line.startswith("Classifier: ")
    ] == project["classifiers"]
    # Setuptools refuses License :: classifiers beside an SPDX license expression.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


@pytest.mark.slow
@pytest.mark.long
def test_the_installed_command_trains_from_outside_the_repository(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # The dependencies come from this test environment; purerl itself only from the wheel.
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [python, "-c", "import purerl; print(purerl.__file__)"],
        capture_output=True, text=True, cwd=elsewhere, check=True,
    ).stdout  # fmt: skip
    assert where.startswith(str(venv)), where
    proc = subprocess.run(
        [venv / "bin" / "purerl", "train", "ppo", "--env", "CartPole-v1",
         "--total-timesteps", "20000", "--no-progress"],
        capture_output=True, text=True, cwd=elsewhere, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (elsewhere / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["algo"] == "ppo" and summary["env_steps_per_seed"] == 19_968
