"""The policy node and the real teleop node under `dora run`, with the policy's
inference worker and a small random-weight checkpoint: robot states in, the
policy's commands through teleop's selector, joint commands out of teleop's
IK. A scripted operator hands back with the X+A hold, takes over with a grip,
and latches the e-stop; the test checks who drove each step, that the commands
stay within the caps, and measures the takeover latency (the grip report's
send to the first joint command computed from the operator's target). Nothing
is asserted about what the policy does with the robot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.nodes.policy.test_policy_node import MAKE_CHECKPOINT, PYTHON, needs_lerobot

pytestmark = [pytest.mark.dataflow, needs_lerobot]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

ROBOT = """
import time
from dora import Node
from teledora import models
from teledora.operators.contract.messages import encode
profile = models.load_profile()
names = list(profile.arm_joint_names)
home = profile.home_q()
q = [home[n] for n in names]
node = Node()
for event in node:  # start once the policy is up (its first diagnostics)
    if event["type"] == "INPUT":
        break
end = time.time() + 9.0
while time.time() < end:
    now = time.time_ns()
    node.send_output("joint_states", encode("JointState", dict(stamp_ns=now, names=names, position=q, velocity=[], effort=[])))
    node.send_output("odom", encode("Odometry", dict(stamp_ns=now, frame_id="odom", child_frame_id="base_link", x=0.0,
                                                     y=0.0, yaw=0.0, vx=0.0, vy=0.0, wz=0.0)))
    node.send_output("lift_state", encode("LiftState", dict(stamp_ns=now, height_m=0.2, velocity_m_s=0.0, homed=True)))
    time.sleep(0.02)
"""

OPERATOR = """
import json, time
from dora import Node
from teledora.operators.contract.messages import encode
def hand(t, **kw):
    h = dict(connected=True, epoch=1, pose_valid=True, position=[0.3, 0.2, 1.0], orientation=[0.0, 0.0, 0.0, 1.0],
             trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False, menu=False,
             pose_stamp_ns=t, input_stamp_ns=t)
    h.update(kw)
    return h
def phase(el):
    # (name, left, right, e-stop) over the seconds since the policy's first command
    if el < 0.4: return "up", {}, {}, False
    if el < 1.7: return "gesture", {"primary": True}, {"primary": True}, False
    if el < 3.0: return "policy", {}, {}, False
    if el < 3.4: return "grip", {}, {"squeeze": 1.0}, False
    if el < 3.8: return "after", {}, {}, False
    if el < 4.3: return "estop", {}, {}, True
    return None, None, None, None
node = Node()
for event in node:  # start once the policy sends commands
    if event["type"] == "INPUT":
        break
t0, seq, phases = time.time_ns(), 0, []
while True:
    now = time.time_ns()
    name, left, right, estop = phase((now - t0) / 1e9)
    if name is None:
        break
    msg = dict(stamp_ns=now, frame_id="operator", seq=seq, source="test", focused=True, ui_estop=estop,
               ui_release_stop=False, ui_pause=False, ui_episode_start=False, ui_episode_keep=False,
               ui_episode_discard=False, left=hand(now, **left), right=hand(now, **right))
    node.send_output("controllers", encode("XrControllers", msg), {"seq": seq})
    phases.append([seq, name, now])
    seq += 1
    time.sleep(0.011)
print("OPERATOR " + json.dumps(phases), flush=True)
"""

SINK = """
import json, math, time
from dora import Node
from teledora import models
from teledora.operators.contract.messages import decode
profile = models.load_profile()
node = Node()
states, commands, worst, diag = [], [], {"linear": 0.0, "yaw": 0.0, "lift": 0.0}, None
for event in node:
    if event["type"] != "INPUT":
        continue
    now = time.time_ns()
    meta = event["metadata"] or {}
    eid = event["id"]
    if eid == "diagnostics":
        diag = decode("Diagnostics", event["value"])
    elif eid == "state":
        s = decode("TeleopState", event["value"])
        states.append([meta.get("xr_seq"), s["driver"], s["events"]])
    elif eid == "joint_commands":
        commands.append([meta.get("xr_seq"), now, decode("JointCommands", event["value"])["status"]])
    elif eid == "base_cmd":
        b = decode("BaseCommand", event["value"])
        worst["linear"] = max(worst["linear"], math.hypot(b["forward_m_s"], b["left_m_s"]))
        worst["yaw"] = max(worst["yaw"], abs(b["yaw_rad_s"]))
    elif eid == "lift_cmd":
        worst["lift"] = max(worst["lift"], abs(decode("LiftCommand", event["value"])["velocity_m_s"]))
print("SINK " + json.dumps({"states": states, "commands": commands, "worst": worst, "caps": [profile.base.max_linear_m_s,
      profile.base.max_yaw_rad_s, profile.lift.max_speed_m_s], "details": json.loads(diag["details_json"]) if diag else None}),
      flush=True)
"""


def run_flow(tmp_path):
    ck = tmp_path / "ck"
    subprocess.run([str(PYTHON), str(MAKE_CHECKPOINT), str(ck)], check=True, timeout=600)
    for name, text in (("robot.py", ROBOT), ("operator.py", OPERATOR), ("sink.py", SINK)):
        (tmp_path / name).write_text(text)
    teleop_out = ["arm_targets", "base_cmd", "lift_cmd", "state", "joint_commands", "journal", "diagnostics"]
    flow = {"nodes": [
        {"id": "robot", "path": "robot.py", "inputs": {"policy_up": "policy/diagnostics"},
         "outputs": ["joint_states", "odom", "lift_state"]},
        {"id": "operator", "path": "operator.py", "inputs": {"policy_up": "policy/arm_targets"}, "outputs": ["controllers"]},
        {"id": "policy", "path": str(REPO / "nodes" / "policy" / "policy.py"),
         "args": f"--checkpoint {ck} --python {PYTHON} --device cpu --max-state-age-s 0.5",
         "inputs": {"joint_states": "robot/joint_states", "odom": "robot/odom", "lift_state": "robot/lift_state"},
         "outputs": ["arm_targets", "base_cmd", "lift_cmd", "diagnostics"]},
        {"id": "teleop", "path": str(REPO / "nodes" / "teleop" / "teleop.py"), "env": {"TELEDORA_ENDS_WITH": "controllers"},
         "inputs": {"controllers": {"source": "operator/controllers", "queue_policy": "backpressure", "queue_size": 100000},
                    "joint_states": "robot/joint_states", "lift": "robot/lift_state", "tick": "dora/timer/millis/10",
                    "policy_arm_targets": {"source": "policy/arm_targets", "queue_size": 1},
                    "policy_base_cmd": {"source": "policy/base_cmd", "queue_size": 1},
                    "policy_lift_cmd": {"source": "policy/lift_cmd", "queue_size": 1}},
         "outputs": teleop_out},
        {"id": "sink", "path": "sink.py",
         "inputs": {k: {"source": f"teleop/{k}", "queue_policy": "backpressure", "queue_size": 100000}
                    for k in ("state", "joint_commands", "base_cmd", "lift_cmd", "diagnostics")}},
    ]}
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", TELEDORA_RECORDER_GUARD="off")
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=400)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    lines = {key: next((s for s in text.splitlines() if f"{key} " in s), None) for key in ("OPERATOR", "SINK")}
    assert all(lines.values()), text[-3000:]
    return json.loads(lines["OPERATOR"].split("OPERATOR ", 1)[1]), json.loads(lines["SINK"].split("SINK ", 1)[1])


def test_the_policy_drives_through_teleops_selector(tmp_path):
    phases, got = run_flow(tmp_path)
    phase_of = {seq: name for seq, name, _ in phases}
    sent_ns = {seq: t for seq, _, t in phases}
    states, commands, worst, caps = got["states"], got["commands"], got["worst"], got["caps"]
    # bounded: nothing past the caps, whatever the random network asked for
    assert worst["linear"] <= caps[0] * (1 + 1e-9) and worst["yaw"] <= caps[1] * (1 + 1e-9)
    assert worst["lift"] <= caps[2] * (1 + 1e-9)
    by_phase: dict[str, list[str]] = {}
    for seq, driver, _ in states:
        if seq in phase_of:
            by_phase.setdefault(phase_of[seq], []).append(driver)
    events = [e for _, _, ev in states for e in ev]
    assert set(by_phase["up"]) == {"operator"}
    assert events.count("handback") == 1, states
    assert "policy" in by_phase["policy"]
    assert "takeover" in events and set(by_phase["grip"]) == {"operator"}
    assert set(by_phase["after"]) == {"operator"}  # authority stays with the operator
    assert set(by_phase["estop"]) == {"stopped"}
    assert got["details"]["authority"]["takeovers"] == 1 and got["details"]["authority"]["handbacks"] == 1
    # takeover latency: the grip report's send -> the first joint command computed from the operator's target
    grip_seq = min(seq for seq, name in phase_of.items() if name == "grip")
    first = min((t for seq, t, _ in commands if seq is not None and seq >= grip_seq), default=None)
    assert first is not None
    latency_ms = (first - sent_ns[grip_seq]) / 1e6
    per_phase = {name: sum(1 for seq, _, _ in commands if phase_of.get(seq) == name) for name in by_phase}
    print(f"takeover latency {latency_ms:.1f} ms; {len(states)} states; joint commands per phase {per_phase}; "
          f"worst |linear| {worst['linear']:.3f}, |yaw| {worst['yaw']:.3f}, |lift| {worst['lift']:.3f}")
    assert latency_ms > 0
