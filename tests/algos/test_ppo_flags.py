"""Every PPOConfig field must change what a run does: a test fails if a flag is dropped.

Each case changes one field and checks that one update from the same seed ends with different
parameters (or, for fields that only shape the run, different shapes or counts).
"""

import dataclasses

import jax
import numpy as np
import pytest

from purerl import envs
from purerl.algos.ppo import PPOConfig, PPOHparams, make_ppo

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
    """Two updates (the second sees the learning-rate schedule move) from ``cfg.seed``.

    Traced hyperparameters reach the update through ``state.hparams``; passing the baseline's
    compiled ``update`` for them saves a compile per case.
    """
    if algo is None:
        env = envs.make(cfg.env, cfg.num_envs, normalize_obs=cfg.normalize_obs)
        algo = make_ppo(cfg, env)
        update = jax.jit(algo.update)
    state = algo.init(jax.random.key(cfg.seed))._replace(hparams=PPOHparams.from_config(cfg))
    for i in range(2):
        state, _ = update(state, jax.random.key(100 + i))
    return state, algo, update


def params_differ(a, b, tolerance: float = 1e-6) -> bool:
    """Shapes differ, or some parameter moved by more than float rounding could explain."""
    leaves_a, leaves_b = jax.tree.leaves(a.params), jax.tree.leaves(b.params)
    if [x.shape for x in leaves_a] != [x.shape for x in leaves_b]:
        return True
    return any(
        np.abs(np.asarray(x) - np.asarray(y)).max() > tolerance
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


@pytest.fixture(scope="module")
def baseline():
    return two_updates(BASE)


CHANGES = {
    "env": "Acrobot-v1",
    "num_envs": 8,
    "total_timesteps": 4 * 16 * 40,  # changes the annealing schedule
    "seed": 3,
    "normalize_obs": True,
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
    base_state, algo, update = baseline
    if field in CONTEXT:
        base_state, _, _ = two_updates(dataclasses.replace(BASE, **CONTEXT[field]))
    cfg = dataclasses.replace(BASE, **CONTEXT.get(field, {}), **{field: CHANGES[field]})
    if field in PPOHparams._fields:
        changed, _, _ = two_updates(cfg, algo, update)
    else:
        changed, _, _ = two_updates(cfg)
    assert params_differ(base_state, changed), f"--{field.replace('_', '-')} had no effect"
