"""Random values for every numeric and choice flag of ``purerl train``: the command either
accepts them or refuses them with one line and exit code 2, never a traceback, and a refused
configuration leaves no run directory behind."""

import dataclasses
import itertools
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from purerl import algos
from purerl.options import options_for
from tests.helpers import run_cli

SKIPPED = {"env", "env_options", "run_dir", "wandb_project", "coordinator_address"}
"""Strings with no numeric or choice meaning (the environment id has its own tests);
``env_options`` gets its own strategy below."""

ENV_OPTIONS = st.lists(
    st.builds(
        "{}={}".format,
        st.sampled_from(["max_steps_in_episode", "gravity", "length", "nonsense", ""]),
        st.sampled_from(["200", "-1", "0", "2.5", "1e30", "abc", "True", "", "[1]"]),
    ),
    min_size=1,
    max_size=2,
)
"""CartPole-v1 parameters (the default environment) and other keys, with odd values."""


def source_flags(name: str) -> st.SearchStrategy:
    """The flags that choose where a configuration starts: presets and --resume-from."""
    presets = sorted(algos.get(name).presets)[:5]
    return st.one_of(
        st.builds(lambda p: ["--preset", p], st.sampled_from([*presets, "NoSuch", ""])),
        st.builds(lambda n: ["--resume-from", str(n)], st.integers(-2, 10**12)),
        st.builds(lambda opts: ["--env-options", *opts], ENV_OPTIONS),
    )


def fuzzable_fields(name: str) -> dict[str, typing.Any]:
    spec = algos.get(name)
    fields = {}
    for cls in (spec.config_cls, options_for(spec)):
        hints = typing.get_type_hints(cls, include_extras=False)
        for field in dataclasses.fields(cls):
            hint = hints[field.name]
            if field.name in SKIPPED or hint is bool:
                continue
            fields[field.name] = hint
    return fields


FIELDS = {name: fuzzable_fields(name) for name in algos.names()}
"""Computed before any strategy runs: the imports behind it touch the random module."""

NUMBERS = st.one_of(
    st.integers(-3, 300),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["1e3", "0.5", "abc", "", "-0", "1_000"]),
)


def values_for(hint) -> st.SearchStrategy:
    """Text a user might type for a flag of this type: good values, bad ones, and garbage."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Literal:
        return st.sampled_from([*args, "bogus", "FP32", ""])
    if typing.get_origin(hint) is tuple:
        return st.lists(st.integers(-5, 10**7).map(str), min_size=0, max_size=4)
    literal = [a for a in args if typing.get_origin(a) is typing.Literal]
    if literal:
        return st.one_of(st.sampled_from([*typing.get_args(literal[0]), "tpu"]), NUMBERS)
    return NUMBERS


@st.composite
def flag_sets(draw, name: str):
    fields = FIELDS[name]
    chosen = draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, max_size=3, unique=True))
    argv = []
    for field in chosen:
        value = draw(values_for(fields[field]))
        values = value if isinstance(value, list) else [str(value)]
        argv += ["--" + field.replace("_", "-"), *values]
    if draw(st.booleans()):
        argv += draw(source_flags(name))
    return argv


@pytest.mark.slow
@settings(max_examples=60)
@given(name=st.sampled_from(algos.names()), data=st.data())
def test_random_flag_values_are_accepted_or_refused_in_one_line(tmp_path_factory, name, data):
    argv = data.draw(flag_sets(name))
    run_dir = tmp_path_factory.mktemp("fuzz") / "run"
    result = run_cli("train", name, *argv, "--dry-run", "--run-dir", run_dir)
    assert result.code in (0, 2), (argv, result.code, result.stderr)
    assert "Traceback" not in result.stderr, (argv, result.stderr)
    if result.code == 2:
        assert len(result.error_lines) == 1, (argv, result.stderr)
        assert result.error_lines[0].startswith("error: ")
    assert not run_dir.exists(), argv


def test_the_fuzzed_flags_cover_every_numeric_and_choice_field():
    fields = set(itertools.chain.from_iterable(FIELDS.values()))
    for expected in ["lr", "num_envs", "total_timesteps", "activation", "precision", "parallel"]:
        assert expected in fields
    assert {"keep_checkpoints", "checkpoint_every", "device", "hidden_sizes", "loss"} <= fields
