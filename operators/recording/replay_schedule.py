"""Replay timing: when a replayed message goes out, and what its stamps say.

Recorded send times are mapped onto replay wall time (:class:`ReplaySchedule`).
Live nodes judge freshness by comparing ``stamp_ns`` with their clock, so a
replay can also move every stamp by one constant offset (:func:`shift_stamps`)
to make recorded data look as fresh as it was when it was recorded.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from teledora.operators.errors import ConfigError


class ReplaySpeedError(ConfigError):
    """A replay speed that is not a number >= 0."""


class ReplaySchedule:
    """Maps recorded send times onto replay wall time.

    Args:
        run_t0_ns: Recorded time that maps to ``start_ns`` (the run's first message).
        start_ns: Replay wall time of ``run_t0_ns``.
        speed: 1.0 = original timing, 2.0 = twice as fast, 0 = no waiting.
    """

    def __init__(self, run_t0_ns: int, start_ns: int, speed: float) -> None:
        if speed < 0:
            raise ReplaySpeedError(f"speed must be >= 0, got {speed}")
        self.run_t0_ns = int(run_t0_ns)
        self.start_ns = int(start_ns)
        self.speed = float(speed)

    def due_ns(self, recorded_ns: int) -> int:
        """Wall time at which a message recorded at ``recorded_ns`` is sent."""
        if self.speed == 0:
            return self.start_ns
        return self.start_ns + int((recorded_ns - self.run_t0_ns) / self.speed)

    def shifted(self, by_ns: int) -> "ReplaySchedule":
        """The same schedule, ``by_ns`` of replay wall time later (next loop)."""
        return ReplaySchedule(self.run_t0_ns, self.start_ns + by_ns, self.speed)


def _is_stamp_field(field: pa.Field) -> bool:
    return pa.types.is_int64(field.type) and (field.name == "stamp_ns" or field.name.endswith("_stamp_ns"))


def shift_stamps(value: pa.Array, offset_ns: int) -> pa.Array:
    """A copy of ``value`` whose ``stamp_ns`` / ``*_stamp_ns`` int64 struct fields
    (nested structs included) are moved by ``offset_ns``; zero or negative
    stamps (meaning "never") stay as they are. Non-struct values come back unchanged."""
    if not pa.types.is_struct(value.type):
        return value
    return _shift_struct(value, int(offset_ns))


def _shift_struct(value: pa.StructArray, offset_ns: int) -> pa.StructArray:
    children = []
    fields = []
    for i in range(value.type.num_fields):
        field = value.type.field(i)
        child = value.field(i)
        if _is_stamp_field(field):
            child = pc.if_else(pc.greater(child, 0), pc.add(child, pa.scalar(offset_ns, pa.int64())), child)
        elif pa.types.is_struct(field.type):
            child = _shift_struct(child, offset_ns)
        children.append(child)
        fields.append(field)
    mask = value.is_null() if value.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
