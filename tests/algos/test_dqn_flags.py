"""Every DQNConfig field must change what a run does: a test fails if a flag is dropped.

Each case changes one field and checks that two updates from the same seed end with different
parameters (or shapes).
"""

import dataclasses

import pytest

from purerl.algos.dqn import DQNConfig, DQNHparams, make_dqn
from tests.algos import flags

BASE = DQNConfig(
    num_envs=4,
    rollout_len=8,
    buffer_size=64,
    batch_size=16,
    learning_starts=8,
    target_update_period=16,
    hidden_sizes=(16,),
    total_timesteps=4 * 8 * 4,
)


def two_updates(cfg: DQNConfig, algo=None, update=None):
    return flags.two_updates(make_dqn, DQNHparams, cfg, algo, update)


@pytest.fixture(scope="module")
def baseline():
    return two_updates(BASE)


CHANGES = {
    "env": "Acrobot-v1",
    "num_envs": 8,
    "total_timesteps": 4 * 8 * 40,  # stretches the epsilon decay
    "seed": 3,
    "normalize_obs": True,
    "precision": "bf16",
    "env_options": ("gravity=20.0",),
    "rollout_len": 16,
    "train_frequency": 2,
    "buffer_size": 32,  # two updates write 64 transitions: the oldest are dropped
    "batch_size": 8,
    "learning_starts": 24,
    "target_update_period": 8,
    "tau": 0.5,
    "lr": 1e-2,
    "anneal_lr": True,
    "gamma": 0.5,
    "eps_start": 0.5,
    "eps_end": 0.5,
    "exploration_fraction": 0.1,
    "max_grad_norm": 1e-3,
    "loss": "huber",
    "double_q": True,
    "hidden_sizes": (16, 16),
    "activation": "tanh",
}


# Double DQN only changes targets once the online and target networks disagree on the best
# next action, which needs the online network to move and the target to lag behind it.
CONTEXT = {"double_q": {"lr": 1e-2, "target_update_period": 64}}


def test_every_field_has_a_case():
    fields = {f.name for f in dataclasses.fields(DQNConfig)} - {"num_seeds"}  # see test_dqn.py
    assert fields == set(CHANGES)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_field_changes_the_update(field, baseline):
    flags.assert_field_changes_the_update(
        make_dqn, DQNHparams, BASE, field, CHANGES[field], baseline, CONTEXT
    )
