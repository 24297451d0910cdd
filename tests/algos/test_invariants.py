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
from tests.helpers import TINY_TORSO, CountedTraces, as_numpy, leaves_equal

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


@functools.cache
def built(name: str, cfg):
    """The algorithm of ``cfg``, built once: runs of one config in this module share its
    programs (``init_program``, ``chunk_program``), so a run repeated to compare results
    executes the programs again without tracing or compiling them again. That equal configs
    trace to equal programs is checked apart (``test_a_rebuilt_config_traces_to_the_same_programs``,
    and the checkpoint tests' resumed runs)."""
    return base_smoke(name)[0].make(cfg).algo


def run(name: str, updates_per_chunk: int | None = None, **changes):
    _, cfg = smoke(name, **changes)
    # The seed reaches the agents' first keys only (``train`` reads it from ``cfg``), so a run of
    # another seed executes the programs built for the smoke config's own.
    programs = dataclasses.replace(cfg, seed=base_smoke(name)[1].seed)
    return train(built(name, programs), cfg, updates_per_chunk=updates_per_chunk)


@pytest.fixture(scope="module", params=NAMES)
def name(request):
    return request.param


@pytest.fixture(scope="module")
def whole(name):
    """Six updates of the smoke config, as one chunk."""
    return run(name, updates_per_chunk=UPDATES)


@pytest.fixture(scope="module")
def other_seed(name):
    """``whole`` with seed 1."""
    return run(name, updates_per_chunk=UPDATES, seed=1)


@pytest.fixture(scope="module")
def pieces(name):
    """The six updates as three chunks of two."""
    return run(name, updates_per_chunk=2)


@pytest.mark.slow
def test_same_seed_gives_bitwise_identical_state_and_metrics(name, whole):
    again = run(name, updates_per_chunk=UPDATES)
    assert leaves_equal(whole.agents, again.agents)
    assert leaves_equal(whole.history, again.history)


def test_different_seeds_give_different_params(name, whole, other_seed):
    assert not leaves_equal(whole.agents.state.params, other_seed.agents.state.params)


@pytest.mark.slow
def test_one_chunk_equals_several_chunks(name, whole, pieces):
    # Six updates as one chunk, three of two, and four then two. (A one-update chunk compiles
    # its loop away: with the suite's quick XLA settings it rounds floats differently from
    # longer chunks, which with XLA's default settings it does not. The checkpoint tests
    # compare runs of one-update chunks with each other.)
    uneven = run(name, updates_per_chunk=4)
    assert leaves_equal(whole.agents, pieces.agents)
    assert leaves_equal(whole.agents, uneven.agents)
    assert leaves_equal(whole.history, pieces.history)
    assert leaves_equal(whole.history, uneven.history)


@pytest.mark.slow
def test_vmapped_seed_i_equals_a_single_run_with_seed_i(name, whole, other_seed):
    # Seeds 0 and 1 in one program against the single runs of seed 0 and of seed 1.
    many = run(name, updates_per_chunk=UPDATES, num_seeds=2)
    for i, single in enumerate([whole, other_seed]):
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
    traces = CountedTraces(algo)
    # Compiled as the loop compiles ``whole``'s chunk (inputs donated), which the compilation
    # cache already holds.
    chunk = jax.jit(over_seeds(make_run_chunk(traces.algo, UPDATES)), donate_argnums=0)
    agents = init_agents(algo, [0])
    for _ in range(3):
        agents, _ = chunk(agents)
    assert traces.count == 1


@pytest.mark.slow
def test_evaluating_during_training_changes_nothing_of_it(name, pieces):
    # Chunks of two, as ``pieces`` (the same programs); the evaluation after updates 2, 4 and
    # 6 is the one program compiled here.
    _, cfg = smoke(name)
    algo = built(name, cfg)
    program = make_evaluation(algo, envs.from_config(cfg, 2))
    evaluated = train(algo, cfg, updates_per_chunk=2, evaluation=Evaluation(2, program))
    assert leaves_equal(pieces.agents, evaluated.agents)
    assert leaves_equal(pieces.history, evaluated.history)
    np.testing.assert_array_equal(evaluated.evaluations["update"], [2, 4, 6])
    assert np.isfinite(evaluated.evaluations["eval/return"]).all()


def test_runs_clean_under_key_reuse_checking(name):
    # The check runs as the program is traced; what compiles is ``whole``'s program.
    with jax.debug_key_reuse(True):
        result = run(name, updates_per_chunk=UPDATES)
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
    _, cfg = smoke(name)
    algo = built(name, cfg)
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
# - it changes the shapes of the parameters ``init`` makes (the shapes of its traced program);
# - it is a traced hyperparameter: it enters the state's ``hparams`` as data, and the parameters
#   after two updates depend on it (the jaxpr of two updates, dead code removed, still reads
#   that input);
# - otherwise it is compiled in: the traced program (jaxpr and constants) of ``init`` or of
#   ``update`` differs. What XLA compiles is lowered from exactly these, so equal ones would
#   compile to the same program; ``test_a_rebuilt_config_traces_to_the_same_programs`` checks
#   that an unchanged config traces to equal ones, so a difference is the field's.
# Two fields act only at run time, outside the programs: ``seed`` (the key ``init`` is given;
# ``test_different_seeds_give_different_params`` trains with another seed and compares) and
# ``num_seeds`` (the vmap invariant's). For SAC and TD3, whose updates read no schedule,
# ``total_timesteps`` changes the number of updates the loop runs (checked below).
RUNTIME_FIELDS = ("seed", "num_seeds")


def abstract_state(spec, algo, cfg):
    """The shapes of ``init``'s state, with ``cfg``'s traced hyperparameters in ``hparams``."""
    hparams = jax.tree.map(np.float32, spec.hparams_cls.from_config(cfg))
    state = jax.eval_shape(algo.init, jax.random.key(cfg.seed))
    return state._replace(hparams=jax.eval_shape(lambda: hparams))


class Traced:
    """The programs of one config as traced (jaxprs with their constants), ``update``'s traced
    only when asked (on the shapes of ``init``'s state: the traced hyperparameters come in as
    data)."""

    def __init__(self, spec, cfg):
        self.spec, self.cfg = spec, cfg
        self.algo = spec.make(cfg).algo
        self.init, self.state = jax.make_jaxpr(self.algo.init, return_shape=True)(
            jax.random.key(cfg.seed)
        )

    @property
    def param_shapes(self) -> list:
        return [x.shape for x in jax.tree.leaves(self.state.params)]

    @functools.cached_property
    def update(self):
        state = abstract_state(self.spec, self.algo, self.cfg)
        return jax.make_jaxpr(self.algo.update)(state, jax.random.key(0))

    def same_programs(self, other: Traced) -> bool:
        return same_jaxpr(self.init, other.init) and same_jaxpr(self.update, other.update)


def same_jaxpr(a, b) -> bool:
    """Equal equations, shapes and literals, and equal constants."""
    if str(a.jaxpr) != str(b.jaxpr) or len(a.consts) != len(b.consts):
        return False
    return all(
        np.array_equal(as_numpy(x), as_numpy(y)) for x, y in zip(a.consts, b.consts, strict=True)
    )


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
def base_traced(name: str) -> Traced:
    return Traced(*base_smoke(name))


@functools.cache
def base_reads(name: str) -> set[str]:
    """The traced hyperparameters the smoke config's parameters read."""
    return hparams_the_params_read(*base_smoke(name))


def field_cases():
    for name in NAMES:
        spec, _ = base_smoke(name)
        for field in dataclasses.fields(spec.config_cls):
            if field.name in RUNTIME_FIELDS:
                continue
            if (field.name in MEMORY_FIELDS) == (name in RECURRENT):
                yield pytest.param(name, field.name, id=f"{name}-{field.name}")


@pytest.mark.slow
def test_a_rebuilt_config_traces_to_the_same_programs(name):
    # Built again from an equal config, the programs compare equal: the comparison below sees
    # the config's effect, not the building's (no object addresses, no fresh names).
    spec, cfg = base_smoke(name)
    again = Traced(spec, dataclasses.replace(cfg))
    assert base_traced(name).same_programs(again)
    assert base_traced(name).param_shapes == again.param_shapes


@pytest.mark.slow
@pytest.mark.parametrize("name, field", list(field_cases()))
def test_every_config_field_changes_the_program(name, field):
    """Changing the field must change what the run computes: the shapes of the parameters
    ``init`` makes, the value of a traced hyperparameter the parameters depend on, or the
    traced program of ``init`` or ``update``; for ``total_timesteps`` at least the number of
    updates the run takes. Nothing is lowered or compiled."""
    spec, smoke_cfg = base_smoke(name)
    variants = valid_variants(smoke_cfg, field)
    assert variants, f"{name}: no valid value to try for --{field.replace('_', '-')}"
    base = base_traced(name)
    traced = [Traced(spec, v) for v in variants]
    if any(t.param_shapes != base.param_shapes for t in traced):
        return
    if field in spec.traced:
        assert field in base_reads(name), f"{name}: the parameters never read the traced {field}"
        base_value, *values = (
            float(np.asarray(getattr(spec.hparams_cls.from_config(c), field)))
            for c in (smoke_cfg, *variants)
        )
        assert any(v != base_value for v in values), (base_value, values)
        return
    if not all(t.same_programs(base) for t in traced):
        return
    # A budget the update never reads (SAC and TD3 as CleanRL has them: no schedule spans the
    # run) still changes the run through its length, the number of updates the loop runs.
    if field == "total_timesteps" and any(v.num_updates != smoke_cfg.num_updates for v in variants):
        return
    pytest.fail(f"{name}: no valid value of --{field.replace('_', '-')} changed the program")
