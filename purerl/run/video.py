"""Writing evaluation videos from RGB frames: MP4 (H.264, through imageio-ffmpeg's ffmpeg) or
an animated GIF (Pillow), chosen by the file's suffix."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from purerl.config import ConfigError
from purerl.extras import import_extra

FORMATS = (".mp4", ".gif")
"""File suffixes ``write_video`` writes."""


class VideoError(ConfigError):
    """The encoder could not write the video (an unwritable path, a full disk, an ffmpeg
    without libx264); the message carries ffmpeg's reason."""


MP4_CRF = 18
"""x264's constant rate factor: 0 is lossless, 51 worst; 18 is its usual "visually lossless"
setting, and game frames of flat colours stay small at it."""


def video_format(path: str | Path) -> str:
    """The suffix of ``path`` (lower case) if it is a format ``write_video`` writes.

    Raises:
        ValueError: any other suffix.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"videos are written as MP4 or GIF; give a path ending in .mp4 or .gif, not "
            f"{Path(path).name}"
        )
    return suffix


def require_writer(path: str | Path, feature: str = "an MP4 video") -> None:
    """Checks that the writer for ``path``'s format is installed (before any work is done).

    Raises:
        ValueError: a suffix other than ``FORMATS``.
        MissingExtraError: ``.mp4`` without imageio-ffmpeg (``pip install 'purerl[video]'``).
    """
    if video_format(path) == ".mp4":
        import_extra("imageio_ffmpeg", "'purerl[video]'", feature)


def write_video(frames: Sequence[np.ndarray], path: str | Path, fps: int = 30) -> None:
    """Writes uint8 ``[H, W, 3]`` frames as an MP4 or a GIF, by the suffix of ``path``.

    Raises:
        ValueError: no frames, or a suffix other than ``.mp4`` and ``.gif``.
        MissingExtraError: ``.mp4`` without imageio-ffmpeg.
        VideoError: ffmpeg could not write the MP4.
    """
    if video_format(path) == ".mp4":
        write_mp4(frames, path, fps)
    else:
        write_gif(frames, path, fps)


def even_frame(frame: np.ndarray) -> np.ndarray:
    """``frame`` (``[H, W, 3]`` uint8) with its last row and column repeated where H or W is
    odd: H.264 in 4:2:0 colour stores one colour sample per 2x2 block, so both sides must be
    even."""
    frame = np.asarray(frame, np.uint8)
    height, width = frame.shape[:2]
    return np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")


def write_mp4(frames: Sequence[np.ndarray], path: str | Path, fps: int = 30) -> None:
    """Writes uint8 ``[H, W, 3]`` frames as an H.264 MP4 at ``fps`` frames per second.

    The encoding is the one browsers, phones and players all play: H.264 (libx264) in the
    yuv420p pixel format, with the index at the front of the file (``+faststart``) so a web
    page can start it before it has loaded. Odd heights or widths get their last row or
    column repeated (``even_frame``), nothing is rescaled. The encoder is the ffmpeg binary that
    imageio-ffmpeg ships (or the one ``IMAGEIO_FFMPEG_EXE`` names), fed one frame at a time.

    Raises:
        ValueError: no frames, frames of different sizes, or a path not ending in ``.mp4``.
        MissingExtraError: imageio-ffmpeg is not installed (``pip install 'purerl[video]'``).
        VideoError: ffmpeg failed (its error in the message); no file is left behind.
    """
    path = Path(path)
    if path.suffix.lower() != ".mp4":
        raise ValueError(f"write_mp4 writes .mp4 files, not {path.name}")
    if not frames:
        raise ValueError("no frames to write")
    imageio_ffmpeg = import_extra("imageio_ffmpeg", "'purerl[video]'", "an MP4 video")
    height, width = even_frame(frames[0]).shape[:2]
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        imageio_ffmpeg.get_ffmpeg_exe(), "-y", "-loglevel", "error",
        "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", str(fps),
        "-i", "-", "-an",
        "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", str(MP4_CRF),
        "-movflags", "+faststart", str(path),
    ]  # fmt: skip
    with tempfile.TemporaryFile() as errors:
        ffmpeg = subprocess.Popen(command, stdin=subprocess.PIPE, stderr=errors)
        try:
            for frame in frames:
                image = even_frame(frame)
                if image.shape != (height, width, 3):
                    raise ValueError(
                        f"frames must all be [H, W, 3] of one size; got {image.shape} after "
                        f"{(height, width, 3)}"
                    )
                ffmpeg.stdin.write(image.tobytes())
        except BrokenPipeError:  # ffmpeg stopped early: its own message says why
            pass
        except BaseException:
            ffmpeg.kill()
            ffmpeg.wait()
            path.unlink(missing_ok=True)
            raise
        finally:
            with contextlib.suppress(BrokenPipeError):
                ffmpeg.stdin.close()
        code = ffmpeg.wait()
        errors.seek(0)
        message = errors.read().decode(errors="replace").strip().splitlines()
    if code != 0:
        path.unlink(missing_ok=True)
        reason = message[-1] if message else f"exit code {code}"
        raise VideoError(f"ffmpeg could not write the video {path}: {reason}")


def write_gif(frames: Sequence[np.ndarray], path: str | Path, fps: int = 30) -> None:
    """Writes uint8 ``[H, W, 3]`` frames as a looping GIF at ``fps`` frames per second.

    Like every GIF encoder, Pillow stores a run of identical frames once with their summed
    duration, so the file's total duration, not its frame count, is ``len(frames) / fps``.

    Raises:
        ValueError: no frames, or a path that does not end in ``.gif``.
    """
    from PIL import Image

    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"write_gif writes .gif files, not {path.name}")
    if not frames:
        raise ValueError("no frames to write")
    images = [Image.fromarray(np.asarray(frame, np.uint8)) for frame in frames]
    path.parent.mkdir(parents=True, exist_ok=True)
    images[0].save(
        path,
        save_all=True,
        append_images=images[1:],
        duration=max(1, round(1000 / fps)),  # milliseconds per frame
        loop=0,
    )
