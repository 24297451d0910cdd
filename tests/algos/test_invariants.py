"""What every registered algorithm owes, checked through the registry on its smoke config:
determinism, seed and chunk invariance, one trace, clean key use, scalar metrics, and every
configuration field reaching the program. A new algorithm gets these without new test code.
"""

from __future__ import annotations

import dataclasses
import functools
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos, envs
from purerl.config import ConfigError, Network
from purerl.core.loop import Evaluation, train
from purerl.core.program import (
    init_agent,
    init_agents,
    init_program,
    make_run_chunk,
    over_seeds,
)
from purerl.run.evaluate import make_evaluation
from tests.helpers import TINY_TORSO, as_numpy, emitters_as_users, leaves_equal

RECURRENT = {"ppo+gru": ("ppo", "gru"), "pqn+lstm": ("pqn", "lstm")}
"""Recurrent variants of the smoke configs, checked like the algorithms themselves."""
NAMES = algos.names() + list(RECURRENT)
UPDATES = 6
MEMORY_FIELDS = ("rnn_size", "bptt_len")
"""Fields only a recurrent network reads: checked on the recurrent variants."""


def base_smoke(name: str):
    """The registered algorithm and smoke config of ``name`` (an algorithm or a variant)."""
    if name in RECURRENT:
        algo_name, network = RECURRENT[name]
        spec = algos.get(algo_name)
        return spec, dataclasses.replace(spec.smoke, network=network, rnn_size=16)
    spec = algos.get(name)
    return spec, spec.smoke


def smoke(name: str, **changes):
    spec, cfg = base_smoke(name)
    cfg = dataclasses.replace(cfg, total_timesteps=UPDATES * cfg.env_steps_per_update, **changes)
    return spec, cfg


def run(name: str, updates_per_chunk: int | None = None, **changes):
    spec, cfg = smoke(name, **changes)
    algo = spec.make(cfg).algo
    return train(algo, cfg, updates_per_chunk=updates_per_chunk)


def run_as_users(name: str, updates_per_chunk: int | None = None, **changes):
    """``run`` with the chunks compiled by the emitters users get: the runs that chunk
    invariance compares bit for bit (``tests.helpers.emitters_as_users``)."""
    with emitters_as_users():
        return run(name, updates_per_chunk, **changes)


@pytest.fixture(scope="module", params=NAMES)
def name(request):
    return request.param


@pytest.fixture(scope="module")
def whole(name):
    """Six updates of the smoke config, as one chunk."""
    return run(name, updates_per_chunk=UPDATES)


@pytest.fixture(scope="module")
def whole_as_users(name):
    """``whole`` compiled with the emitters users get, for comparisons across chunk lengths."""
    return run_as_users(name, updates_per_chunk=UPDATES)


@pytest.mark.slow
def test_same_seed_gives_bitwise_identical_state_and_metrics(name, whole):
    again = run(name, updates_per_chunk=UPDATES)
    assert leaves_equal(whole.agents, again.agents)
    assert leaves_equal(whole.history, again.history)


def test_different_seeds_give_different_params(name, whole):
    other = run(name, updates_per_chunk=UPDATES, seed=1)
    assert not leaves_equal(whole.agents.state.params, other.agents.state.params)


@pytest.mark.slow
def test_one_chunk_equals_several_chunks(name, whole_as_users):
    # Compiled with the emitters users get (``run_as_users``): with the suite's quick ones,
    # programs of different chunk lengths round differently.
    pieces = run_as_users(name, updates_per_chunk=1)
    uneven = run_as_users(name, updates_per_chunk=5)  # 5 + 1
    whole = whole_as_users
    assert leaves_equal(whole.agents, pieces.agents)
    assert leaves_equal(whole.agents, uneven.agents)
    assert leaves_equal(whole.history, pieces.history)
    assert leaves_equal(whole.history, uneven.history)


@pytest.mark.slow
def test_vmapped_seed_i_equals_a_single_run_with_seed_i(name):
    # Two seeds and one update per chunk, as the checkpoint tests train the smoke config: the
    # vmapped and the single programs are theirs, loaded from the compilation cache.
    many = run(name, num_seeds=2, seed=5)
    for i in range(2):
        single = run(name, seed=5 + i)
        params_i = jax.tree.map(lambda x, i=i: x[i : i + 1], many.agents.state.params)
        for a, b in zip(
            jax.tree.leaves(params_i), jax.tree.leaves(single.agents.state.params), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        assert many.final_returns[i] == pytest.approx(
            single.final_returns[0], rel=1e-5, nan_ok=True
        )


@pytest.mark.slow
def test_init_is_one_program_whatever_the_traced_hyperparameters(name):
    spec, cfg = smoke(name)
    # Every traced field moved to another valid value (halving keeps rates and discounts valid).
    other = dataclasses.replace(cfg, **{f: 0.5 * getattr(cfg, f) for f in spec.traced})
    algo, other_algo = (spec.make(c).algo for c in (cfg, other))
    seeds = jnp.zeros((1,), jnp.int32)
    texts = [
        init_program(a, None).lower((seeds, jax.tree.map(lambda x: x[None], a.hparams))).as_text()
        for a in (algo, other_algo)
    ]
    assert texts[0] == texts[1]
    # The loop's agents are exactly what the algorithm's own init builds for that config.
    fed = init_agents(other_algo, [0])
    built = jax.jit(jax.vmap(lambda seed: init_agent(other_algo, seed)))(seeds)
    assert leaves_equal(fed, built)
    expected = spec.hparams_cls.from_config(other)
    assert leaves_equal(fed.state.hparams, jax.tree.map(lambda x: x[None], expected))


@pytest.mark.slow
def test_update_traces_once_across_repeated_chunk_calls(name):
    spec, cfg = smoke(name)
    algo = spec.make(cfg).algo
    traces = 0

    def counting_update(state, key):
        nonlocal traces
        traces += 1
        return algo.update(state, key)

    # Compiled as the loop compiles a one-update chunk (inputs donated), which the compilation
    # cache already holds from the other tests.
    chunk = jax.jit(
        over_seeds(make_run_chunk(algo._replace(update=counting_update), 1)), donate_argnums=0
    )
    agents = init_agents(algo, [0])
    for _ in range(3):
        agents, _ = chunk(agents)
    assert traces == 1


@pytest.mark.slow
def test_evaluating_during_training_changes_nothing_of_it(name, whole_as_users):
    # One update per chunk, as the chunk invariance test compiles it (the compilation cache
    # serves it); the evaluation after updates 3 and 6 is the one program compiled here.
    spec, cfg = smoke(name)
    algo = spec.make(cfg).algo
    program = make_evaluation(algo, envs.from_config(cfg, 2))
    with emitters_as_users():
        evaluated = train(algo, cfg, updates_per_chunk=1, evaluation=Evaluation(3, program))
    assert leaves_equal(whole_as_users.agents, evaluated.agents)
    assert leaves_equal(whole_as_users.history, evaluated.history)
    np.testing.assert_array_equal(evaluated.evaluations["update"], [3, 6])
    assert np.isfinite(evaluated.evaluations["eval/return"]).all()


def test_runs_clean_under_key_reuse_checking(name):
    with jax.debug_key_reuse(True):
        result = run(name)
    assert result.timing.updates_done == UPDATES


def test_metrics_are_scalars_covering_loss_learning_rate_and_episodes(name, whole):
    expected = {"loss/total", "optim/lr", "episode/return", "episode/count", "episode/length"}
    assert expected <= set(whole.history)
    # The chunk stacks every update's metrics over seeds and updates, so a scalar metric is
    # exactly [seeds, updates] here and anything else has more axes.
    assert all(np.shape(v) == (1, UPDATES) for v in whole.history.values()), {
        k: np.shape(v) for k, v in whole.history.items()
    }
    assert np.isfinite(whole.history["loss/total"][:, 2:]).all()  # past any warm-up


def test_state_leaves_are_numpy_convertible(name, whole):
    # Typed keys and every state field survive the conversion checkpoints need.
    assert all(isinstance(x, np.ndarray) for x in jax.tree.leaves(as_numpy(whole.agents)))


def test_greedy_acting_is_deterministic_and_shaped_like_the_action_space(name, whole):
    spec, cfg = smoke(name)
    algo = spec.make(cfg).algo
    state = jax.tree.map(lambda x: x[0], whole.agents.state)
    memory = algos.initial_memory(algo, cfg.num_envs)
    first, _ = algos.policy_step(algo, state, state.obs, jax.random.key(0), True, memory)
    second, _ = algos.policy_step(algo, state, state.obs, jax.random.key(1), True, memory)
    assert first.shape[0] == cfg.num_envs
    np.testing.assert_array_equal(first, second)


# ---- every configuration field reaches the program -------------------------------------------

CANDIDATE_ENVS = ("Acrobot-v1", "CartPole-v1")
"""Environments a changed ``env`` may take when the smoke config's has discrete actions."""
CONTINUOUS_CANDIDATE_ENVS = ("MountainCarContinuous-v0", "Pendulum-v1")
"""... and when it has continuous ones (SAC and TD3 run only these)."""


def candidates(cfg, field: str, hint) -> list:
    """Values to try for ``field`` instead of its current one, biggest changes first."""
    value = getattr(cfg, field)
    origin = typing.get_origin(hint)
    if field == "env":
        pool = CANDIDATE_ENVS if envs.make(value).spec.discrete else CONTINUOUS_CANDIDATE_ENVS
        return [e for e in pool if e != value]
    if field == "env_options":
        params = dataclasses.asdict(envs.make(cfg.env).default_params)
        numbers = {k: v for k, v in params.items() if isinstance(v, float) and v > 0}
        return [(f"{k}={2 * v}",) for k, v in numbers.items()]
    if field == "network":  # purerl's torsos (those the algorithm takes), and one of the user's
        return [c for c in (*typing.get_args(Network), TINY_TORSO) if c != value]
    if origin is typing.Literal:
        return [c for c in typing.get_args(hint) if c != value]
    if hint is bool:
        return [not value]
    if hint is int:
        return [value * 2, value + 1, value // 2, value - 1]
    if hint is float:
        return [value * 10, value / 10, value * 1e3, value / 1e3, 0.5, 1.0 - value]
    if origin is tuple:
        return [value + value[-1:], tuple(2 * v for v in value)]
    raise TypeError(f"no candidates for {field}: {hint}")


def valid_variants(cfg, field: str) -> list:
    hint = typing.get_type_hints(type(cfg))[field]
    variants = []
    for candidate in candidates(cfg, field, hint):
        try:
            variants.append(dataclasses.replace(cfg, **{field: candidate}))
        except ConfigError:
            continue
    return variants


# A field reaches the program in one of three ways, each proved without compiling a program:
# - it changes the shapes of the parameters ``init`` makes (read through ``eval_shape``);
# - it is a traced hyperparameter: it enters the state's ``hparams`` as data, and the parameters
#   after two updates depend on it (the jaxpr of two updates, dead code removed, still reads
#   that input);
# - otherwise it is compiled in: the lowered program of ``init`` or of ``update`` differs.
# Two fields act only at run time, outside the programs: ``seed`` (the key ``init`` is given;
# ``test_different_seeds_give_different_params`` trains with another seed and compares) and,
# for SAC and TD3, whose updates read no schedule, ``total_timesteps`` (the number of updates
# the loop runs, checked below); ``num_seeds`` is the vmap invariant's.
RUNTIME_FIELDS = ("seed", "num_seeds")


def abstract_state(spec, algo, cfg):
    """The shapes of ``init``'s state, with ``cfg``'s traced hyperparameters in ``hparams``."""
    hparams = jax.tree.map(np.float32, spec.hparams_cls.from_config(cfg))
    state = jax.eval_shape(algo.init, jax.random.key(cfg.seed))
    return state._replace(hparams=jax.eval_shape(lambda: hparams))


def lowered_programs(spec, cfg) -> tuple[str, str]:
    """The lowered text of ``init`` and of ``update`` for ``cfg`` (the update lowered on the
    shapes of ``init``'s state: the traced hyperparameters come in as data)."""
    algo = spec.make(cfg).algo
    init = jax.jit(algo.init).lower(jax.random.key(cfg.seed)).as_text()
    update = jax.jit(algo.update).lower(abstract_state(spec, algo, cfg), jax.random.key(0))
    return init, update.as_text()


def hparams_the_params_read(spec, cfg) -> set[str]:
    """The traced hyperparameters the parameters after two updates depend on: the inputs the
    jaxpr of two updates still reads once everything that does not reach them is removed."""
    from jax._src.interpreters.partial_eval import dce_jaxpr

    algo = spec.make(cfg).algo
    state = abstract_state(spec, algo, cfg)

    def two_updates(hparams, state, key):
        state = state._replace(hparams=hparams)
        for step_key in jax.random.split(key):
            state, _ = algo.update(state, step_key)
        return state.params

    jaxpr = jax.make_jaxpr(two_updates)(state.hparams, state, jax.random.key(0)).jaxpr
    _, used = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    names = state.hparams._fields
    assert len(jax.tree.leaves(state.hparams)) == len(names)
    return {field for field, read in zip(names, used[: len(names)], strict=True) if read}


@functools.cache
def base_programs(name: str):
    """The smoke config's lowered programs and the traced hyperparameters its parameters read."""
    spec, cfg = base_smoke(name)
    return lowered_programs(spec, cfg), hparams_the_params_read(spec, cfg)


def initial_param_shapes(spec, cfg) -> list:
    algo = spec.make(cfg).algo
    params = jax.eval_shape(algo.init, jax.random.key(cfg.seed)).params
    return [x.shape for x in jax.tree.leaves(params)]


def field_cases():
    for name in NAMES:
        spec, _ = base_smoke(name)
        for field in dataclasses.fields(spec.config_cls):
            if field.name in RUNTIME_FIELDS:
                continue
            if (field.name in MEMORY_FIELDS) == (name in RECURRENT):
                yield pytest.param(name, field.name, id=f"{name}-{field.name}")


@pytest.mark.slow
@pytest.mark.parametrize("name, field", list(field_cases()))
def test_every_config_field_changes_the_program(name, field):
    """Changing the field must change what the run computes: the shapes of the parameters
    (read through ``eval_shape``, without compiling), the value of a traced hyperparameter the
    parameters depend on, or the lowered program of ``init`` or ``update``; for
    ``total_timesteps`` at least the number of updates the run takes."""
    spec, smoke_cfg = base_smoke(name)
    variants = valid_variants(smoke_cfg, field)
    assert variants, f"{name}: no valid value to try for --{field.replace('_', '-')}"
    base_shapes = initial_param_shapes(spec, smoke_cfg)
    if any(base_shapes != initial_param_shapes(spec, v) for v in variants):
        return
    base_texts, read = base_programs(name)
    if field in spec.traced:
        assert field in read, f"{name}: the parameters never read the traced {field}"
        base_value, *values = (
            float(np.asarray(getattr(spec.hparams_cls.from_config(c), field)))
            for c in (smoke_cfg, *variants)
        )
        assert any(v != base_value for v in values), (base_value, values)
        return
    for variant in variants:
        if lowered_programs(spec, variant) != base_texts:
            return
    # A budget the update never reads (SAC and TD3 as CleanRL has them: no schedule spans the
    # run) still changes the run through its length, the number of updates the loop runs.
    if field == "total_timesteps" and any(v.num_updates != smoke_cfg.num_updates for v in variants):
        return
    pytest.fail(f"{name}: no valid value of --{field.replace('_', '-')} changed the program")
