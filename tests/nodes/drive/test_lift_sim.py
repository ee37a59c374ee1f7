"""lift node (sim variant): homing, velocity commands, guards, watchdog."""

import json

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


def test_absurd_commands_are_rejected_and_over_cap_ones_clamped():
    script = ticks(1.8) + [("lift_cmd", cmd(1e300), 0.0)] + ticks(0.3) + commanded(0.5, 1.0)
    script += [("lift_cmd", cmd(-0.5), 0.0), ("tick", TICK, 0.01)]  # the last report's period clamps too
    node, states = run(script, start_mm=2.0)
    homed_at = next(i for i, s in enumerate(states) if s["homed"])
    assert homed_at < 180
    after_absurd = states[180:210]
    assert all(s["velocity_m_s"] == 0.0 for s in after_absurd)  # rejected: the lift did not move
    # 0.5 m/s is clamped to the profile's 0.08 m/s, then the servo clamp (1300 ticks/s) applies
    assert states[-2]["velocity_m_s"] == pytest.approx(1300 / 4096 * 0.131, rel=0.01)
    diags = node.outputs_decoded("diagnostics", "Diagnostics")
    assert any(d["level"] == "warn" and "1 input(s) rejected" in d["message"] for d in diags)
    diag = diags[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (1, 11, "warn")
    assert "velocity_m_s -0.5 m/s clamped to -0.08 m/s" in diag["message"]
    assert json.loads(diag["details_json"])["limits"] == {"rejected": 0, "clamped": 11, "clamped_by": {"velocity_m_s": 11}}


def test_commands_during_homing_are_bounded_too():
    script = [("lift_cmd", cmd(-1e9), 0.0)] + ticks(0.1) + [("lift_cmd", cmd(0.1), 0.0)] + ticks(0.1)
    node, _ = run(script)
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (1, 1, "warn")


@pytest.mark.parametrize("queued_s, moves", [(0.2, True), (1.5, False)])
def test_a_command_that_waited_past_the_watchdog_timeout_never_moves_the_lift(queued_s, moves):
    """The watchdog counts from the command's stamp, not from when it came out of a queue."""
    clock = FakeClock()
    homing = ticks(2.0)  # homed after about 1.5 s, as above
    sent_ns = clock.now_ns + int(2.0 * 1e9) - int(queued_s * 1e9)
    script = homing + [("lift_cmd", encode("LiftCommand", {"stamp_ns": sent_ns, "velocity_m_s": 0.02}), 0.0)] + ticks(0.3)
    node = SteppedNode(script, clock)
    lift_sim.main(["--start-height-mm", "20.0"], node=node, clock=clock)
    states = node.outputs_decoded("state", "LiftState")
    assert states[199]["homed"]
    rose = states[-1]["height_m"] - states[199]["height_m"]
    assert (rose > 0.003) == moves, rose


def _homing(argv):
    clock = FakeClock()
    node = SteppedNode(ticks(6.0), clock)
    lift_sim.main(argv, node=node, clock=clock)
    return [(s["homed"], round(s["height_m"], 6)) for s in node.outputs_decoded("state", "LiftState")]


def test_the_start_height_comes_from_drive_yaml_and_the_flag_overrides_it(tmp_path):
    import yaml

    from teledora import models

    data = models.load_yaml("alohamini2/drive.yaml")
    data["lift_sim"]["start_height_mm"] = 200.0
    cfg = tmp_path / "drive.yaml"
    cfg.write_text(yaml.safe_dump(data))
    from_yaml = _homing(["--config", str(cfg)])
    assert from_yaml == _homing(["--start-height-mm", "200"])
    assert from_yaml != _homing([])  # the shipped start height is another
    assert _homing([]) == _homing(["--start-height-mm", str(models.load_yaml("alohamini2/drive.yaml")["lift_sim"]["start_height_mm"])])


def test_a_start_height_above_the_lifts_range_is_refused(tmp_path):
    import yaml

    from teledora import models

    data = models.load_yaml("alohamini2/drive.yaml")
    data["lift_sim"]["start_height_mm"] = data["lift"]["soft_max_mm"] + 1.0
    cfg = tmp_path / "drive.yaml"
    cfg.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match="lift_sim.start_height_mm"):
        lift_sim.main(["--config", str(cfg)], node=SteppedNode([], FakeClock()), clock=FakeClock())
