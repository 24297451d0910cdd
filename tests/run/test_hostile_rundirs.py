"""Hostile run directories: this module builds them from one tiny run trained here (copied per
test, then its files rewritten) and checks the outcome of opening each the way a user would
(``purerl eval``, ``purerl train --resume`` and ``--config``, ``purerl.load``): one ``error:``
line and exit code 2 (the API's exception), and nothing of the run's choosing imported, called
or written.

Here: a config.json whose environment names a ``module:factory`` runs that code only when the
user names the factory again or trusts the run (``purerl/run/trust.py``), a module shipped
inside the run is never imported from it, and a factory that exits is one line.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import purerl
from purerl.run.trust import UntrustedCodeError
from tests.helpers import TINY_ARGS, one_error_line, run_cli, tree_digest

LEGIT = "legit_env:make"
"""The factory the shared run trained on: gymnax's CartPole, from a module of the test's own."""

MODULES = {
    "legit_env": "import gymnax\n\n\ndef make():\n    return gymnax.make('CartPole-v1')\n",
    "exiting_env": "import sys\n\n\ndef make():\n    sys.exit(3)\n",
    "exiting_import": "import sys\n\nsys.exit(3)\n\n\ndef make():\n    pass\n",
}
"""Modules of the user's own, in a folder that is not on ``sys.path``."""

TRIPWIRE = """import pathlib

pathlib.Path({marker!r}).write_text("imported")


def make():
    pathlib.Path({marker!r}).write_text("called")
"""
"""A module that leaves ``marker`` behind when it is imported or its factory called."""


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("code")
    for name, text in MODULES.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory, code_dir) -> Path:
    """A finished tiny PPO run on ``legit_env:make``, typed on the command line in the module's
    folder (found there, as the guide says, without staying on ``sys.path``)."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    path = list(sys.path)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(code_dir)
        result = run_cli("train", "ppo", "--env", LEGIT, *TINY_ARGS, "--run-dir", run_dir)
    assert result.code == 0, result.stderr
    assert sys.path == path
    sys.modules.pop("legit_env", None)
    return run_dir


@pytest.fixture(autouse=True)
def fresh_modules():
    """Every test imports the user's modules afresh, and leaves none behind."""
    names = [*MODULES, "evil_env", "other_env"]
    for name in names:
        sys.modules.pop(name, None)
    yield
    for name in names:
        sys.modules.pop(name, None)


def copy_run(trained: Path, folder: Path, env: str | None = None) -> Path:
    """A copy of the shared run, its config.json naming ``env`` if given."""
    run_dir = folder / "run"
    shutil.copytree(trained, run_dir)
    if env is not None:
        config = json.loads((run_dir / "config.json").read_text())
        config["config"]["env"] = env
        (run_dir / "config.json").write_text(json.dumps(config))
    return run_dir


@pytest.fixture
def empty_tmpdir(tmp_path, monkeypatch) -> Path:
    """``TMPDIR`` (and ``tempfile``'s cached choice) pointed at an empty folder."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


OPENERS = {
    "eval": lambda run, new: run_cli("eval", run),
    "resume": lambda run, new: run_cli("train", "--resume", run),
    "config": lambda run, new: run_cli("train", "--config", run, "--run-dir", new),
    "dry run": lambda run, new: run_cli("train", "ppo", "--config", run, "--dry-run"),
}
"""The commands that open a run directory and build its environment."""


@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_a_recorded_factory_is_not_called_by_the_commands(trained, tmp_path, empty_tmpdir, opener):
    run_dir = copy_run(trained, tmp_path, env="tempfile:mkdtemp")
    before = tree_digest(run_dir)
    result = OPENERS[opener](run_dir, tmp_path / "new")
    one_error_line(result, "records the environment factory tempfile:mkdtemp")
    assert "--env tempfile:mkdtemp" in result.stderr and "--trust-run-code" in result.stderr
    assert list(empty_tmpdir.iterdir()) == []
    assert tree_digest(run_dir) == before and not (tmp_path / "new").exists()


def test_a_recorded_factory_is_not_called_by_load(trained, tmp_path, empty_tmpdir):
    run_dir = copy_run(trained, tmp_path, env="tempfile:mkdtemp")
    with pytest.raises(UntrustedCodeError) as refused:
        purerl.load(run_dir)
    message = str(refused.value)
    assert "tempfile:mkdtemp" in message and "trust_run_code=True" in message
    assert "env='tempfile:mkdtemp'" in message
    assert list(empty_tmpdir.iterdir()) == []


def test_a_recorded_sys_exit_is_refused_not_a_silent_success(trained, tmp_path):
    run_dir = copy_run(trained, tmp_path, env="sys:exit")
    one_error_line(run_cli("eval", run_dir), "records the environment factory sys:exit")


def evil_run(trained: Path, folder: Path) -> tuple[Path, Path]:
    """A copy of the run that ships ``evil_env.py`` and names ``evil_env:make``; the marker
    file the module would leave."""
    run_dir = copy_run(trained, folder, env="evil_env:make")
    marker = folder / "evil-was-here"
    (run_dir / "evil_env.py").write_text(TRIPWIRE.format(marker=str(marker)), encoding="utf-8")
    return run_dir, marker


def test_a_module_shipped_in_the_run_is_not_imported_from_it(trained, tmp_path, monkeypatch):
    run_dir, marker = evil_run(trained, tmp_path)
    monkeypatch.chdir(run_dir)
    path = list(sys.path)
    one_error_line(run_cli("eval", "."), "records the environment factory evil_env:make")
    with pytest.raises(UntrustedCodeError, match="evil_env:make"):
        purerl.load(".")
    # Trusting the run imports from sys.path as it is: neither the run's directory nor the
    # current one (here the same) is added to it.
    one_error_line(
        run_cli("eval", ".", "--trust-run-code"), "evil_env:make: no module named 'evil_env'"
    )
    with pytest.raises(purerl.envs.InvalidEnvError, match="no module named 'evil_env'"):
        purerl.load(".", trust_run_code=True)
    assert not marker.exists() and "evil_env" not in sys.modules and sys.path == path


@pytest.mark.slow
def test_the_console_script_in_the_run_directory_does_not_import_its_module(trained, tmp_path):
    """The issue's own case: ``cd RUN && purerl eval .``, in a process of its own."""
    run_dir, marker = evil_run(trained, tmp_path)
    script = Path(sys.executable).with_name("purerl")
    result = subprocess.run(
        [str(script), "eval", "."], cwd=run_dir, capture_output=True, text=True, timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
    one_error_line(result, "records the environment factory evil_env:make")
    assert not marker.exists()


def test_another_factory_than_the_runs_is_refused_and_not_imported(trained, tmp_path):
    marker = tmp_path / "other-was-here"
    (tmp_path / "other_env.py").write_text(TRIPWIRE.format(marker=str(marker)), encoding="utf-8")
    run_dir = copy_run(trained, tmp_path)
    one_error_line(
        run_cli("eval", run_dir, "--env", "other_env:make"),
        f"trained on {LEGIT}, not on other_env:make",
    )
    one_error_line(
        run_cli("train", "--resume", run_dir, "--env", "other_env:make"),
        "--env cannot change when resuming",
    )
    with pytest.raises(purerl.config.ConfigError, match=f"trained on {LEGIT}, not on other_env"):
        purerl.load(run_dir, env="other_env:make")
    assert not marker.exists() and "other_env" not in sys.modules


@pytest.mark.slow
def test_naming_the_factory_again_opens_the_run(trained, tmp_path, monkeypatch, code_dir):
    run_dir = copy_run(trained, tmp_path)
    monkeypatch.chdir(code_dir)  # found in the current directory, as when it was trained
    path = list(sys.path)
    result = run_cli("eval", run_dir, "--env", LEGIT, "--episodes", "2")
    assert result.code == 0 and "mean return" in result.stdout, result.stderr
    resumed = run_cli("train", "--resume", run_dir, "--env", LEGIT)
    assert resumed.code == 0 and "already complete" in resumed.stdout, resumed.stderr
    again = run_cli("train", "--config", run_dir, "--env", LEGIT, "--dry-run")
    assert again.code == 0 and "dry run" in again.stdout, again.stderr
    policy = purerl.load(run_dir, env=LEGIT)
    assert policy(np.zeros(4, np.float32)) in (0, 1)
    assert sys.path == path


@pytest.mark.slow
def test_trusting_the_run_opens_it_from_sys_path(trained, tmp_path, monkeypatch, code_dir):
    run_dir = copy_run(trained, tmp_path)
    monkeypatch.chdir(code_dir)  # the current directory is not searched for a trusted factory
    one_error_line(
        run_cli("eval", run_dir, "--trust-run-code"), "no module named 'legit_env'; put its"
    )
    monkeypatch.syspath_prepend(str(code_dir))
    result = run_cli("eval", run_dir, "--trust-run-code", "--episodes", "2")
    assert result.code == 0 and "mean return" in result.stdout, result.stderr
    resumed = run_cli("train", "--resume", run_dir, "--trust-run-code")
    assert resumed.code == 0 and "already complete" in resumed.stdout, resumed.stderr
    policy = purerl.load(run_dir, trust_run_code=True)
    assert policy(np.zeros(4, np.float32)) in (0, 1)


def test_trust_without_a_run_to_trust_is_refused():
    one_error_line(run_cli("train", "ppo", "--trust-run-code"), "--trust-run-code goes with")


@pytest.mark.parametrize(
    "env, message",
    [
        ("exiting_env:make", "exiting_env:make() called sys.exit(3) instead of returning"),
        ("exiting_import:make", "exiting_import:make: importing exiting_import raised SystemExit"),
        ("sys:exit", "sys:exit() called sys.exit(None)"),
    ],
)
def test_a_factory_that_exits_is_one_line(tmp_path, monkeypatch, code_dir, env, message):
    monkeypatch.chdir(code_dir)
    result = run_cli("train", "ppo", "--env", env, "--run-dir", tmp_path / "new")
    one_error_line(result, message)
    assert not (tmp_path / "new").exists()
