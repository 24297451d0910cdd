"""Random values for every numeric and choice flag of ``purerl train``: the command either
accepts them or refuses them with one line and exit code 2, never a traceback, and a refused
configuration leaves no run directory behind. Then the inputs that are not flag values: paths
the file system refuses, outputs where a directory stands, runs that fail before their first
checkpoint, and what the Python API is given instead of a string."""

import dataclasses
import errno
import itertools
import typing

import jax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from purerl import algos
from purerl.options import options_for
from purerl.run import rundir
from tests.helpers import DQN_TINY_ARGS, TINY_ARGS, one_error_line, run_cli, tree_digest

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


LONG_NAME = "a" * 300
"""One name longer than any file system takes (255 bytes)."""
TOO_LONG = "File name too long (a file or directory name holds at most 255 bytes)"


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "ppo", *TINY_ARGS, "--run-dir", "{tmp}/runs/" + LONG_NAME],
        ["train", "ppo", *TINY_ARGS, "--run-dir", "{tmp}/runs/" + LONG_NAME + "/run"],
        ["train", "--resume", "{tmp}/" + LONG_NAME],
        ["eval", "{tmp}/" + LONG_NAME],
        ["plot", "{tmp}/" + LONG_NAME],
    ],
    ids=["run dir", "run dir's parent", "resume", "eval", "plot"],
)
def test_a_name_too_long_for_the_file_system_is_one_line_and_leaves_nothing(tmp_path, argv):
    result = run_cli(*(arg.format(tmp=tmp_path) for arg in argv))
    one_error_line(result, TOO_LONG)
    assert list(tmp_path.iterdir()) == []  # not even the parents of the run directory


def test_an_output_path_that_is_a_directory_is_refused_before_any_work(tiny_run, tmp_path):
    before = tree_digest(tiny_run)
    (tmp_path / "episode.gif").mkdir()
    result = run_cli("eval", tiny_run, "--episodes", "1", "--video", tmp_path / "episode.gif")
    one_error_line(result, f"--video {tmp_path / 'episode.gif'} is a directory")
    assert result.stdout == ""  # refused before the evaluation began
    (tmp_path / "compare.png").mkdir()
    result = run_cli("plot", tiny_run, "--out", tmp_path / "compare.png")
    one_error_line(result, f"--out {tmp_path / 'compare.png'} is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.png", "episode.gif"]
    assert tree_digest(tiny_run) == before


def test_plot_creates_the_folder_of_its_figure(tiny_run, tmp_path):
    result = run_cli("plot", tiny_run, "--out", tmp_path / "figures" / "compare.png")
    assert result.code == 0, result.stderr
    assert [p.name for p in (tmp_path / "figures").iterdir()] == ["compare.png"]


def test_a_traced_value_beyond_float32_is_refused_before_anything_is_made(tmp_path):
    result = run_cli("train", "ppo", *TINY_ARGS, "--lr", "1e308", "--run-dir", tmp_path / "r")
    one_error_line(result, "--lr 1e+308 is beyond the float32 range")
    assert not (tmp_path / "r").exists()


def fail_compiling(monkeypatch, message: str) -> None:
    """Every chunk's compile fails with ``message`` (as XLA reports a device out of memory)."""
    from purerl.core import loop, program

    def failing(*args, **kwargs):
        raise jax.errors.JaxRuntimeError(message)

    monkeypatch.setattr(loop, "compile_chunk", failing)  # a resumed run's
    monkeypatch.setattr(program, "compile_chunk", failing)  # a new run's, beside its init


def full_disk_for_config(monkeypatch) -> None:
    real_write_json = rundir.write_json

    def write_json(path, data):
        if path.name == rundir.CONFIG_FILE:
            path.with_name(path.name + ".tmp").write_text("{")  # as far as it got
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write_json(path, data)

    monkeypatch.setattr(rundir.records, "write_json", write_json)


EARLY_FAILURES = {
    "out of memory": (
        lambda mp: fail_compiling(mp, "RESOURCE_EXHAUSTED: Out of memory allocating 9.0GiB"),
        [],
        2,
        "the device ran out of memory",
    ),
    "diverged at the first update": (
        lambda mp: None,
        ["--vf-coef", "3e38"],
        1,
        "became non-finite at update 1 (no checkpoint was saved before it)",
    ),
    "disk full writing config.json": (
        full_disk_for_config,
        [],
        2,
        "config.json: No space left on device",
    ),
}
"""Runs that fail before their first update: what makes them fail, their flags, exit code and
words."""


@pytest.mark.parametrize(
    "case, existing",
    [*((case, False) for case in EARLY_FAILURES), ("disk full writing config.json", True)],
    ids=[*EARLY_FAILURES, "disk full writing config.json, in a folder that was there"],
)
def test_a_run_that_fails_before_its_first_update_leaves_nothing(
    tmp_path, monkeypatch, case, existing
):
    make_fail, flags, code, message = EARLY_FAILURES[case]
    make_fail(monkeypatch)
    run_dir = tmp_path / "runs" / "run"
    if existing:
        run_dir.mkdir(parents=True)
    result = run_cli("train", "ppo", *TINY_ARGS, *flags, "--run-dir", run_dir)
    assert result.code == code, result.stderr
    assert len(result.error_lines) == 1 and message in result.stderr, result.stderr
    # Only what the run made is gone: a folder that was there stays, empty.
    assert [p.name for p in tmp_path.rglob("*")] == (["runs", "run"] if existing else [])


def test_out_of_memory_advice_names_the_flag_that_sizes_the_largest_state(tmp_path, monkeypatch):
    fail_compiling(monkeypatch, "RESOURCE_EXHAUSTED: Out of memory allocating 9.0GiB")
    result = run_cli("train", "dqn", *DQN_TINY_ARGS, "--run-dir", tmp_path / "dqn")
    one_error_line(result, "the largest part of the agents' state is buffer")
    assert "lower --buffer-size, --num-envs or --num-seeds" in result.stderr
    assert "--num-minibatches" not in result.stderr  # DQN has none
    result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", tmp_path / "ppo")
    one_error_line(result, "lower --num-envs, --num-seeds or the minibatch size")
    assert list(tmp_path.iterdir()) == []


def test_load_takes_an_update_count_as_an_int_and_refuses_other_types(tiny_run):
    import purerl
    from purerl.config import ConfigError

    policy = purerl.load(tiny_run, checkpoint=4)
    assert policy.obs_shape == (4,)
    for wrong in (4.0, True, None):
        with pytest.raises(ConfigError, match="checkpoint must be 'latest', 'best' or an update"):
            purerl.load(tiny_run, checkpoint=wrong)


def test_a_spec_file_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "spec.json").write_bytes(b"\xff\xfe{}")
    result = run_cli("search", "--spec", tmp_path / "spec.json")
    one_error_line(result, f"spec file {tmp_path / 'spec.json'} is not UTF-8 text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.json"]


def test_a_failed_first_checkpoint_removes_the_run_and_says_so(tmp_path, monkeypatch):
    from purerl.run import checkpoint

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint.Checkpointer, "save", full)
    run_dir = tmp_path / "run"
    result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", run_dir)
    one_error_line(result, "no checkpoint was completed: free some space and start the run again")
    assert f"with nothing to resume from, {run_dir} is removed" in result.stderr
    assert not run_dir.exists()
