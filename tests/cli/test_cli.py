"""The ``purerl`` command in-process: runs, refusals, help, resume rules, locks.

What needs a real process (signals, the console script, the experiment scripts) is in
``test_processes.py``.
"""

import dataclasses
import errno
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from purerl import algos
from purerl.algos.dqn import DQNConfig
from purerl.algos.ppo import PPOConfig
from purerl.run import rundir
from tests.helpers import DQN_TINY_ARGS, TINY_ARGS, one_error_line, run_cli, tree_digest


def rows(run_dir):
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def test_tiny_ppo_run_writes_config_metrics_and_summary(tiny_run):
    config = json.loads((tiny_run / "config.json").read_text())
    assert config["algo"] == "ppo" and config["config"]["num_envs"] == 4
    assert config["config"]["hidden_sizes"] == [16] and config["run"]["keep_checkpoints"] == 10
    # The tiny flags are PPO's smoke configuration, so their programs are the ones other tests
    # compile (and the compilation cache serves).
    saved = rundir.read_config(tiny_run / "config.json").make_config(PPOConfig, tiny_run)
    assert saved == dataclasses.replace(algos.get("ppo").smoke, num_seeds=2)
    assert [r["update"] for r in rows(tiny_run)] == [1, 2, 3, 4, 5, 6]
    assert rows(tiny_run)[-1]["env_steps"] == 384
    assert len(rows(tiny_run)[-1]["per_seed"]["loss/total"]) == 2
    summary = json.loads((tiny_run / "summary.json").read_text())
    for key in [
        "final_mean_return", "final_std_return", "per_seed_final_return", "total_env_steps",
        "wall_time_s", "compile_time_s", "train_time_s", "checkpoint_time_s",
        "steps_per_second", "sessions",
    ]:  # fmt: skip
        assert key in summary
    assert summary["total_env_steps"] == 768 and len(summary["per_seed_final_return"]) == 2
    from matplotlib.image import imread

    for name in ["returns.png", "returns_smoothed.png"]:
        assert imread(tiny_run / name).shape[:2] == (500, 800), name


@pytest.mark.slow
def test_default_run_dir_goes_under_runs(tmp_path, monkeypatch, curves):
    monkeypatch.chdir(tmp_path)
    result = run_cli("train", "ppo", *TINY_ARGS, "--no-checkpoints", "--no-curves")
    assert result.code == 0, result.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("ppo-CartPole-v1-")
    assert (run_dir / "summary.json").exists()
    # --no-curves (as PURERL_CURVES=0, which the test session sets) draws none, nor says so.
    assert not list(run_dir.glob("*.png")) and "learning curves" not in result.stdout
    assert "final mean return" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--num-minibatches", "3"], "--num-minibatches 3 does not divide the batch of 64"),
        (["--num-envs", "0"], "--num-envs must be positive"),
        (["--env", "CartPol-v1"], "unknown environment id 'CartPol-v1'; did you mean CartPole-v1"),
        (["--total-timesteps", "10"], "is less than one update"),
        (["--total-timesteps", str(10**23)], "--total-timesteps 100,000,000,000,000,000,000,000"),
        (["--gamma", "1.5"], "--gamma must lie in [0, 1]"),
        (["--lr", "inf"], "--lr must be finite"),
        (["--lr", "nan"], "--lr must be finite"),
        (["--env-options", "nonsense"], "--env-options takes key=value pairs"),
        (["--env-options", "foo=1"], "CartPole-v1 has no parameter foo"),
        (["--env-options", "max_steps_in_episode=abc"], "max_steps_in_episode takes a number"),
        (["--env-options", "max_steps_in_episode=2.5"], "takes a whole number"),
        (["--precision", "fp16"], "invalid choice 'fp16' for argument '--precision'"),
        (["--activation", "swishh"], "Expected one of ('tanh', 'relu', 'gelu', 'swish')"),
        (["--parallel", "foo"], "Expected one of ('seeds', 'data')"),
        (["--device", "tpu"], "--device"),
        (["--updates-per-chunk", "-1"], "--updates-per-chunk must lie in [1, 2,147,483,647]"),
        (["--keep-checkpoints", "-1"], "--keep-checkpoints must lie in [1, 100,000]"),
        (["--keep-checkpoints", str(10**9)], "--keep-checkpoints must lie in [1, 100,000]"),
        (["--checkpoint-every", "0"], "--checkpoint-every must lie in [1, "),
        (["--checkpoint-minutes", "0"], "--checkpoint-minutes must be a positive number"),
        (["--checkpoint-minutes", "1e9"], "--checkpoint-minutes must be a positive number"),
        (["--plot-window", "0"], "--plot-window must lie in [1, "),
        (["--plot-window", str(10**20)], "--plot-window must lie in [1, "),
        (["--hidden-sizes", "0"], "--hidden-sizes must be 1 to 64 widths"),
        (["--seed", "-1"], "--seed must lie in"),
        (["--lr"], "Missing value for argument '--lr'"),
        (["--no-such-flag", "1"], "Unrecognized options: --no-such-flag"),
        (["--bogus-flag"], "Unrecognized options: --bogus-flag"),
        (["--lr", "abc"], "Error parsing --lr: could not convert string to float: 'abc'"),
        (["--network", "rnn"], "--network must be mlp, gru or lstm, or module:attr naming a"),
        (["--network", "gru", "--bptt-len", "5"], "--bptt-len 5 must divide --rollout-len 16"),
        (["--preset", "NoSuchPreset"], "unknown preset 'NoSuchPreset' for ppo; presets:"),
        (["--resume-from", "3"], "--resume-from goes with --resume"),
        (["--config", "a.json", "--resume", "b"], "--resume and --config exclude each other"),
        (["--num-devices", "3"], "--num-devices 3: 1 cpu device(s) are available"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, args, message):
    run_dir = tmp_path / "run"
    result = run_cli("train", "ppo", *TINY_ARGS, *args, "--run-dir", run_dir)
    one_error_line(result, message)
    assert not run_dir.exists()


def test_a_state_too_big_for_memory_is_refused_before_anything_is_made(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("train", "dqn", "--buffer-size", str(10**12), "--run-dir", run_dir)
    one_error_line(result, "the agents' state needs 38.2 TiB per device")
    assert "its largest part, buffer," in result.stderr and "--num-seeds" in result.stderr
    assert not run_dir.exists()


def test_a_huge_budget_is_refused_within_a_second(tmp_path):
    start = time.perf_counter()
    result = run_cli("train", "ppo", "--total-timesteps", str(10**23), "--run-dir", tmp_path / "r")
    assert time.perf_counter() - start < 1.0
    one_error_line(result, "about a year at 30M steps/s")
    assert not (tmp_path / "r").exists()


def test_unknown_commands_and_algorithms_name_the_choices():
    one_error_line(run_cli("trian"), "unknown command 'trian'; choose one of train, eval")
    one_error_line(run_cli("train", "a2c"), "unknown algorithm 'a2c'; choose one of ppo, dqn")
    one_error_line(run_cli("train", "--lr", "1"), "name the algorithm first")


def test_existing_run_dir_is_never_overwritten(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "keep.txt").write_text("precious")
    result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", run_dir)
    one_error_line(result, "already exists and is not empty")
    assert sorted(p.name for p in run_dir.iterdir()) == ["keep.txt"]
    assert (run_dir / "keep.txt").read_text() == "precious"


def test_an_unusable_run_dir_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", blocker / "run")
    one_error_line(result, f"cannot create run directory {blocker / 'run'}")

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(Path, "mkdir", read_only)
    result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", tmp_path / "ro" / "run")
    one_error_line(result, "Read-only file system")


def test_dry_run_checks_everything_and_writes_nothing(tmp_path):
    result = run_cli(
        "train", "ppo", "--env", "Pendulum-v1", "--dry-run", "--run-dir", tmp_path / "r"
    )
    assert result.code == 0, result.stderr
    assert "ppo on Pendulum-v1: 1 seed(s), 999,424 steps per seed in 244 updates" in result.stdout
    assert not (tmp_path / "r").exists()


def test_help_lists_flags_choices_and_the_preset_it_starts_from():
    result = run_cli("train", "ppo", "--env", "Pendulum-v1", "--help")
    assert result.code == 0
    text = " ".join(result.stdout.split())  # help is wrapped to the terminal's width
    for flag in [
        "--env", "--num-envs", "--num-seeds", "--total-timesteps", "--lr", "--run-dir", "--seed",
        "--clip-eps", "--ent-coef",
    ]:  # fmt: skip
        assert flag in text
    assert "{tanh,relu,gelu,swish}" in text and "{fp32,bf16}" in text
    assert "Defaults: preset Pendulum-v1." in text and "Presets:" in text
    assert "(default: None)" not in text  # one default per flag, in words where None stands in
    assert "--checkpoint-buffer" not in text  # a DQN run option: only under dqn
    dqn_help = run_cli("train", "dqn", "--help").stdout
    for flag in [
        "--checkpoint-buffer", "--buffer-size", "--learning-starts", "--double-q", "--tau",
        "--eps-end",
    ]:  # fmt: skip
        assert flag in dqn_help


@pytest.mark.parametrize("name", algos.names())
def test_without_env_the_default_environments_preset_applies(name):
    # The help header names the preset a bare `purerl train <algo>` starts from; the run and
    # purerl.train(name) must start from that same configuration.
    spec = algos.get(name)
    default_env = spec.config_cls().env
    assert spec.base_config() == spec.base_config(default_env)
    if default_env in spec.presets:
        help_text = " ".join(run_cli("train", name, "--help").stdout.split())
        assert f"Defaults: preset {default_env}." in help_text
        dry = run_cli("train", name, "--dry-run")
        preset = spec.presets[default_env]
        assert f"in {preset.num_updates} updates" in dry.stdout, dry.stdout


@pytest.mark.slow
def test_tiny_dqn_run_writes_config_metrics_and_summary(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("train", "dqn", *DQN_TINY_ARGS, "--num-seeds", "2", "--run-dir", run_dir)
    assert result.code == 0, result.stderr
    config = json.loads((run_dir / "config.json").read_text())
    assert config["algo"] == "dqn" and config["config"]["buffer_size"] == 64
    saved = rundir.read_config(run_dir / "config.json").make_config(DQNConfig, run_dir)
    assert saved == dataclasses.replace(algos.get("dqn").smoke, num_seeds=2)
    metrics = rows(run_dir)
    assert [r["update"] for r in metrics] == [1, 2, 3, 4, 5, 6]
    # The first update only fills the buffer: no loss yet, and no error about it either.
    assert metrics[0]["loss/total"] is None and metrics[0]["optim/gradient_steps"] == 0
    assert metrics[-1]["loss/total"] is not None and metrics[-1]["optim/gradient_steps"] == 8
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["total_env_steps"] == 384 and len(summary["per_seed_final_return"]) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch-size", "128"], "--batch-size 128 exceeds --buffer-size 64"),
        (["--learning-starts", "192"], "--learning-starts 192 is not below the run's 192 steps"),
        (["--env", "Pendulum-v1"], "DQN needs discrete actions"),
        (["--loss", "l1"], "Expected one of ('huber', 'mse')"),
    ],
)
def test_bad_dqn_arguments_exit_2_with_one_line(tmp_path, args, message):
    run_dir = tmp_path / "run"
    one_error_line(run_cli("train", "dqn", *DQN_TINY_ARGS, *args, "--run-dir", run_dir), message)
    assert not run_dir.exists()


# ---- resuming -----------------------------------------------------------------------------


@pytest.fixture
def stopped_run(tiny_run, tmp_path):
    """A copy of the tiny run that looks stopped at update 4 (checkpoints 1-4)."""
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    for step in (5, 6):
        shutil.rmtree(run_dir / "checkpoints" / str(step))
    return run_dir


@pytest.mark.slow
def test_resume_continues_to_the_uninterrupted_result(tiny_run, stopped_run):
    result = run_cli("train", "--resume", stopped_run)  # the algorithm is read from the run
    assert result.code == 0, result.stderr
    assert "resuming at update 4" in result.stdout
    finished = [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows(tiny_run)]
    resumed = [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows(stopped_run)]
    assert resumed == finished


@pytest.mark.parametrize(
    "args, message",
    [
        (["--lr", "0.1"], "--lr cannot change when resuming"),
        (["--parallel", "data"], "--parallel cannot change when resuming"),
        (["--run-dir", "elsewhere"], "--run-dir cannot change when resuming"),
        (["--config", "x.json"], "--resume and --config exclude each other"),
    ],
)
def test_resuming_with_a_fixed_flag_is_refused_and_touches_nothing(stopped_run, args, message):
    before = tree_digest(stopped_run)
    one_error_line(run_cli("train", "ppo", "--resume", stopped_run, *args), message)
    assert tree_digest(stopped_run) == before


@pytest.mark.parametrize("case", ["missing", "no checkpoint", "other run", "other algorithm"])
def test_bad_resume_exits_2_with_one_line_and_touches_nothing(tmp_path, stopped_run, case):
    run_dir = tmp_path / "case"
    algo = "ppo"
    if case == "no checkpoint":
        result = run_cli("train", "ppo", *TINY_ARGS, "--run-dir", run_dir, "--no-checkpoints")
        assert result.code == 0, result.stderr
    elif case == "other run":
        shutil.copytree(stopped_run, run_dir)
        config = json.loads((run_dir / "config.json").read_text())
        config["config"]["hidden_sizes"] = [8]
        (run_dir / "config.json").write_text(json.dumps(config))
    elif case == "other algorithm":
        shutil.copytree(stopped_run, run_dir)
        algo = "dqn"
    before = tree_digest(run_dir) if run_dir.exists() else None
    result = run_cli("train", algo, "--resume", run_dir)
    expected = {
        "missing": "does not exist",
        "no checkpoint": "has no complete checkpoint",
        "other run": "does not match this run's configuration (hidden_sizes",
        "other algorithm": "holds a ppo run, not dqn; use: purerl train ppo --resume",
    }[case]
    one_error_line(result, expected)
    assert (tree_digest(run_dir) if run_dir.exists() else None) == before


def test_every_checkpoint_unreadable_is_one_line_and_nothing_is_moved(stopped_run):
    for path in (stopped_run / "checkpoints").rglob("*"):
        if path.is_file() and path.stat().st_size > 0 and "state" in path.parts:
            path.write_bytes(b"\0" * path.stat().st_size)
    before = tree_digest(stopped_run)
    one_error_line(run_cli("train", "--resume", stopped_run), "no checkpoint of")
    assert tree_digest(stopped_run) == before


def test_a_locked_run_is_refused_naming_the_holder(stopped_run):
    lock = rundir.RunLock(stopped_run).acquire()
    try:
        before = tree_digest(stopped_run)
        one_error_line(
            run_cli("train", "--resume", stopped_run),
            f"in use by a live training process (PID {os.getpid()})",
        )
        assert tree_digest(stopped_run) == before
    finally:
        lock.release()
    assert run_cli("train", "--resume", stopped_run).code == 0


@pytest.mark.slow
def test_a_saved_config_reproduces_the_run_bit_for_bit(tiny_run, tmp_path):
    again = tmp_path / "again"
    result = run_cli(
        "train", "ppo", "--config", tiny_run / "config.json", "--run-dir", again,
        "--updates-per-chunk", "1", "--no-progress",
    )  # fmt: skip
    # Chunked as the tiny run was: the programs of other chunk lengths give equal rows with
    # the emitters users get, which the invariants check (test_one_chunk_equals_several_chunks).
    assert result.code == 0, result.stderr
    strip = lambda rs: [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rs]  # noqa: E731
    assert strip(rows(again)) == strip(rows(tiny_run))


@pytest.mark.parametrize(
    "text",
    [
        "╭─ Value error ──────╮\n│ Error parsing --lr: 'abc' │\n│ ─────────── │\n"
        "│ Argument helptext: │\n╰────────╯\n",
        "Value error\n-----------\nError parsing --lr: 'abc'\n-----------\nArgument helptext:\n",
    ],
    ids=["boxed", "plain"],
)
def test_a_parser_error_is_condensed_to_its_message(text):
    from purerl.cli.parsing import first_paragraph

    assert first_paragraph(text) == "Error parsing --lr: 'abc'"


def test_dry_run_prints_the_resolved_configuration():
    result = run_cli("train", "ppo", "--env", "CartPole-NoVelocity-v1", "--dry-run", "--lr", "3e-4")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    expected_lines = [
        "  --network gru",
        "  --lr 0.0003",
        "  --hidden-sizes 64",
        "  --no-normalize-obs",
    ]
    for expected in expected_lines:
        assert expected in lines, result.stdout


HELP_COMMANDS = [
    [], ["train"], *(["train", name] for name in algos.names()),
    ["eval"], ["plot"], ["search"], ["envs"], ["doctor"],
]  # fmt: skip


@pytest.mark.parametrize("columns, width", [(None, 100), ("80", 80), ("300", 100)])
def test_every_help_is_plain_text_wrapped_to_the_terminal(monkeypatch, columns, width):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for command in HELP_COMMANDS:
        result = run_cli(*command, "--help")
        assert result.code == 0 and result.stdout.strip(), (command, result.stderr)
        text = result.stdout
        assert "``" not in text, command  # reST literals lose their backticks
        assert "{None,True,False}" not in text, command  # booleans are flag pairs
        too_long = [line for line in text.splitlines() if len(line) > width]
        assert not too_long, (command, too_long)
    doctor_help = " ".join(run_cli("doctor", "--help").stdout.split())
    assert "--atari, --no-atari" in doctor_help and "(default: on with a GPU" in doctor_help


def test_docstrings_become_plain_paragraphs():
    from purerl.cli.parsing import plain_text

    doc = """``purerl x``: one
    paragraph.

    - ``a``: an item that goes on
      over two lines;
    - b.

        purerl x --flag \\
            --other
    """
    assert plain_text(doc) == (
        "purerl x: one paragraph.\n\n- a: an item that goes on over two lines;\n- b.\n\n"
        "    purerl x --flag \\\n        --other"
    )
    assert plain_text("``one`` two three four", width=10) == "one two\nthree four"


def test_the_command_exits_at_once_unless_a_profiler_or_users_code_needs_the_usual_exit(
    monkeypatch, capsys
):
    # Owning its process, the command skips the interpreter's teardown (cli.exit_now); under
    # cProfile or a debugger, or with a module of the user's loaded, it returns.
    import purerl.cli
    from purerl.envs import custom

    exits = []
    monkeypatch.setattr(purerl.cli, "exit_now", exits.append)
    monkeypatch.setattr(custom, "USER_MODULES", set())
    monkeypatch.setattr(sys, "argv", ["purerl", "--version"])
    assert purerl.cli.main() == 0 and exits == [0]
    previous = sys.getprofile()
    sys.setprofile(lambda *args: None)
    try:
        assert purerl.cli.main() == 0
    finally:
        sys.setprofile(previous)
    monkeypatch.setattr(custom, "USER_MODULES", {"my_envs"})
    assert purerl.cli.main() == 0
    assert exits == [0] and capsys.readouterr().out.count("purerl ") == 3


def test_the_collector_rests_while_a_command_loads_and_its_modules_are_frozen_after(monkeypatch):
    # Owning its process, the command loads its module with the garbage collector off, then
    # freezes what it loaded (cli.Startup); a help or usage answer that loads nothing thaws.
    import gc

    import purerl.cli

    monkeypatch.setattr(purerl.cli, "STARTUP", purerl.cli.Startup())
    seen = {}

    class Command:
        @staticmethod
        def main(argv, prog):
            seen["enabled"], seen["frozen"] = gc.isenabled(), gc.get_freeze_count()
            return 0

    def load(module):
        seen["loading"] = gc.isenabled()
        return purerl.cli.STARTUP.end() or Command

    monkeypatch.setattr(purerl.cli, "load", load)
    monkeypatch.setattr(purerl.cli, "exit_now", lambda code: None)
    frozen_before = gc.get_freeze_count()  # the test session's own (conftest)
    gc.unfreeze()
    try:
        monkeypatch.setattr(sys, "argv", ["purerl", "envs"])
        assert purerl.cli.main() == 0
        assert seen == {"loading": False, "enabled": True, "frozen": seen["frozen"]}
        assert seen["frozen"] > 1000 and gc.isenabled()
        gc.unfreeze()
        monkeypatch.setattr(sys, "argv", ["purerl", "--version"])
        assert purerl.cli.main() == 0 and gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        if frozen_before:
            gc.freeze()
