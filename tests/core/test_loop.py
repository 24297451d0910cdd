"""The host loop's planning and checks: chunk plans, non-finite losses, metrics rows."""

import dataclasses
import gc
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from purerl import algos
from purerl.core.loop import CheckpointPolicy, first_nonfinite, nonfinite_message, train
from purerl.core.program import (
    Agent,
    build_program,
    collector_paused,
    init_agent,
    init_agents,
    over_seeds,
    straight_line_threefry,
)
from purerl.core.report import ChunkReport
from purerl.core.schedule import checkpoint_due, plan_chunks
from purerl.run.rundir import report_rows
from tests.helpers import CountedTraces


@pytest.mark.parametrize(
    "num_updates, per_chunk, expected",
    [
        (976, None, [61] * 16),  # a divisor near 976 / 20 keeps one compiled length
        (10, 4, [4, 4, 2]),
        (10, 20, [10]),
        (7, None, [1] * 7),
        (488, None, [8] * 61),  # no divisor near 25: a smaller one rather than two lengths
        (146, None, [2] * 73),
        (97, None, [5] * 19 + [2]),  # prime: 1 would mean 97 chunks; one short chunk instead
    ],
)
def test_plan_chunks(num_updates, per_chunk, expected):
    plan = plan_chunks(num_updates, per_chunk)
    assert plan == expected
    assert sum(plan) == num_updates


def test_plan_chunks_aligns_with_checkpoints_and_resumes_part_way():
    assert plan_chunks(100, None, checkpoint_every=12) == [4] * 25  # largest divisor of 12 <= 5
    assert plan_chunks(10, 4, start=6) == [4]
    assert plan_chunks(10, 4, start=10) == []


def test_plan_chunks_of_a_huge_run_is_instant():
    start = time.perf_counter()
    plan = plan_chunks(2**31 - 1, None)  # prime: no divisor near the target
    assert time.perf_counter() - start < 1.0
    assert sum(plan) == 2**31 - 1 and len(set(plan)) <= 2


class Saver:
    last_saved = 40


def test_checkpoints_are_due_by_updates_by_time_and_at_the_end():
    by_updates = CheckpointPolicy(Saver(), every_updates=10)
    assert checkpoint_due(by_updates, 8, 12, 100, 0.0)
    assert not checkpoint_due(by_updates, 12, 16, 100, 1e9)
    by_time = CheckpointPolicy(Saver(), every_seconds=600.0)
    assert not checkpoint_due(by_time, 8, 12, 100, 599.0)
    assert checkpoint_due(by_time, 8, 12, 100, 600.0)
    assert checkpoint_due(by_time, 96, 100, 100, 0.0)


def report(metrics, first=0):
    return ChunkReport(first, {k: np.asarray(v, np.float32) for k, v in metrics.items()}, 1.0, 0.5)


def test_non_finite_loss_names_the_update_the_kept_checkpoint_and_the_fix():
    assert first_nonfinite(report({"loss/total": [[1.0, 2.0]]})) is None
    bad = first_nonfinite(report({"loss/total": [[1.0, 2.0], [1.0, np.nan]]}, first=10))
    assert bad == (1, 12)
    message = nonfinite_message(*bad, CheckpointPolicy(Saver()))
    assert "seed index 1 became non-finite at update 12 (checkpoint 40" in message
    assert "lower --lr" in message
    assert "no checkpoint was saved" in nonfinite_message(*bad, None)
    # Updates without a gradient step have no loss to check.
    skipped = {"loss/total": [[np.nan]], "optim/gradient_steps": [[0]]}
    assert first_nonfinite(report(skipped)) is None


def test_report_rows_hold_per_seed_values_and_nan_free_means():
    rows = report_rows(
        report(
            {
                "episode/return": [[1.0, np.nan], [3.0, np.nan]],
                "loss/total": [[0.5, 0.25], [1.5, 0.75]],
            },
            4,
        ),
        env_steps_per_update=100,
        frame_skip=4,
    )
    assert [r["update"] for r in rows] == [5, 6]
    assert rows[0]["env_steps"] == 500 and rows[0]["frames"] == 2000
    assert rows[0]["episode/return"] == 2.0 and rows[1]["episode/return"] is None
    assert rows[1]["per_seed"]["loss/total"] == [0.25, 0.75]
    assert rows[1]["loss/total"] == 0.5


class Counters(NamedTuple):
    step: jax.Array
    position: jax.Array
    value: jax.Array


def test_vmapped_seeds_share_lockstep_counters_and_refuse_seed_dependent_ones():
    def advance(agent, bump_position_by_value=False):
        state = agent.state
        position = state.position + 3
        if bump_position_by_value:
            position = position + (state.value > 0).astype(jnp.int32)
        state = Counters(state.step + 1, position, state.value + jax.random.normal(agent.key))
        return agent._replace(state=state), state.value

    keys = jax.random.split(jax.random.key(0), 3)
    agents = Agent(
        Counters(jnp.full(3, 5, jnp.int32), jnp.full(3, 7, jnp.int32), jnp.arange(3.0) - 1),
        keys,
        jnp.arange(3, dtype=jnp.int32),
    )
    out, values = jax.jit(over_seeds(advance, ("position",)))(agents)
    np.testing.assert_array_equal(out.state.step, [6, 6, 6])
    np.testing.assert_array_equal(out.state.position, [10, 10, 10])
    # The rest stays per seed, and equals a plain vmap.
    _, expected = jax.jit(jax.vmap(advance))(agents)
    np.testing.assert_array_equal(values, expected)
    assert len(set(np.asarray(values).tolist())) == 3
    with pytest.raises(ValueError, match="out_axes"):
        jax.jit(over_seeds(lambda a: advance(a, True), ("position",)))(agents)


def test_a_second_run_of_one_algorithm_object_traces_nothing_again():
    # Another seed of the same algorithm in one process: the same chunk program, run again.
    spec = algos.get("dqn")
    cfg = dataclasses.replace(spec.smoke, total_timesteps=2 * spec.smoke.env_steps_per_update)
    traces = CountedTraces(spec.make(cfg).algo)
    first = train(traces.algo, cfg, updates_per_chunk=2)
    second = train(traces.algo, dataclasses.replace(cfg, seed=1), updates_per_chunk=2)
    assert traces.count == 1
    assert second.timing.updates_done == 2
    params = [jax.tree.leaves(r.agents.state.params)[0] for r in (first, second)]
    assert not np.array_equal(*params)  # seed 1's own agent, not seed 0's again


def test_a_new_run_builds_the_agents_init_agents_builds():
    # build_program compiles init beside the chunks (here none); the chunk it lowers against
    # their shapes is the one restored agents get (test_checkpoint's resume equality).
    spec = algos.get("dqn")
    algo = spec.make(spec.smoke).algo
    agents, compiled = build_program(algo, [0, 1], [])
    expected = init_agents(algo, [0, 1])
    assert compiled == {}
    assert gc.isenabled()  # off while it built (collector_paused), on again after
    for got, want in zip(jax.tree.leaves(agents), jax.tree.leaves(expected), strict=True):
        if jax.dtypes.issubdtype(want.dtype, jax.dtypes.prng_key):
            got, want = jax.random.key_data(got), jax.random.key_data(want)
        np.testing.assert_array_equal(got, want)
        assert got.sharding == want.sharding


def test_the_collector_pause_restores_what_it_found():
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause found it off
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a caller's choice stays
    finally:
        gc.enable()


def test_straight_line_threefry_changes_how_init_lowers_not_what_it_draws():
    spec = algos.get("dqn")
    algo = spec.make(spec.smoke).algo
    seeds = jnp.arange(2, dtype=jnp.int32)
    looped = jax.jit(lambda s: jax.vmap(lambda x: init_agent(algo, x))(s)).lower(seeds)
    with straight_line_threefry():
        straight = jax.jit(lambda s: jax.vmap(lambda y: init_agent(algo, y))(s)).lower(seeds)
    assert looped.as_text().count("stablehlo.while") > straight.as_text().count("stablehlo.while")
    drawn = [jax.tree.leaves(program.compile()(seeds)) for program in (looped, straight)]
    for a, b in zip(*drawn, strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)
