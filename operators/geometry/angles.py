"""Angle wrapping: the one place where an angle is brought back to [-pi, pi)."""

from __future__ import annotations

import math
from typing import overload

import numpy as np
import numpy.typing as npt

_TWO_PI = 2.0 * math.pi


@overload
def wrap_angle(angle_rad: float) -> float: ...


@overload
def wrap_angle(angle_rad: np.ndarray) -> np.ndarray: ...


def wrap_angle(angle_rad: float | npt.ArrayLike) -> float | np.ndarray:
    """Wraps an angle (rad) to [-pi, pi).

    A scalar gives a float, an array an array of the same shape (element-wise).
    """
    if np.ndim(angle_rad) == 0:
        return (float(angle_rad) + math.pi) % _TWO_PI - math.pi  # type: ignore[arg-type]
    return (np.asarray(angle_rad, dtype=float) + math.pi) % _TWO_PI - math.pi
