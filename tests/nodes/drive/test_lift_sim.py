"""lift node (sim variant): homing, velocity commands, guards, watchdog."""


import pyarrow as pa
import pytest

from teledora.nodes.drive import lift_sim
from teledora.operators.contract.messages import encode
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402

TICK = pa.array([0], type=pa.uint64())


def cmd(v):
    return encode("LiftCommand", {"stamp_ns": 0, "velocity_m_s": v})


def ticks(seconds, dt=0.01):
    return [("tick", TICK, dt) for _ in range(int(round(seconds / dt)))]


def commanded(v, seconds, dt=0.01):
    out = []
    for k in range(int(round(seconds / dt))):
        if k % 10 == 0:
            out.append(("lift_cmd", cmd(v), 0.0))
        out.append(("tick", TICK, dt))
    return out


def run(script, start_mm=20.0):
    clock = FakeClock()
    node = SteppedNode(script, clock)
    lift_sim.main(["--start-height-mm", str(start_mm)], node=node, clock=clock)
    return node, node.outputs_decoded("state", "LiftState")


def test_homes_then_follows_velocity_commands_and_watchdog():
    script = ticks(2.0) + commanded(0.02, 1.0) + ticks(1.5)
    node, states = run(script)
    homed_at = next(i for i, s in enumerate(states) if s["homed"])
    # homing: ~20 mm at 1300 ticks/s (~0.5 s) + stall polls + 1 s settle
    assert 130 <= homed_at <= 200
    assert all(s["height_m"] == 0.0 for s in states[:homed_at])
    assert abs(states[homed_at]["height_m"]) < 1e-3
    after_cmd = states[200 + 100]
    assert after_cmd["height_m"] == pytest.approx(0.02, abs=0.003)
    assert after_cmd["velocity_m_s"] == pytest.approx(0.02, abs=0.002)
    # watchdog: 1 s after the last command the lift is stopped and stays put
    assert states[-1]["velocity_m_s"] == 0.0
    assert states[-1]["height_m"] == pytest.approx(states[-20]["height_m"], abs=1e-6)


def test_commands_ignored_while_homing_and_floor_guard():
    script = commanded(0.05, 0.3) + ticks(1.8) + commanded(-0.02, 0.5)
    node, states = run(script, start_mm=5.0)
    assert states[-1]["homed"]
    assert states[-1]["height_m"] == pytest.approx(0.0, abs=2e-4)  # refuses to descend at the floor
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert '"ignored_while_homing": 3' in diag["details_json"]


def test_speed_is_clamped_to_1300_ticks_per_s():
    script = ticks(1.8) + commanded(0.5, 1.0)
    _, states = run(script, start_mm=2.0)
    assert states[-1]["velocity_m_s"] == pytest.approx(1300 / 4096 * 0.131, rel=0.01)
