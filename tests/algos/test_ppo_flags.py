"""Every PPOConfig field must change what a run does: a test fails if a flag is dropped.

Each case changes one field and checks that one update from the same seed ends with different
parameters (or, for fields that only shape the run, different shapes or counts).
"""

import dataclasses

import pytest

from purerl.algos.ppo import PPOConfig, PPOHparams, make_ppo
from tests.algos import flags

BASE = PPOConfig(
    num_envs=4,
    rollout_len=16,
    num_minibatches=2,
    num_epochs=2,
    hidden_sizes=(16,),
    total_timesteps=4 * 16 * 4,
    max_grad_norm=0.5,
)


def two_updates(cfg: PPOConfig, algo=None, update=None):
    return flags.two_updates(make_ppo, PPOHparams, cfg, algo, update)


@pytest.fixture(scope="module")
def baseline():
    return two_updates(BASE)


CHANGES = {
    "env": "Acrobot-v1",
    "num_envs": 8,
    "total_timesteps": 4 * 16 * 40,  # changes the annealing schedule
    "seed": 3,
    "normalize_obs": True,
    "precision": "bf16",
    "env_options": ("gravity=20.0",),
    "rollout_len": 32,
    "num_epochs": 3,
    "num_minibatches": 4,
    "lr": 1e-3,
    "anneal_lr": False,
    "gamma": 0.5,
    "gae_lambda": 0.5,
    "clip_eps": 0.001,
    "clip_value_loss": False,
    "ent_coef": 0.5,
    "vf_coef": 2.0,
    "max_grad_norm": 1e-3,
    "normalize_advantages": False,
    "hidden_sizes": (16, 16),
    "activation": "relu",
}


# Fields whose effect only shows once training has moved far enough: both sides of the
# comparison run with these overrides. Value clipping bites only once the critic moves more than
# clip_eps in one update, which two updates at the base rate never do (the parameters then differ
# by float rounding alone, ~1e-10, which is not evidence that the flag works).
CONTEXT = {"clip_value_loss": {"lr": 1e-2}}


def test_every_field_has_a_case():
    fields = {f.name for f in dataclasses.fields(PPOConfig)} - {"num_seeds"}  # see test_ppo.py
    assert fields == set(CHANGES)


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_field_changes_the_update(field, baseline):
    flags.assert_field_changes_the_update(
        make_ppo, PPOHparams, BASE, field, CHANGES[field], baseline, CONTEXT
    )
