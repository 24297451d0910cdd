"""Search specs: validation messages, value conversion, --param syntax."""

import pytest

from purerl.search.spec import (
    SpecError,
    parameter_kinds,
    parse_param_flag,
    parse_spec,
)

TINY = {
    "rollout_len": 16,
    "num_minibatches": 2,
    "num_epochs": 1,
    "hidden_sizes": [8],
}


def spec(**params):
    return {
        "algo": "ppo",
        "env": "CartPole-v1",
        "total_timesteps": 256,
        "params": {**TINY, **params},
    }


@pytest.mark.parametrize(
    "data, message",
    [
        (spec(lrr={"grid": [0.1]}), "unknown parameter 'lrr' for ppo; traced (vmapped in one "),
        (spec(lr={"grid": []}), "parameter lr: grid is empty; give at least one value"),
        (spec(lr={"choice": []}), "parameter lr: choice is empty"),
        (
            spec(lr={"loguniform": [0, 0.1]}),
            "parameter lr: loguniform bounds must be positive, got [0.0, 0.1]",
        ),
        (
            spec(lr={"loguniform": [-1e-3, 0.1]}),
            "loguniform bounds must be positive",
        ),
        (spec(lr={"uniform": [0.1, 0.01]}), "parameter lr: uniform needs low < high, got [0.1, "),
        (spec(lr={"uniform": [0.1, 0.1]}), "uniform needs low < high"),
        (spec(lr={"uniform": [0.1]}), "parameter lr: uniform takes [low, high], got [0.1]"),
        (spec(lr={"gird": [0.1]}), "parameter lr: give one of grid, choice, uniform, loguniform"),
        (spec(lr={"grid": 0.1}), "parameter lr: grid takes a list, got 0.1"),
        (spec(lr={"grid": ["fast"]}), "parameter lr: 'fast' is not a finite number"),
        (spec(num_envs={"grid": [4.5]}), "parameter num_envs: 4.5 is not an integer"),
        (spec(anneal_lr={"grid": ["maybe"]}), "parameter anneal_lr: 'maybe' is not true or false"),
        (
            spec(num_envs={"uniform": [4, 8]}),
            "parameter num_envs: uniform ranges are for traced parameters",
        ),
        (
            spec(seed={"grid": [1, 2]}),
            "parameter 'seed' cannot be searched: give the spec's seed (--seed)",
        ),
        (
            spec(total_timesteps=10),
            "parameter 'total_timesteps' cannot be searched: give the spec's total_timesteps",
        ),
        ({**spec(), "samples": 0}, "samples must be at least 1, got 0"),
        ({**spec(), "num_seeds": 0}, "num_seeds must be at least 1, got 0"),
        ({**spec(), "samples": 3}, "samples 3 needs a choice, uniform or loguniform parameter"),
        ({**spec(), "algo": "a2c"}, "unknown algorithm 'a2c'; algorithms: dqn, ppo"),
        ({**spec(), "env": "CartPol-v1"}, "unknown environment id 'CartPol-v1'; did you mean"),
        ({**spec(), "preset": "Pong"}, "unknown preset 'Pong' for ppo; presets: Acrobot-v1"),
        ({**spec(), "sweep": 1}, "unknown spec keys ['sweep']"),
        (
            {**spec(), "seeds": 2, "budget": 256},
            "spec keys take purerl train's names: seeds is now num_seeds, budget is now "
            "total_timesteps",
        ),
        ({**spec(), "params": [1]}, "params must map parameter names"),
    ],
)
def test_malformed_specs_are_rejected_with_one_clear_line(data, message):
    with pytest.raises(SpecError) as err:
        parse_spec(data)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_parameter_lists_traced_and_grouped_ones_of_that_algorithm():
    with pytest.raises(SpecError) as err:
        parse_spec({**spec(eps={"grid": [0.1]}), "algo": "dqn", "params": {"eps": {"grid": [1]}}})
    text = str(err.value)
    traced, grouped = parameter_kinds("dqn")
    assert "exploration_fraction" in traced and "buffer_size" in grouped
    assert f"traced (vmapped in one program): {', '.join(traced)}" in text
    assert f"grouped (one program per value): {', '.join(grouped)}" in text


def test_values_are_converted_to_the_config_field_types():
    parsed = parse_spec(
        spec(
            lr={"loguniform": ["1e-4", "1e-2"]},  # YAML 1.1 reads 1e-4 as a string
            num_envs={"grid": ["4", 8.0]},
            hidden_sizes={"grid": [[32], "64x64", 16]},
            anneal_lr={"choice": ["true", False]},
        )
    )
    by_name = {p.name: p for p in parsed.params}
    assert by_name["lr"].values == (1e-4, 1e-2)
    assert by_name["num_envs"].values == (4, 8)
    assert by_name["hidden_sizes"].values == ((32,), (64, 64), (16,))
    assert by_name["anneal_lr"].values == (True, False)
    assert by_name["rollout_len"].kind == "fixed"
    assert dict(parsed.overrides)["rollout_len"] == 16


@pytest.mark.parametrize(
    "text, expected",
    [
        ("lr=loguniform:1e-4,1e-2", ("lr", {"loguniform": ["1e-4", "1e-2"]})),
        ("num_envs=grid:4,8", ("num_envs", {"grid": ["4", "8"]})),
        ("hidden_sizes=grid:[[32],[64,64]]", ("hidden_sizes", {"grid": [[32], [64, 64]]})),
        ("lr=grid:", ("lr", {"grid": []})),
        ("rollout_len=64", ("rollout_len", "64")),
    ],
)
def test_param_flags(text, expected):
    assert parse_param_flag(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("lr", "--param 'lr': write NAME=KIND:VALUES"),
        ("lr=logunifrom:1,2", "unknown kind 'logunifrom'; kinds: grid, choice"),
        ("lr=grid:[1,", "is not a JSON list"),
    ],
)
def test_bad_param_flags(text, message):
    with pytest.raises(SpecError) as err:
        parse_param_flag(text)
    assert message in str(err.value)
