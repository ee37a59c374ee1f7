"""lift node (Feetech variant) through the pty emulator: homing finds the floor."""

import json

import pyarrow as pa
import pytest

from teledora.nodes.drive import lift_feetech
from teledora.operators.contract.messages import encode
from teledora.operators.drive.sts_servo_model import SimulatedServo
from teledora.fakes.feetech_bus import FakeFeetechBus, FakeServo  # noqa: E402
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402

TICK = pa.array([0], type=pa.uint64())
TICKS_PER_MM = 4096 / 131.0
FLOOR = 50_000.0


def lift_servo(start_mm):
    # dir_sign -1: the floor is the high end of the shaft travel
    model = SimulatedServo(position_ticks=FLOOR - start_mm * TICKS_PER_MM, max_stop_ticks=FLOOR,
                           min_stop_ticks=FLOOR - 610 * TICKS_PER_MM)
    return FakeServo(11, 2569, model)


def test_homing_finds_the_floor_then_lifts_and_stops():
    clock = FakeClock()
    servo = lift_servo(30.0)
    up = encode("LiftCommand", {"stamp_ns": 0, "velocity_m_s": 0.03})
    script = [("tick", TICK, 0.01) for _ in range(220)]
    for k in range(100):
        if k % 20 == 0:
            script.append(("lift_cmd", up, 0.0))
        script.append(("tick", TICK, 0.01))
    script += [("tick", TICK, 0.05) for _ in range(30)]
    with FakeFeetechBus([servo], clock=clock) as fake:
        node = SteppedNode(script, clock)
        lift_feetech.main(["--port", fake.port, "--timeout-s", "0.2"], node=node, clock=clock)
        assert fake.wait_for(lambda: servo.model.goal_velocity == 0)
        torque = [d[0] for d in fake.writes_to(11, 40)]
        assert servo.registers[33] == 1  # velocity mode
    assert torque[:4] == [0, 1, 0, 1]  # configure, homing drive, release at the floor, re-enable after zero
    states = node.outputs_decoded("state", "LiftState")
    homed_at = next(i for i, s in enumerate(states) if s["homed"])
    assert 100 < homed_at < 220  # ~0.74 s descent + 1 s settle
    assert abs(states[homed_at]["height_m"]) < 0.5e-3
    peak = max(s["height_m"] for s in states)
    assert peak == pytest.approx(0.054, abs=0.004)  # 0.8 s of commands + 1 s until the watchdog, at 30 mm/s
    assert states[-1]["velocity_m_s"] == 0.0  # watchdog stopped it
    details = json.loads(node.outputs_decoded("diagnostics", "Diagnostics")[-1]["details_json"])
    assert "height_mm" in details
    assert details["bus"]["transactions"] > 10 and details["bus"]["timeouts"] == 0


def _goal(data: bytes) -> int:
    raw = int.from_bytes(data, "little")
    return -(raw & 0x7FFF) if raw & 0x8000 else raw


def test_absurd_commands_write_nothing_and_over_cap_ones_write_the_servo_clamp():
    clock = FakeClock()
    servo = lift_servo(30.0)
    marks = []
    script = [("tick", TICK, 0.01) for _ in range(220)]  # homed by then
    script.append(("lift_cmd", encode("LiftCommand", {"stamp_ns": 0, "velocity_m_s": -1e300}), 0.0,
                   lambda: marks.append(len(fake.writes_to(11, 46)))))
    script += [("tick", TICK, 0.01) for _ in range(20)]
    script.append(("lift_cmd", encode("LiftCommand", {"stamp_ns": 0, "velocity_m_s": 0.3}), 0.0,
                   lambda: marks.append(len(fake.writes_to(11, 46)))))
    script += [("tick", TICK, 0.01) for _ in range(20)]
    with FakeFeetechBus([servo], clock=clock) as fake:
        node = SteppedNode(script, clock)
        lift_feetech.main(["--port", fake.port, "--timeout-s", "0.2"], node=node, clock=clock)
        assert fake.wait_for(lambda: servo.model.goal_velocity == 0)
        goals = [_goal(d) for d in fake.writes_to(11, 46)]
    assert node.outputs_decoded("state", "LiftState")[219]["homed"]
    # the absurd command wrote no motion: no goal at all after it, the lift holding still
    assert goals[marks[0]:marks[1]] == []
    states = node.outputs_decoded("state", "LiftState")
    assert all(s["velocity_m_s"] == 0.0 for s in states[221:240])
    # 0.3 m/s: clamped to 0.08 m/s, then to the servo's 1300 ticks/s; up is negative (dir_sign -1)
    assert goals[marks[1]:] == [-1300, 0]  # one goal while it moves, the hold at the end
    assert max(abs(g) for g in goals) == 1300
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (1, 1, "warn")
    assert "LiftCommand.velocity_m_s: -1e+300 is beyond the plausible" in diag["last_error"]
