"""What a 12-bit Feetech position servo does to joint angles: positions are
written and read back in steps of one encoder tick (4096 per revolution)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

TICKS_PER_REV = 4096
RAD_PER_TICK = 2.0 * np.pi / TICKS_PER_REV


def quantize_rad(q: npt.ArrayLike, ticks_per_rev: int = TICKS_PER_REV) -> np.ndarray:
    """Rounds angles (rad) to the nearest encoder tick (half to even, as Python's round)."""
    step = 2.0 * np.pi / ticks_per_rev
    return np.round(np.asarray(q, dtype=float) / step) * step
