"""The robot's two sides. An arm, its gripper and the operator's hand that
drives it share the side's name."""

from __future__ import annotations

from typing import Literal

Side = Literal["left", "right"]

#: Both sides, left first (the order of every per-side listing: joints, targets, hands).
SIDES: tuple[Side, Side] = ("left", "right")
