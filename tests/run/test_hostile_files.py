"""Run directories whose files purerl did not write: bytes that are not UTF-8, a directory where a
file belongs, JSON of the wrong shape or types. Every command that reads such a run (``eval``,
``train --resume``, ``train --config``, ``plot``) and ``purerl.load`` stop with one ``error:``
line, or the typed error, naming the file and what to do, and leave the directory as it was. A
checkpoint that a run still training deletes under a reader is not reported as damaged.

Every test reads a copy of the session's tiny PPO run (``conftest.tiny_run``: 2 seeds, a
checkpoint after each of its 6 updates), trained once.
"""

import json
import shutil
import threading
from pathlib import Path

import pytest

from purerl.run import checkpoint, rundir
from tests.helpers import one_error_line, run_cli, tree_digest

NOT_UTF8 = b"\xff\xfe{}"
"""What no purerl writer produces: bytes that are not UTF-8 text."""


@pytest.fixture(scope="module")
def trained(tiny_run) -> Path:
    """The run every test here copies (``run_copy``); never changed itself."""
    return tiny_run


@pytest.fixture
def run_copy(trained, tmp_path) -> Path:
    return Path(shutil.copytree(trained, tmp_path / "run"))


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def refused_and_unchanged(run_dir: Path, argv: list, message: str) -> str:
    """``purerl ARGV`` exits 2 with one line holding ``message`` and changes no file of
    ``run_dir`` (``{run}`` in ``argv`` stands for it); returns the line."""
    before = tree_digest(run_dir)
    result = run_cli(*(str(a).format(run=run_dir) for a in argv))
    one_error_line(result, message)
    assert tree_digest(run_dir) == before
    return result.stderr


CONFIG_READERS = {
    "eval": ["eval", "{run}", "--episodes", "1"],
    "resume": ["train", "--resume", "{run}"],
    "config of a run": ["train", "--config", "{run}", "--run-dir", "{run}-new"],
    "config file": ["train", "ppo", "--config", "{run}/config.json", "--run-dir", "{run}-new"],
    "plot": ["plot", "{run}", "--out", "{run}-plot.png"],
}
"""Every command that reads a run's ``config.json``."""


@pytest.mark.parametrize("command", CONFIG_READERS)
def test_a_config_json_that_is_not_utf8_is_refused_by_every_command(run_copy, command):
    (run_copy / rundir.CONFIG_FILE).write_bytes(NOT_UTF8)
    message = f"{run_copy / rundir.CONFIG_FILE} is not UTF-8 text (byte 0xff at offset 0)"
    line = refused_and_unchanged(run_copy, CONFIG_READERS[command], message)
    assert line.rstrip().endswith("restore it from a copy or move it away")
    assert sorted(p.name for p in run_copy.parent.iterdir()) == ["run"]  # nothing new


def test_load_raises_the_typed_error_for_a_config_json_that_is_not_utf8(run_copy):
    import purerl

    (run_copy / rundir.CONFIG_FILE).write_bytes(NOT_UTF8)
    with pytest.raises(checkpoint.CheckpointError, match="is not UTF-8 text"):
        purerl.load(run_copy)
    with pytest.raises(rundir.NotARunError, match="is not UTF-8 text"):
        rundir.load_run(run_copy)


def test_a_config_json_nested_too_deeply_is_not_json(run_copy):
    (run_copy / rundir.CONFIG_FILE).write_text("[" * 100_000 + "]" * 100_000)
    refused_and_unchanged(run_copy, ["eval", "{run}"], "is not valid JSON (nested too deeply)")


def test_a_mistyped_run_option_in_config_json_is_refused_on_resume(run_copy):
    edit_json(run_copy / rundir.CONFIG_FILE, lambda d: d["run"].update(device=[1, 2]))
    refused_and_unchanged(
        run_copy,
        ["train", "--resume", "{run}"],
        f"the run options saved in {run_copy} do not validate: --device must be one of auto, "
        "cpu, gpu or a whole number, got (1, 2)",
    )


def test_a_mistyped_configuration_field_names_the_run(run_copy):
    edit_json(run_copy / rundir.CONFIG_FILE, lambda d: d["config"].update(num_envs="four"))
    message = f"the configuration saved in {run_copy} does not validate: --num-envs must be"
    refused_and_unchanged(run_copy, ["eval", "{run}"], message)


@pytest.mark.parametrize("damage", ["not utf-8", "a directory"])
@pytest.mark.parametrize("command", ["resume", "plot"])
def test_a_metrics_file_purerl_did_not_write_is_refused(run_copy, damage, command):
    path = run_copy / rundir.METRICS_FILE
    if damage == "a directory":
        path.unlink()
        path.mkdir()
        # A resume's check of the paths it writes (``rundir.require_safe_paths``) and plot's
        # read of the rows word the fix each their way; both name the directory.
        message = f"{path} is a directory"
    else:
        path.write_bytes(path.read_bytes()[:100] + b"\xff\n")
        message = f"{path} is not UTF-8 text (byte 0xff at offset 100)"
    argv = CONFIG_READERS[command]
    refused_and_unchanged(run_copy, argv, message)
    with pytest.raises(rundir.NotARunError, match="move it away"):
        rundir.load_run(run_copy)


def replace_row(index: int, change):
    """A change to ``metrics.jsonl``: its row ``index`` becomes ``change(row)``."""

    def damage(run_dir: Path) -> None:
        path = run_dir / rundir.METRICS_FILE
        lines = path.read_text().splitlines()
        lines[index] = json.dumps(change(json.loads(lines[index])))
        path.write_text("\n".join(lines) + "\n")

    return damage


def replace_summary(text: str):
    return lambda run_dir: (run_dir / rundir.SUMMARY_FILE).write_text(text)


def summary_with(**fields):
    def damage(run_dir: Path) -> None:
        edit_json(run_dir / rundir.SUMMARY_FILE, lambda data: data.update(fields))

    return damage


MALFORMED = {
    "row that is a list": (replace_row(1, lambda row: [1, 2]), "line 2 is not a metrics row"),
    "per_seed a string": (
        replace_row(1, lambda row: {**row, "per_seed": "x"}),
        "does not hold purerl metrics rows",
    ),
    "update beyond int64": (
        replace_row(2, lambda row: {**row, "update": 10**30}),
        "does not hold purerl metrics rows",
    ),
    "returns that are text": (
        replace_row(0, lambda row: {**row, "per_seed": {"episode/return": ["a", "b"]}}),
        "does not hold purerl metrics rows",
    ),
    "summary a list": (replace_summary("[1, 2]"), "not a purerl summary: it holds a JSON list"),
    "summary without algo": (replace_summary('{"bogus": 1}'), "not a purerl summary: it has no"),
    "summary return as text": (
        summary_with(final_mean_return="abc"),
        "its final_mean_return must be a number, got 'abc'",
    ),
    "summary without seeds": (summary_with(num_seeds=0), "its num_seeds is 0"),
    "summary mean without std": (
        summary_with(final_std_return=None),
        "only one of final_mean_return and final_std_return",
    ),
    "summary not utf-8": (
        lambda run_dir: (run_dir / rundir.SUMMARY_FILE).write_bytes(NOT_UTF8),
        "is not UTF-8 text",
    ),
}
"""Damage to a run's rows or summary, and a words of the refusal."""


@pytest.mark.parametrize("case", MALFORMED)
def test_plot_refuses_malformed_rows_and_summaries_in_one_line(run_copy, case):
    damage, message = MALFORMED[case]
    damage(run_copy)
    refused_and_unchanged(run_copy, CONFIG_READERS["plot"], message)
    assert not Path(f"{run_copy}-plot.png").exists()
    assert not Path(f"{run_copy}-plot.png.tmp").exists()


def test_a_checkpoint_deleted_while_eval_reads_it_is_not_called_damaged(run_copy, monkeypatch):
    # A run still training lets its oldest checkpoints go as it saves new ones; orbax deletes
    # a checkpoint's files, then its directory. A reader caught in between finds files missing
    # in a directory still there: it must take the newest complete checkpoint, and say nothing.
    newest = max(rundir.complete_checkpoints(run_copy))
    path = rundir.checkpoint_path(run_copy, newest)
    real_read_record = checkpoint._read_record
    reads = {"count": 0}

    def deleted_while_read(manager, step):
        if step == newest:
            reads["count"] += 1
            if reads["count"] == 2:  # the restore's read (the first is the layout's)
                for file in [p for p in path.rglob("*") if p.is_file()]:
                    file.unlink()
                threading.Timer(0.3, shutil.rmtree, [path]).start()
        return real_read_record(manager, step)

    monkeypatch.setattr(checkpoint, "_read_record", deleted_while_read)
    result = run_cli("eval", run_copy, "--episodes", "1")
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    assert f"checkpoint {newest - 1} (latest)" in result.stdout
    assert reads["count"] >= 2
