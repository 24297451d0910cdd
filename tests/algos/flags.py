"""Shared harness of the flag tests: every config field must change what a run does."""

import jax
import numpy as np

from purerl.cli import make_env


def two_updates(make_algo, hparams_cls, cfg, algo=None, update=None):
    """Two updates from ``cfg.seed`` (the second sees schedules move).

    Traced hyperparameters reach the update through ``state.hparams``; passing the baseline's
    compiled ``update`` for them saves a compile per case.
    """
    if algo is None:
        algo = make_algo(cfg, make_env(cfg))
        update = jax.jit(algo.update)
    state = algo.init(jax.random.key(cfg.seed))._replace(hparams=hparams_cls.from_config(cfg))
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


def assert_field_changes_the_update(make_algo, hparams_cls, base, field, value, baseline, context):
    """Changing ``field`` to ``value`` must move the parameters of two updates from ``base``.

    ``context`` holds overrides applied to both sides for fields whose effect only shows once
    training has moved far enough (``baseline`` is then recomputed under them).
    """
    import dataclasses

    base_state, algo, update = baseline
    if field in context:
        base_state, _, _ = two_updates(
            make_algo, hparams_cls, dataclasses.replace(base, **context[field])
        )
    cfg = dataclasses.replace(base, **context.get(field, {}), **{field: value})
    if field in hparams_cls._fields:
        changed, _, _ = two_updates(make_algo, hparams_cls, cfg, algo, update)
    else:
        changed, _, _ = two_updates(make_algo, hparams_cls, cfg)
    assert params_differ(base_state, changed), f"--{field.replace('_', '-')} had no effect"
