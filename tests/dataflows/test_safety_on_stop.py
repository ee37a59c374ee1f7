"""Safety on start and stop, with the hardware drive nodes of hardware.yml on fake Feetech buses.

The `arms`, `base` and `lift` entries are taken from dataflows/hardware.yml
(same modules, env and timers), their ports pointed at two pty servo buses
emulated in this process (tests/fakes/feetech_bus.py: left bus = left arm 1-7,
wheels 8-10, lift 11; right bus = right arm 1-7), and their command inputs
fed by a stand-in for teleop/ik that keeps the robot moving. Once the wheels
turn and the lift rises, either the dataflow is stopped (Ctrl-C to ``dora
run``: every node gets STOP, as with ``dora stop``) or the stand-in crashes.
Either way:

* the wheels' last goal velocity is 0 and they stand still,
* the lift's last goal velocity is 0,
* the arms keep torque on and their last goal (they hold, they do not drop),
* and on connect the arms were only ever given their present position.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from teledora.operators.drive.sts_servo_model import SimulatedServo
from teledora.fakes.feetech_bus import FakeFeetechBus, FakeServo  # noqa: E402

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TICKS_PER_MM = 4096 / 131.0
LIFT_FLOOR_TICKS = 50_000.0
ARM_REST = {1: 1900.0, 2: 2300.0, 3: 2100.0, 4: 1800.0, 5: 2048.0, 6: 2200.0, 7: 2400.0}
ADDR_TORQUE, ADDR_GOAL_POSITION, ADDR_GOAL_VELOCITY = 40, 42, 46

COMMANDER = textwrap.dedent('''
    """Stand-in for teleop and ik: drive forward, lift up, move the left elbow;
    crash once the file CRASH_WHEN_EXISTS appears (the test makes it when the robot moves)."""
    import os, time
    from dora import Node
    from teledora.operators.contract.messages import encode

    node = Node()
    crash_when = os.environ.get("CRASH_WHEN_EXISTS", "")
    for event in node:
        if event["type"] != "INPUT":
            continue
        now = time.time_ns()
        if crash_when and os.path.exists(crash_when):
            raise RuntimeError("commander crashed on purpose")
        node.send_output("base_cmd", encode("BaseCommand", {"stamp_ns": now, "forward_m_s": 0.1, "left_m_s": 0.0, "yaw_rad_s": 0.2}))
        node.send_output("lift_cmd", encode("LiftCommand", {"stamp_ns": now, "velocity_m_s": 0.02}))
        node.send_output("joint_commands", encode("JointCommands", {
            "stamp_ns": now, "names": ["left_elbow_flex"], "q_ref": [0.3], "dq_ref": [0.0], "status": "ok"}))
''')


def _u16(data: bytes) -> int:
    return int.from_bytes(data, "little")


def _sm16(data: bytes) -> int:
    raw = _u16(data)
    return -(raw & 0x7FFF) if raw & 0x8000 else raw


def _left_bus_servos() -> list[FakeServo]:
    arm = [FakeServo(i, 777, SimulatedServo(position_ticks=ARM_REST[i])) for i in range(1, 8)]
    wheels = [FakeServo(i, 777, SimulatedServo(position_ticks=1000.0 * i)) for i in (8, 9, 10)]
    lift = FakeServo(11, 2569, SimulatedServo(position_ticks=LIFT_FLOOR_TICKS - 30 * TICKS_PER_MM,
                                              max_stop_ticks=LIFT_FLOOR_TICKS,
                                              min_stop_ticks=LIFT_FLOOR_TICKS - 610 * TICKS_PER_MM))
    return arm + wheels + [lift]


def _right_bus_servos() -> list[FakeServo]:
    return [FakeServo(i, 777, SimulatedServo(position_ticks=ARM_REST[i])) for i in range(1, 8)]


def _dataflow(tmp: Path, left_port: str, right_port: str, crash_when: str) -> Path:
    hardware = yaml.safe_load((REPO / "dataflows" / "hardware.yml").read_text())
    entries = {n["id"]: n for n in hardware["nodes"]}
    nodes = []
    for node_id in ("arms", "base", "lift"):
        entry = dict(entries[node_id])
        entry.pop("deploy")
        entry.pop("input_types", None)
        entry.pop("output_types", None)  # the type files sit beside hardware.yml, not here
        entry["args"] = (entry["args"].replace("/dev/am2_bus_left", left_port).replace("/dev/am2_bus_right", right_port)
                         + " --timeout-s 2.0")  # generous: the fake buses share the CPU with the nodes
        # no recorder here: the recorder guard's heartbeat input is left out (docs/recording.md)
        entry["inputs"] = {k: (f"commander/{k}" if not str(v).startswith("dora/") else v)
                           for k, v in entry["inputs"].items() if k != "recorder_status"}
        nodes.append(entry)
    (tmp / "commander.py").write_text(COMMANDER)
    nodes.append({"id": "commander", "path": "commander.py", "env": {"CRASH_WHEN_EXISTS": crash_when},
                  "inputs": {"tick": "dora/timer/millis/20"}, "outputs": ["base_cmd", "lift_cmd", "joint_commands"]})
    path = tmp / "safety.yml"
    path.write_text(yaml.safe_dump({"nodes": nodes}, sort_keys=False))
    return path


def _moving(bus: FakeFeetechBus) -> bool:
    """Wheels driven and the lift going up (homing done): the robot is in motion."""
    lift_up = any(_sm16(d) < 0 for d in bus.writes_to(11, ADDR_GOAL_VELOCITY))
    return lift_up and all(_sm16(bus.writes_to(sid, ADDR_GOAL_VELOCITY)[-1]) != 0 for sid in (8, 9, 10))


def _run(tmp: Path, crash: bool) -> dict:
    """Runs the drive nodes until the robot is moving, then either makes the
    stand-in crash (``crash``) or stops the dataflow as ``dora stop`` does
    (Ctrl-C to ``dora run`` sends every node STOP)."""
    crash_file = tmp / "crash-now"
    with FakeFeetechBus(_left_bus_servos()) as left, FakeFeetechBus(_right_bus_servos()) as right:
        flow = _dataflow(tmp, left.port, right.port, str(crash_file) if crash else "")
        env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", RUST_BACKTRACE="0")
        with open(tmp / "dora.log", "w+") as log:
            proc = subprocess.Popen([str(BIN / "dora"), "run", str(flow)], cwd=tmp, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, text=True)
            try:
                moving = left.wait_for(lambda: _moving(left), 45.0)
                if crash:
                    crash_file.touch()
                else:
                    proc.send_signal(signal.SIGINT)
                assert moving, "the robot never moved"
                proc.wait(timeout=45)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            log.seek(0)
            output = log.read()
        left.wait_for(lambda: False, 0.3)  # let the last unanswered SYNC_WRITEs land
        with left.lock, right.lock:
            return {
                "returncode": proc.returncode, "output": output,
                "left": {sid: s for sid, s in left.servos.items()},
                "right": {sid: s for sid, s in right.servos.items()},
                "left_bus": left, "right_bus": right,
            }


def _check_safe(result: dict) -> None:
    output = result["output"][-3000:]
    left_bus, right_bus = result["left_bus"], result["right_bus"]
    # wheels: they were driven, and the last goal each got is zero
    for sid in (8, 9, 10):
        goals = [_sm16(d) for d in left_bus.writes_to(sid, ADDR_GOAL_VELOCITY)]
        assert any(goals), (sid, output)
        assert goals[-1] == 0, (sid, goals[-5:], output)
        assert result["left"][sid].model.goal_velocity == 0
    # lift: it was commanded up (negative servo velocity: dir_sign -1), and its last goal is zero
    lift_goals = [_sm16(d) for d in left_bus.writes_to(11, ADDR_GOAL_VELOCITY)]
    assert any(g < 0 for g in lift_goals), (lift_goals[-10:], output)
    assert lift_goals[-1] == 0, (lift_goals[-5:], output)
    # arms: torque was never released after connect, and the last goal stands
    for bus, servos in ((left_bus, result["left"]), (right_bus, result["right"])):
        for sid in range(1, 8):
            torque = [d[0] for d in bus.writes_to(sid, ADDR_TORQUE)]
            assert torque[-1] == 1 and 0 not in torque[torque.index(1):], (sid, torque)
            assert servos[sid].model.torque_enabled, sid
    # the left elbow followed the command (0.3 rad = +68 ticks from the calibrated middle) and holds it
    elbow = [_u16(d) for d in left_bus.writes_to(3, ADDR_GOAL_POSITION)]
    assert elbow[-1] == round(0.3 * 4095 / (2 * 3.141592653589793) + 2047.5), elbow[-3:]


def _check_arms_did_not_move_on_connect(result: dict) -> None:
    for bus in (result["left_bus"], result["right_bus"]):
        for sid, rest in ARM_REST.items():
            first = _u16(bus.writes_to(sid, ADDR_GOAL_POSITION)[0])
            assert first == int(rest) % 4096, (sid, first, rest)  # the present position, nothing else
    right_goals = {sid: {_u16(d) for d in result["right_bus"].writes_to(sid, ADDR_GOAL_POSITION)} for sid in ARM_REST}
    # the right arm was never commanded: every goal it ever got is its own resting position
    assert all(goals == {int(ARM_REST[sid])} for sid, goals in right_goals.items()), right_goals


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> dict:
    return _run(tmp_path_factory.mktemp("stop"), crash=False)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory) -> dict:
    return _run(tmp_path_factory.mktemp("crash"), crash=True)


def test_dora_stop_stops_wheels_and_lift_and_arms_hold(stopped) -> None:
    assert stopped["returncode"] == 0, stopped["output"][-3000:]
    _check_safe(stopped)


def test_upstream_crash_stops_wheels_and_lift_and_arms_hold(crashed) -> None:
    assert crashed["returncode"] != 0  # dora reports the crashed node
    assert "commander crashed on purpose" in crashed["output"]
    _check_safe(crashed)


def test_arms_never_move_on_connect(stopped) -> None:
    _check_arms_did_not_move_on_connect(stopped)
