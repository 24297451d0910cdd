"""Search plans: grid x samples expansion, seeded draws, validation of each configuration."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from purerl.search.plan import expand, make_plan, spec_record
from purerl.search.spec import SpecError, parse_spec
from tests.search.test_spec import spec


def test_grid_rounds_times_samples_with_seeded_draws_in_bounds():
    data = {
        **spec(
            ent_coef={"grid": [0.0, 0.01]},
            lr={"loguniform": [1e-4, 1e-2]},
            gamma={"uniform": [0.9, 0.99]},
            activation={"choice": ["tanh", "relu"]},
        ),
        "samples": 3,
        "sample_seed": 5,
    }
    parsed = parse_spec(data)
    assignments = expand(parsed)
    assert len(assignments) == 2 * 3
    assert [a["ent_coef"] for a in assignments] == [0.0, 0.01] * 3
    assert list(assignments[0]) == ["ent_coef", "lr", "gamma", "activation"]
    lrs = np.array([a["lr"] for a in assignments])
    assert ((lrs >= 1e-4) & (lrs <= 1e-2)).all() and len(set(lrs)) == 6
    assert all(0.9 <= a["gamma"] <= 0.99 for a in assignments)
    assert {a["activation"] for a in assignments} <= {"tanh", "relu"}
    assert expand(parse_spec(data)) == assignments  # same sample_seed, same draws
    assert expand(parse_spec({**data, "sample_seed": 6})) != assignments


def test_plan_groups_grouped_values_and_applies_budget_seeds_and_fixed_values():
    parsed = parse_spec(
        {
            **spec(lr={"grid": [1e-3, 3e-3]}, num_envs={"grid": [4, 8]}),
            "num_seeds": 2,
            "seed": 10,
        }
    )
    plan = make_plan(parsed)
    assert [c.num_envs for c in plan.configs] == [4, 8, 4, 8]
    assert plan.batches == [[0, 2], [1, 3]]
    assert make_plan(parsed, max_configs_per_batch=1).batches == [[0], [2], [1], [3]]
    cfg = plan.configs[3]
    assert (cfg.lr, cfg.total_timesteps, cfg.num_seeds, cfg.seed) == (3e-3, 256, 2, 10)
    assert (cfg.rollout_len, cfg.hidden_sizes) == (16, (8,))
    record = spec_record(parsed, plan.assignments)
    assert record["resolved"]["traced"] == ["lr"] and record["resolved"]["grouped"] == ["num_envs"]
    assert parse_spec(record).params == parsed.params  # spec.json reads back as the same spec


def test_a_configuration_that_cannot_run_is_named():
    parsed = parse_spec(spec(num_minibatches={"grid": [2, 3]}))
    with pytest.raises(SpecError) as err:
        make_plan(parsed)
    assert str(err.value).startswith("configuration 1 (num_minibatches=3): --num-minibatches 3")


def test_preset_is_the_base_and_env_overrides_it():
    parsed = parse_spec({"algo": "ppo", "env": "Acrobot-v1", "preset": "Pendulum-v1"})
    (cfg,) = make_plan(parsed).configs
    assert cfg.env == "Acrobot-v1" and cfg.lr == 1e-3 and cfg.num_epochs == 10
    default = make_plan(parse_spec({"algo": "dqn", "env": "CartPole-v1"})).configs[0]
    assert dataclasses.asdict(default) == dataclasses.asdict(
        dataclasses.replace(default.__class__(), env="CartPole-v1")
    )


def test_the_readme_spec_example_is_a_valid_spec():
    yaml = pytest.importorskip("yaml", reason="pyyaml is not installed")

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide.md").read_text()
    block = readme.split("```yaml\nalgo: ppo                  # search.yaml\n", 1)[1]
    data = yaml.safe_load("algo: ppo\n" + block.split("```", 1)[0])
    plan = make_plan(parse_spec(data))
    assert len(plan.configs) == 16 and {c.rollout_len for c in plan.configs} == {64}
    assert all(1e-4 <= c.lr <= 1e-2 for c in plan.configs)
