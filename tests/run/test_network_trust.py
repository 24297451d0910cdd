"""A run with a network of the user's (``--network module:attr``, or a module object from Python)
opened the ways a user opens runs: ``purerl eval``, ``purerl train --resume`` and ``--config``,
``purerl.load``. The recorded network is imported only when the user names it again or trusts
the run (``purerl/run/trust.py``); otherwise one ``error:`` line naming it and the flag, exit
code 2, and nothing imported."""

import json
import shutil
import sys
from pathlib import Path

import flax.linen as nn
import numpy as np
import pytest

import purerl
from purerl.algos.torso import InvalidNetworkError
from purerl.config import ConfigError
from purerl.run.trust import UntrustedCodeError
from tests.helpers import TINY_ARGS, one_error_line, run_cli

NETWORK = "tests_module:Torso"
MODULE = """import flax.linen as nn


class Torso(nn.Module):
    @nn.compact
    def __call__(self, obs):
        return nn.tanh(nn.Dense(8)(obs.reshape(obs.shape[0], -1)))
"""
"""The user's module, in a folder that is not on ``sys.path``."""


@pytest.fixture(scope="module")
def code_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("code")
    (folder / "tests_module.py").write_text(MODULE, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory, code_dir) -> Path:
    """A finished tiny PPO run with ``--network tests_module:Torso``, typed in the module's
    folder (found there, without staying on ``sys.path``)."""
    run_dir = tmp_path_factory.mktemp("trained") / "run"
    path = list(sys.path)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(code_dir)
        args = ("--network", NETWORK, "--run-dir", run_dir)
        result = run_cli("train", "ppo", "--env", "CartPole-v1", *TINY_ARGS, *args)
    assert result.code == 0, result.stderr
    assert sys.path == path
    sys.modules.pop("tests_module", None)
    return run_dir


@pytest.fixture(autouse=True)
def fresh_module():
    sys.modules.pop("tests_module", None)
    yield
    sys.modules.pop("tests_module", None)


def copy_run(trained: Path, folder: Path, network: str | None = None) -> Path:
    """A copy of the shared run, its config.json naming ``network`` if given."""
    run_dir = folder / "run"
    shutil.copytree(trained, run_dir)
    if network is not None:
        config = json.loads((run_dir / "config.json").read_text())
        config["config"]["network"] = network
        (run_dir / "config.json").write_text(json.dumps(config))
    return run_dir


OPENERS = {
    "eval": lambda run, new: run_cli("eval", run),
    "resume": lambda run, new: run_cli("train", "--resume", run),
    "config": lambda run, new: run_cli("train", "--config", run, "--run-dir", new),
    "dry run": lambda run, new: run_cli("train", "ppo", "--config", run, "--dry-run"),
}


@pytest.mark.parametrize("opener", sorted(OPENERS))
def test_a_recorded_network_is_not_imported_by_the_commands(trained, tmp_path, code_dir, opener):
    run_dir = copy_run(trained, tmp_path)
    result = OPENERS[opener](run_dir, tmp_path / "new")
    one_error_line(result, f"records the network {NETWORK}, code that purerl would import")
    assert f"--network {NETWORK}" in result.stderr and "--trust-run-code" in result.stderr
    assert "tests_module" not in sys.modules and not (tmp_path / "new").exists()
    with pytest.raises(UntrustedCodeError, match=f"network='{NETWORK}'.*trust_run_code=True"):
        purerl.load(run_dir)
    assert "tests_module" not in sys.modules


def test_another_network_than_the_runs_is_refused_and_not_imported(trained, tmp_path):
    run_dir = copy_run(trained, tmp_path)
    one_error_line(
        run_cli("eval", run_dir, "--network", "other_module:Torso"),
        f"trained with the network {NETWORK}, not other_module:Torso",
    )
    one_error_line(
        run_cli("train", "--resume", run_dir, "--network", "other_module:Torso"),
        "--network cannot change when resuming",
    )
    mlp_run = copy_run(trained, tmp_path / "mlp", network="mlp")
    one_error_line(run_cli("eval", mlp_run, "--network", NETWORK), "trained purerl's mlp network")
    with pytest.raises(ConfigError, match=f"trained with the network {NETWORK}, not other"):
        purerl.load(run_dir, network="other_module:Torso")
    assert "tests_module" not in sys.modules and "other_module" not in sys.modules


@pytest.mark.slow
def test_naming_the_network_again_or_trusting_the_run_opens_it(
    trained, tmp_path, monkeypatch, code_dir
):
    run_dir = copy_run(trained, tmp_path)
    monkeypatch.chdir(code_dir)  # found in the current directory, as when it was trained
    result = run_cli("eval", run_dir, "--network", NETWORK, "--episodes", "2")
    assert result.code == 0 and "mean return" in result.stdout, result.stderr
    resumed = run_cli("train", "--resume", run_dir, "--network", NETWORK)
    assert resumed.code == 0 and "already complete" in resumed.stdout, resumed.stderr
    again = run_cli("train", "--config", run_dir, "--network", NETWORK, "--dry-run")
    assert again.code == 0 and "dry run" in again.stdout, again.stderr
    policy = purerl.load(run_dir, network=NETWORK)
    assert policy(np.zeros(4, np.float32)) in (0, 1)
    # Trusting the run imports from sys.path as it is, never the current directory.
    sys.modules.pop("tests_module")
    one_error_line(
        run_cli("eval", run_dir, "--trust-run-code"), "no module named 'tests_module'; put its"
    )
    monkeypatch.syspath_prepend(str(code_dir))
    result = run_cli("eval", run_dir, "--trust-run-code", "--episodes", "2")
    assert result.code == 0 and "mean return" in result.stdout, result.stderr
    assert purerl.load(run_dir, trust_run_code=True)(np.zeros(4, np.float32)) in (0, 1)


class Torso(nn.Module):
    @nn.compact
    def __call__(self, obs):
        return nn.tanh(nn.Dense(8)(obs))


class Other(Torso):
    pass


@pytest.mark.slow
def test_a_module_object_is_recorded_and_asked_for_again(tmp_path):
    run_dir = tmp_path / "run"
    tiny = {"num_envs": 4, "rollout_len": 8, "buffer_size": 64, "batch_size": 16}
    tiny |= {"learning_starts": 32, "total_timesteps": 192}  # DQN's smoke configuration
    result = purerl.train("dqn", env="CartPole-v1", network=Torso(), run_dir=run_dir, **tiny)
    recorded = f"object:{__name__}.Torso"
    assert result.config.network == recorded
    one_error_line(run_cli("eval", run_dir), f"the network {recorded} was given to purerl as")
    with pytest.raises(InvalidNetworkError, match="pass it again"):
        purerl.load(run_dir)
    with pytest.raises(InvalidNetworkError, match="pass it again"):
        purerl.load(run_dir, network="tests_module:Torso")
    with pytest.raises(ConfigError, match=f"not object:{__name__}.Other"):
        purerl.load(run_dir, network=Other())
    assert purerl.load(run_dir, network=Torso())(np.zeros(4, np.float32)) in (0, 1)
