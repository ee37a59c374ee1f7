"""How well a recorded camera fills a dataset's frame clock.

A dataset frame holds the camera's latest image at or before its time
(:mod:`teledora.operators.datasets.frame_clock`). A camera that is slower than
the dataset's fps, or that stalls, makes frames repeat an image; one that
delivers two images within a frame period has one of them never shown. Both
are facts a dataset's user should know, so the export counts them per episode
and camera.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrameReuse:
    """Counts for one camera over one episode's frames.

    Attributes:
        frames: Frames of the episode that hold an image of the camera.
        repeated: Of those, frames that show the same recorded image as the
            frame before (no new image arrived within the frame period).
        missing: Frames of the episode's clock before the camera's first image
            (no image to show: the episode starts later for them).
        unused: Recorded images between the first and last shown that no frame shows.
    """

    frames: int
    repeated: int
    missing: int
    unused: int


def frame_reuse(rows: np.ndarray, first: int = 0) -> FrameReuse:
    """Counts from the image row each frame of an episode's clock shows (-1:
    none yet), rows being non-decreasing; the episode keeps the frames from
    ``first`` on (where every stream it needs has begun)."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size > 1 and np.any(np.diff(rows) < 0):
        raise ValueError("image rows must not go back in time")
    missing = int(np.count_nonzero(rows < 0))
    shown = rows[first:]
    shown = shown[shown >= 0]
    if shown.size == 0:
        return FrameReuse(0, 0, missing, 0)
    repeated = int(np.count_nonzero(shown[1:] == shown[:-1]))
    distinct = int(shown.size - repeated)
    unused = int(shown[-1] - shown[0] + 1 - distinct)
    return FrameReuse(int(shown.size), repeated, missing, unused)
