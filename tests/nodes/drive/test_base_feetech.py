"""base node (Feetech variant) end to end through the pty servo emulator."""

import json

import pyarrow as pa
import pytest

from teledora.nodes.drive import base_feetech
from teledora.devices.drive.feetech_bus import ServoTimeoutError
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.omni_drive import OmniDrive
from teledora.operators.contract.messages import encode
from teledora.operators.drive.sts_servo_model import SimulatedServo
from teledora.fakes.feetech_bus import FakeFeetechBus, FakeServo  # noqa: E402
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402

DRIVE = OmniDrive(load_drive_config().base.geometry)

TICK = pa.array([0], type=pa.uint64())


def cmd(f, l, w):
    return encode("BaseCommand", {"stamp_ns": 0, "forward_m_s": f, "left_m_s": l, "yaw_rad_s": w})


def wheels():
    return [FakeServo(i, 777, SimulatedServo(position_ticks=1000.0 * i)) for i in (8, 9, 10)]


def run(script, clock, fake):
    node = SteppedNode(script, clock)
    base_feetech.main(["--port", fake.port, "--timeout-s", "0.2"], node=node, clock=clock)
    return node


def _goal(data: bytes) -> int:
    raw = int.from_bytes(data, "little")
    return -(raw & 0x7FFF) if raw & 0x8000 else raw


def test_configures_velocity_mode_writes_goals_and_reads_back():
    clock = FakeClock()
    with FakeFeetechBus(wheels(), clock=clock) as fake:
        script = [("base_cmd", cmd(0.15, 0.0, 0.2), 0.0)] + [("tick", TICK, 0.01) for _ in range(50)]
        node = run(script, clock, fake)
        assert fake.wait_for(lambda: len(fake.writes_to(10, 46)) == 52)  # connect + 50 ticks + final stop
        expected = DRIVE.body_to_wheel_raw(0.15, 0.0, 0.2)
        for sid, goal in zip((8, 9, 10), expected):
            s = fake.servos[sid]
            assert s.registers[33] == 1  # velocity mode
            assert _goal(fake.writes_to(sid, 46)[-2]) == goal  # the last tick's goal
            assert _goal(fake.writes_to(sid, 46)[-1]) == 0  # stopped at end of stream
    odom = node.outputs_decoded("odom", "Odometry")
    # measured (not commanded) velocities drive the odometry: after 0.5 s the wheels are at speed
    assert odom[0]["vx"] == pytest.approx(0.0, abs=0.02)
    assert odom[-1]["vx"] == pytest.approx(0.15, rel=0.02)
    assert odom[-1]["x"] > 0.05


def test_watchdog_stops_the_wheels():
    clock = FakeClock()
    with FakeFeetechBus(wheels(), clock=clock) as fake:
        script = [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0)] + [("tick", TICK, 0.1) for _ in range(14)]
        node = run(script, clock, fake)
        assert fake.wait_for(lambda: len(fake.writes_to(8, 46)) == 16)
        goals = [_goal(d) for d in fake.writes_to(8, 46)]
    moving = DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)[0]
    # connect writes 0; then 10 ticks within 1 s moving, then 4 stopped, then the final stop
    assert goals == [0] + [moving] * 10 + [0] * 4 + [0]
    assert node.outputs_decoded("odom", "Odometry")[-1]["vx"] == pytest.approx(0.0, abs=1e-3)


def test_silent_servo_stops_the_base_with_a_clear_error():
    clock = FakeClock()
    with FakeFeetechBus(wheels(), clock=clock) as fake:
        script = [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0)] + [("tick", TICK, 0.01) for _ in range(5)]
        script.append(("tick", TICK, 0.01, lambda: fake.mute(9)))
        script += [("tick", TICK, 0.01) for _ in range(5)]
        node = SteppedNode(script, clock)
        with pytest.raises(ServoTimeoutError, match="servo id 9"):
            base_feetech.main(["--port", fake.port, "--timeout-s", "0.1"], node=node, clock=clock)
        assert fake.wait_for(lambda: fake.servos[8].model.goal_velocity == 0 and fake.servos[10].model.goal_velocity == 0)
        assert _goal(fake.writes_to(8, 46)[-1]) == 0 and _goal(fake.writes_to(10, 46)[-1]) == 0
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert diag["level"] == "error" and "servo id 9" in diag["message"]


def test_missing_wheel_at_start_is_reported():
    clock = FakeClock()
    with FakeFeetechBus([FakeServo(8), FakeServo(10)], clock=clock) as fake:
        node = SteppedNode([("tick", TICK, 0.01)], clock)
        with pytest.raises(Exception, match="wheel servo 9 not found"):
            base_feetech.main(["--port", fake.port, "--timeout-s", "0.1"], node=node, clock=clock)


def test_bus_counters_reach_the_diagnostics():
    clock = FakeClock()
    with FakeFeetechBus(wheels(), clock=clock) as fake:
        script = [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0)] + [("tick", TICK, 0.01) for _ in range(3)]
        script.append(("tick", TICK, 0.01, lambda: setattr(fake, "wrong_length_replies", 1)))
        script += [("tick", TICK, 0.01) for _ in range(3)]
        node = run(script, clock, fake)
    bus = json.loads(node.outputs_decoded("diagnostics", "Diagnostics")[-1]["details_json"])["bus"]
    assert bus["length_errors"] == 1 and bus["retries"] == 1 and bus["timeouts"] == 0


def test_absurd_commands_write_no_motion_and_over_cap_ones_write_the_capped_goals():
    clock = FakeClock()
    with FakeFeetechBus(wheels(), clock=clock) as fake:
        script = [("base_cmd", cmd(1e300, 0.0, 0.0), 0.0)] + [("tick", TICK, 0.01) for _ in range(3)]
        script += [("base_cmd", cmd(-1.5, 0.0, 4.0), 0.0)] + [("tick", TICK, 0.01) for _ in range(3)]
        script += [("base_cmd", cmd(0.0, 0.0, -1e300), 0.0)] + [("tick", TICK, 0.01) for _ in range(3)]
        node = run(script, clock, fake)
        assert fake.wait_for(lambda: len(fake.writes_to(8, 46)) == 11)  # connect + 9 ticks + final stop
        written = {sid: [_goal(d) for d in fake.writes_to(sid, 46)] for sid in (8, 9, 10)}
    capped = DRIVE.body_to_wheel_raw(-0.25, 0.0, 0.65)  # 1.5 m/s back and 4 rad/s yaw, each cut to its cap
    for k, sid in enumerate((8, 9, 10)):
        # connect; 3 ticks with no valid command yet (zero); 3 + 3 ticks of the capped command; stop
        assert written[sid] == [0] + [0] * 3 + [capped[k]] * 6 + [0], sid
    assert capped != DRIVE.body_to_wheel_raw(-1.5, 0.0, 4.0)  # what the wheels would have been told unbounded
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (2, 1, "warn")
    assert "1 input(s) clamped (last: base_cmd: linear speed 1.5 m/s clamped to 0.25 m/s; yaw_rad_s 4 rad/s clamped to 0.65" in diag["message"]
    assert "1 input(s) rejected" in diag["message"] and "BaseCommand.yaw_rad_s: -1e+300 is beyond the plausible" in diag["last_error"]
