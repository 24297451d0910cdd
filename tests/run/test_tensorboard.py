"""TensorBoard sink and event-file reader; the optional W&B sink with a stand-in module."""

import builtins
import importlib.util
import json
import sys
import types

import numpy as np
import pytest

from purerl.config import ConfigError
from purerl.extras import MissingExtraError
from purerl.run.tensorboard import TensorBoardSink, iter_records, masked_crc32c, read_scalars
from tests.helpers import TINY_ARGS, chunk_reports, run_cli

needs_tensorboardx = pytest.mark.skipif(
    importlib.util.find_spec("tensorboardX") is None,
    reason="needs the tensorboard extra: pip install 'purerl[tensorboard]'",
)

# Two seeds, three updates; seed 0 finished no episode in update 2.
RETURNS = np.array([[10.0, np.nan, 30.0], [20.0, 40.0, 50.0]])
COUNTS = np.array([[1, 0, 2], [1, 1, 1]])
SUMMARY = {"final_mean_return": 35.0, "per_seed_final_return": [30.0, None], "num_seeds": 2}


def write_synthetic_events(log_dir, frame_skip=4):
    sink = TensorBoardSink(log_dir, env_steps_per_update=64, frame_skip=frame_skip)
    for report in chunk_reports(RETURNS, COUNTS, chunk_len=2):
        sink.write(report)
    sink.close({**SUMMARY, "algo": "ppo", "interrupted": True})
    return read_scalars(log_dir)


@needs_tensorboardx
def test_sink_writes_means_per_seed_values_and_steps(tmp_path):
    scalars = write_synthetic_events(tmp_path / "tb")
    # The mean over the seeds with a value: update 2 has only seed 1's 40.
    assert scalars["episode/return"] == [(64, 15.0), (128, 40.0), (192, 40.0)]
    assert scalars["episode/return/seed_0"] == [(64, 10.0), (192, 30.0)]
    assert scalars["episode/return/seed_1"] == [(64, 20.0), (128, 40.0), (192, 50.0)]
    assert scalars["episode/count/seed_0"] == [(64, 1.0), (128, 0.0), (192, 2.0)]
    assert [step for step, _ in scalars["loss/total"]] == [64, 128, 192]
    assert scalars["perf/frames"] == [(64, 256.0), (128, 512.0), (192, 768.0)]
    # Once per chunk: 2 seeds x 128 steps in 0 s (clamped), then 2 x 192 steps in 1 s.
    assert [step for step, _ in scalars["perf/steps_per_second"]] == [128, 192]
    assert scalars["perf/steps_per_second"][1] == (192, 384.0)


@needs_tensorboardx
def test_sink_writes_the_summary_numbers_at_the_last_step(tmp_path):
    scalars = write_synthetic_events(tmp_path / "tb")
    assert scalars["summary/final_mean_return"] == [(192, 35.0)]
    assert scalars["summary/per_seed_final_return/seed_0"] == [(192, 30.0)]
    assert scalars["summary/num_seeds"] == [(192, 2.0)]
    # Strings, booleans and undefined values are not scalars.
    for tag in ["summary/algo", "summary/interrupted", "summary/per_seed_final_return/seed_1"]:
        assert tag not in scalars


@needs_tensorboardx
def test_a_resumed_run_replaces_the_updates_after_its_checkpoint(tmp_path):
    write_synthetic_events(tmp_path / "tb")  # three updates, then stopped
    # Resumed from a checkpoint after update 2: update 3 is trained (and logged) again.
    resumed = TensorBoardSink(tmp_path / "tb", env_steps_per_update=64, start_update=2)
    returns = np.array([[7.0, 8.0], [9.0, 10.0]])
    for report in chunk_reports(returns, np.ones((2, 2)), chunk_len=2):
        resumed.write(report._replace(first_update=2))
    resumed.close(SUMMARY)
    assert len(list((tmp_path / "tb").iterdir())) == 2
    scalars = read_scalars(tmp_path / "tb")
    assert scalars["episode/return/seed_0"] == [(64, 10.0), (192, 7.0), (256, 8.0)]
    # The first run's summary was logged at its last step, 192, past the checkpoint: hidden.
    assert scalars["summary/final_mean_return"] == [(256, 35.0)]


@needs_tensorboardx
def test_a_real_run_with_tensorboard_matches_metrics_jsonl(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli(
        "train", "ppo", *TINY_ARGS, "--num-seeds", "2", "--run-dir", run_dir, "--tensorboard"
    )
    assert result.code == 0, result.stderr
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    scalars = read_scalars(run_dir / "tensorboard")
    assert [step for step, _ in scalars["loss/total"]] == [64 * u for u in range(1, 7)]
    for metric in ["loss/total", "loss/entropy", "episode/length"]:
        for seed in range(2):
            expected = [
                (row["env_steps"], row["per_seed"][metric][seed])
                for row in rows
                if row["per_seed"][metric][seed] is not None
            ]
            got = scalars[f"{metric}/seed_{seed}"]
            assert [s for s, _ in got] == [s for s, _ in expected]
            np.testing.assert_allclose([v for _, v in got], [v for _, v in expected], rtol=1e-6)
    summary = json.loads((run_dir / "summary.json").read_text())
    ((step, value),) = scalars["summary/final_mean_return"]
    assert step == 384 and value == pytest.approx(summary["final_mean_return"], rel=1e-6)


@needs_tensorboardx
def test_reader_skips_a_record_cut_short_and_rejects_corruption(tmp_path):
    write_synthetic_events(tmp_path / "tb")
    (path,) = (tmp_path / "tb").iterdir()
    data = path.read_bytes()
    complete = iter_records(data)
    assert len(iter_records(data[:-7])) == len(complete) - 1  # a writer mid-record
    corrupt = bytearray(data)
    corrupt[-6] ^= 0xFF
    with pytest.raises(ValueError, match="corrupt record payload"):
        iter_records(bytes(corrupt))


def test_masked_crc32c_known_values():
    # CRC-32C check value of "123456789" is 0xE3069283 (RFC 3720, appendix B.4); masked as
    # TFRecord does: rotate right by 15, add 0xA282EAD8.
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc32c(b"") == 0xA282EAD8


def hide_module(monkeypatch, name):
    real_import = builtins.__import__

    def fake_import(module, *args, **kwargs):
        if module == name or module.startswith(name + "."):
            raise ImportError(f"No module named {module!r}")
        return real_import(module, *args, **kwargs)

    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_missing_tensorboardx_is_a_clear_config_error(monkeypatch, tmp_path):
    hide_module(monkeypatch, "tensorboardX")
    with pytest.raises(MissingExtraError, match=r"pip install 'purerl\[tensorboard\]'") as info:
        TensorBoardSink(tmp_path, 64)
    assert "--tensorboard" in str(info.value)
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ImportError)


def test_missing_wandb_is_a_clear_error(monkeypatch):
    from purerl.run.wandb_sink import WandbSink

    hide_module(monkeypatch, "wandb")
    with pytest.raises(
        MissingExtraError, match=r"--wandb-project needs .* pip install 'purerl\[wandb\]'"
    ):
        WandbSink("project", "run", {}, 64)


def test_wandb_sink_logs_rows_by_env_step(monkeypatch):
    from purerl.run.wandb_sink import WandbSink

    calls = {"log": [], "summary": {}}
    run = types.SimpleNamespace(
        log=lambda data, step: calls["log"].append((step, data)),
        summary=calls["summary"],
        finish=lambda: calls.setdefault("finished", True),
    )

    def init(**kwargs):
        calls["init"] = kwargs
        return run

    fake = types.ModuleType("wandb")
    fake.init = init
    monkeypatch.setitem(sys.modules, "wandb", fake)
    sink = WandbSink("proj", "run-1", {"algo": "ppo"}, env_steps_per_update=64, frame_skip=4)
    for report in chunk_reports(RETURNS, COUNTS, chunk_len=2):
        sink.write(report)
    sink.close(SUMMARY)
    assert calls["init"] == {
        "project": "proj",
        "name": "run-1",
        "config": {"algo": "ppo"},
        "dir": None,
    }
    assert [step for step, _ in calls["log"]] == [64, 128, 192]
    step, data = calls["log"][1]
    assert data["episode/return"] == 40.0 and data["episode/return/seed_0"] is None
    assert data["perf/frames"] == 512
    assert calls["summary"]["summary/final_mean_return"] == 35.0 and calls["finished"]
