"""Replay timing: recorded send times onto wall time, stamps moved to replay time."""

from __future__ import annotations

import pyarrow as pa
import pytest

from teledora.operators.contract.messages import encode
from teledora.operators.recording.replay_schedule import ReplaySchedule, ReplaySpeedError, shift_stamps


def test_original_timing_and_speed_scaling():
    s = ReplaySchedule(run_t0_ns=1_000, start_ns=50_000, speed=1.0)
    assert s.due_ns(1_000) == 50_000 and s.due_ns(3_000) == 52_000
    fast = ReplaySchedule(run_t0_ns=1_000, start_ns=50_000, speed=4.0)
    assert fast.due_ns(5_000) == 51_000


def test_speed_zero_never_waits():
    s = ReplaySchedule(run_t0_ns=0, start_ns=7, speed=0.0)
    assert s.due_ns(10**12) == 7


def test_shift_moves_the_next_loop():
    s = ReplaySchedule(0, 100, 1.0).shifted(1_000)
    assert s.due_ns(10) == 1_110


def test_negative_speed_is_refused():
    with pytest.raises(ReplaySpeedError):
        ReplaySchedule(0, 0, -0.5)


def nested() -> pa.StructArray:
    hand = pa.struct([("pose_stamp_ns", pa.int64()), ("input_stamp_ns", pa.int64()), ("x", pa.float64())])
    t = pa.struct([("stamp_ns", pa.int64()), ("seq", pa.int64()), ("left", hand)])
    rows = [
        {"stamp_ns": 100, "seq": 7, "left": {"pose_stamp_ns": 90, "input_stamp_ns": 0, "x": 1.5}},
        {"stamp_ns": 200, "seq": 8, "left": {"pose_stamp_ns": 190, "input_stamp_ns": 195, "x": 2.5}},
    ]
    return pa.array(rows, type=t)


def test_shift_stamps_moves_every_stamp_field_but_nothing_else():
    out = shift_stamps(nested(), 1_000)
    assert out.to_pylist() == [
        {"stamp_ns": 1100, "seq": 7, "left": {"pose_stamp_ns": 1090, "input_stamp_ns": 0, "x": 1.5}},
        {"stamp_ns": 1200, "seq": 8, "left": {"pose_stamp_ns": 1190, "input_stamp_ns": 1195, "x": 2.5}},
    ]
    assert out.type == nested().type


def test_shift_stamps_on_a_slice_and_on_contract_messages():
    assert shift_stamps(nested().slice(1, 1), 5).to_pylist()[0]["stamp_ns"] == 205
    lift = encode("LiftState", {"stamp_ns": 10, "height_m": 0.2, "velocity_m_s": 0.0, "homed": True})
    assert shift_stamps(lift, -3).to_pylist()[0] == {"stamp_ns": 7, "height_m": 0.2, "velocity_m_s": 0.0, "homed": True}


def test_non_struct_values_are_left_alone():
    img = pa.array([1, 2, 3], pa.uint8())
    assert shift_stamps(img, 10) is img
