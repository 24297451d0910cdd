"""Writing evaluation videos: animated GIFs from RGB frames (Pillow)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def write_gif(frames: Sequence[np.ndarray], path: Path, fps: int = 30) -> None:
    """Writes uint8 ``[H, W, 3]`` frames as a looping GIF at ``fps`` frames per second.

    Like every GIF encoder, Pillow stores a run of identical frames once with their summed
    duration, so the file's total duration, not its frame count, is ``len(frames) / fps``.

    Raises:
        ValueError: no frames, or a path that does not end in ``.gif``.
    """
    from PIL import Image

    path = Path(path)
    if path.suffix.lower() != ".gif":
        raise ValueError(f"videos are written as GIF; give a path ending in .gif, not {path.name}")
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
