"""Evaluation videos as files: MP4 frames read back by ffmpeg, odd sizes, ffmpeg's failures and
the missing extra."""

import sys

import numpy as np
import pytest

from purerl.run.evaluate import load_agents, record_episode
from purerl.run.video import VideoError, even_frame, write_video
from tests.helpers import one_error_line, run_cli


def read_mp4(path) -> tuple[dict, list[np.ndarray]]:
    """ffmpeg's description of the file's video stream, and its frames as ``[H, W, 3]`` uint8."""
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    return meta, [np.frombuffer(raw, np.uint8).reshape(height, width, 3) for raw in reader]


def moving_box(num_frames: int, height: int, width: int) -> list[np.ndarray]:
    """A red box sliding right over a dark background."""
    frames = []
    for i in range(num_frames):
        frame = np.full((height, width, 3), 30, np.uint8)
        frame[10:30, 4 * i : 4 * i + 20] = (200, 50, 60)
        frames.append(frame)
    return frames


def test_mp4_is_h264_yuv420p_and_plays_back_every_frame(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    frames = moving_box(12, 45, 61)  # odd both ways: padded to 46 x 62, not rescaled
    path = tmp_path / "box.mp4"
    write_video(frames, path, fps=20)
    meta, back = read_mp4(path)
    assert meta["codec"] == "h264" and meta["pix_fmt"].startswith("yuv420p"), meta
    assert meta["fps"] == 20 and meta["size"] == (62, 46)
    assert len(back) == len(frames)
    for original, decoded in zip(frames, back, strict=True):
        # x264 at CRF 18 in 4:2:0 colour: close everywhere, off mostly at the box's edges.
        assert np.abs(decoded[:45, :61].astype(int) - original).mean() < 2
    # The padding repeats the last row and column.
    assert np.array_equal(even_frame(frames[0])[45, :61], frames[0][44])
    assert np.array_equal(even_frame(frames[0])[:45, 61], frames[0][:, 60])


@pytest.mark.slow
def test_eval_command_writes_an_mp4_of_the_recorded_episode(tiny_run, tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    video = tmp_path / "run.mp4"
    args = ["--checkpoint", "1", "--episodes", "1", "--seed", "3", "--max-steps", "600"]
    proc = run_cli("eval", tiny_run, *args, "--video", video)
    assert proc.code == 0, proc.stderr
    assert f"video: {video} (" in proc.stdout
    recording = record_episode(load_agents(tiny_run, "1"), 0, seed=3, greedy=True, max_steps=600)
    meta, back = read_mp4(video)
    assert meta["codec"] == "h264" and meta["fps"] == 30
    assert len(back) == len(recording.frames) > 0
    height, width = recording.frames[0].shape[:2]
    assert back[0].shape == (height + height % 2, width + width % 2, 3)
    for i in (0, len(back) - 1):
        diff = np.abs(back[i][:height, :width].astype(int) - recording.frames[i])
        assert diff.mean() < 2, (i, diff.mean())


def test_mp4_without_the_video_extra_names_the_install_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import raises ImportError
    result = run_cli("eval", tmp_path / "no-such-run", "--video", tmp_path / "x.mp4")
    one_error_line(result, "--video")
    assert "pip install 'purerl[video]'" in result.stderr
    assert not (tmp_path / "x.mp4").exists()


def test_an_mp4_ffmpeg_cannot_write_is_one_error_and_no_file(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    with pytest.raises(VideoError, match="ffmpeg could not write the video /proc/"):
        write_video(moving_box(3, 20, 40), "/proc/purerl-video.mp4")  # a folder of no files
    with pytest.raises(ValueError, match=r"got \(22, 40, 3\) after \(20, 40, 3\)"):
        write_video([*moving_box(2, 20, 40), *moving_box(1, 22, 40)], tmp_path / "sizes.mp4")
    assert not (tmp_path / "sizes.mp4").exists()
