"""Evaluating checkpoints: trained beats untrained, videos, renders, and clear errors."""

import jax
import numpy as np
import pytest
from PIL import Image, ImageSequence

from purerl import envs
from purerl.envs.render import DRAWERS, render_frame
from purerl.run.evaluate import evaluate, load_agents, record_episode
from purerl.run.video import write_gif
from tests.helpers import one_error_line, run_cli


@pytest.fixture(scope="module")
def trained(cartpole_run):
    """The session's CartPole run: the preset, 4 seeds, 5e5 steps (return 500)."""
    return cartpole_run.run_dir


@pytest.mark.slow
def test_trained_checkpoint_scores_high_and_untrained_low(trained, tiny_run):
    # Sampled actions: after one update of 64 steps the policy is still close to uniform
    # (~22 per episode); its greedy mode can already balance for a while.
    high = evaluate(load_agents(trained), 8, seed=0, greedy=False, max_steps=600)
    low = evaluate(load_agents(tiny_run, "1"), 8, seed=0, greedy=False, max_steps=600)
    assert np.asarray(high.finished).all() and np.asarray(low.finished).all()
    assert np.asarray(high.returns).mean() > 150, high.returns
    assert np.asarray(low.returns).mean() < 40, low.returns


@pytest.mark.slow
def test_video_has_one_frame_per_step_of_the_episode(tiny_run, tmp_path):
    recording = record_episode(load_agents(tiny_run, "1"), 0, seed=3, greedy=True, max_steps=600)
    frames, length = recording.frames, recording.episode_length
    assert length is not None and len(frames) == length
    path = tmp_path / "episode.gif"
    write_gif(frames, path, fps=20)
    durations = [f.info["duration"] for f in ImageSequence.Iterator(Image.open(path))]
    assert sum(durations) == 50 * length  # runs of identical frames are merged, time is not


@pytest.mark.slow
def test_command_prints_stats_and_writes_video(trained, tmp_path):
    video = tmp_path / "v.gif"
    proc = run_cli("eval", trained, "--episodes", "3", "--video", video, "--seed-index", "1")
    assert proc.code == 0, proc.stderr
    assert "| seed | episodes | mean | std | min | max |" in proc.stdout
    assert "mean return" in proc.stdout and video.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["/no/such/run"], "run directory /no/such/run does not exist"),
        (["{run}", "--checkpoint", "99999"], "no checkpoint '99999'"),
        (["{run}", "--seed-index", "5"], "--seed-index must lie in [0, 2)"),
        (["{run}", "--episodes", "0"], "--episodes must lie in [1, 100000]"),
        (["{run}", "--video", "v.webm"], "give a path ending in .mp4 or .gif"),
        (["{run}", "--episodes", "x"], "Error parsing --episodes"),
    ],
)
def test_bad_input_exits_2_with_one_line(tiny_run, args, message):
    one_error_line(run_cli("eval", *[a.format(run=tiny_run) for a in args]), message)


@pytest.mark.parametrize("env_id", [*DRAWERS, "Breakout-MinAtar", "Snake-v0", "ProbeConstant-v0"])
@pytest.mark.slow
def test_every_renderer_draws_a_non_blank_frame(env_id):
    env = envs.make(env_id, 2)
    state, obs = env.reset(jax.random.key(0), env.default_params)
    frame = render_frame(env, state, env.default_params, obs[1], index=1)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[-1] == 3
    assert frame.reshape(-1, 3).std(axis=0).sum() > 5  # more than one colour


def test_cartpole_frames_follow_the_pole():
    env = envs.make("CartPole-v1", 1)
    state, _ = env.reset(jax.random.key(0), env.default_params)
    upright = render_frame(env, state, env.default_params)
    inner = state.inner.replace(theta=state.inner.theta + 0.5)
    leaning = render_frame(env, state._replace(inner=inner), env.default_params)
    assert not np.array_equal(upright, leaning)


def vanishing_restore(monkeypatch, step_to_delete):
    """``checkpoint.restore`` as if a live run deleted ``step_to_delete`` mid-read (its
    checkpoint rotation): the directory goes and the first read of it fails."""
    import shutil

    from purerl.run import checkpoint, rundir

    real = checkpoint.restore

    def restore(run_dir, step, *args, **kwargs):
        if step == step_to_delete:
            shutil.rmtree(rundir.checkpoint_path(run_dir, step))
            raise checkpoint.UnreadableCheckpointError(step, "gone", "gone")
        return real(run_dir, step, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "restore", restore)


def test_reading_latest_while_a_live_run_deletes_it_takes_the_next_newest(
    tiny_run, tmp_path, monkeypatch
):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    vanishing_restore(monkeypatch, 6)
    assert load_agents(run_dir, "latest").step == 5


def test_reading_a_named_step_a_live_run_deleted_says_so(tiny_run, tmp_path, monkeypatch):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    vanishing_restore(monkeypatch, 4)
    result = run_cli("eval", run_dir, "--checkpoint", "4")
    one_error_line(result, "checkpoint 4 of")
    assert "was deleted while it was read" in result.stderr
