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


def quantize_rad_within(q: npt.ArrayLike, lower: npt.ArrayLike, upper: npt.ArrayLike,
                        ticks_per_rev: int = TICKS_PER_REV) -> np.ndarray:
    """Rounds angles (rad) to the nearest encoder tick that lies within ``[lower, upper]``.

    An angle on or near a bound rounds to the tick just inside it, as a servo
    limited to that range would hold it. Every range must span at least one tick.
    """
    step = 2.0 * np.pi / ticks_per_rev
    ticks = np.round(np.asarray(q, dtype=float) / step)
    lo_tick = np.ceil(np.asarray(lower, dtype=float) / step)
    hi_tick = np.floor(np.asarray(upper, dtype=float) / step)
    if np.any(lo_tick > hi_tick):
        raise ValueError("every range must contain at least one encoder tick")
    return np.clip(ticks, lo_tick, hi_tick) * step
