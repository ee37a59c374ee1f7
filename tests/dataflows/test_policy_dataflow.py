"""The policy node in a dataflow under `dora run`, with its inference worker and a
small random-weight checkpoint: robot states in, bounded commands out, and a
selector beside it (the authority rules the node that runs the IK applies)
honouring the hand-back gesture, a takeover and the e-stop on those commands.
Nothing is asserted about what the policy does with the robot."""

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
import math, time
from dora import Node
from teledora import models
from teledora.operators.contract.messages import encode
names = list(models.load_profile().arm_joint_names)
node = Node()
for event in node:  # start once the policy is up (its first diagnostics)
    if event["type"] == "INPUT":
        break
end = time.time() + 4.0
k = 0
while time.time() < end:
    now = time.time_ns()
    q = [abs(0.2 * math.sin(0.05 * k + i)) for i in range(len(names))]
    node.send_output("joint_states", encode("JointState", dict(stamp_ns=now, names=names, position=q, velocity=[], effort=[])))
    node.send_output("odom", encode("Odometry", dict(stamp_ns=now, frame_id="odom", child_frame_id="base_link", x=0.0,
                                                     y=0.0, yaw=0.0, vx=0.02, vy=0.0, wz=0.0)))
    node.send_output("lift_state", encode("LiftState", dict(stamp_ns=now, height_m=0.2, velocity_m_s=0.0, homed=True)))
    k += 1
    time.sleep(0.02)
"""

SELECTOR = """
import json, math, time
from dora import Node
from teledora import models
from teledora.operators.contract.messages import decode
from teledora.operators.policy.authority import Authority, AuthorityConfig
profile = models.load_profile()
UP = {"connected": True, "primary": False, "secondary": False, "squeeze": 0.0}
def operator(el):
    # (phase, report, e-stop) over the seconds since the policy's first command
    if el < 0.2: return "up", {"left": UP, "right": UP}, False
    if el < 1.2: return "gesture", {"left": dict(UP, primary=True), "right": dict(UP, primary=True)}, False
    if el < 1.8: return "policy", {"left": UP, "right": UP}, False
    if el < 2.0: return "clutch", {"left": dict(UP, secondary=True), "right": UP}, False
    if el < 2.2: return "after", {"left": UP, "right": UP}, False
    return "estop", None, True
node = Node()
auth = Authority(AuthorityConfig(policy_timeout_s=0.3, handback_hold_s=0.5))
t0 = None
rows, worst, diag = [], {"linear": 0.0, "yaw": 0.0, "lift": 0.0}, None
for event in node:
    if event["type"] != "INPUT":
        continue
    now = time.time_ns()
    if event["id"] == "diagnostics":
        diag = decode("Diagnostics", event["value"])
        continue
    if event["id"] == "base_cmd":
        b = decode("BaseCommand", event["value"])
        worst["linear"] = max(worst["linear"], math.hypot(b["forward_m_s"], b["left_m_s"]))
        worst["yaw"] = max(worst["yaw"], abs(b["yaw_rad_s"]))
        continue
    if event["id"] == "lift_cmd":
        worst["lift"] = max(worst["lift"], abs(decode("LiftCommand", event["value"])["velocity_m_s"]))
        continue
    a = decode("ArmTargets", event["value"])
    t0 = t0 or now
    phase, report, estop = operator((now - t0) / 1e9)
    d = auth.step(now, estop_latched=estop, controllers=report, policy_stamp_ns=a["stamp_ns"])
    rows.append([phase, d.driver, list(d.events)])
print("SELECTOR " + json.dumps({"rows": rows, "worst": worst, "caps": [profile.base.max_linear_m_s,
      profile.base.max_yaw_rad_s, profile.lift.max_speed_m_s], "details": json.loads(diag["details_json"]) if diag else None}),
      flush=True)
"""


def test_policy_through_a_dataflow_with_the_selector_beside_it(tmp_path):
    ck = tmp_path / "ck"
    subprocess.run([str(PYTHON), str(MAKE_CHECKPOINT), str(ck)], check=True, timeout=600)
    (tmp_path / "robot.py").write_text(ROBOT)
    (tmp_path / "selector.py").write_text(SELECTOR)
    flow = {"nodes": [
        {"id": "robot", "path": "robot.py", "inputs": {"policy_up": "policy/diagnostics"},
         "outputs": ["joint_states", "odom", "lift_state"]},
        {"id": "policy", "path": str(REPO / "nodes" / "policy" / "policy.py"),
         "args": f"--checkpoint {ck} --python {PYTHON} --device cpu --max-state-age-s 0.5",
         "inputs": {"joint_states": "robot/joint_states", "odom": "robot/odom", "lift_state": "robot/lift_state"},
         "outputs": ["arm_targets", "base_cmd", "lift_cmd", "diagnostics"]},
        {"id": "selector", "path": "selector.py",
         "inputs": {k: f"policy/{k}" for k in ("arm_targets", "base_cmd", "lift_cmd", "diagnostics")}},
    ]}
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", TELEDORA_RECORDER_GUARD="off")
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=400)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    line = next((s for s in text.splitlines() if "SELECTOR " in s), None)
    assert line is not None, text[-3000:]
    got = json.loads(line.split("SELECTOR ", 1)[1])
    rows, worst, caps = got["rows"], got["worst"], got["caps"]
    print(f"{len(rows)} policy steps; worst |linear| {worst['linear']:.3f}, |yaw| {worst['yaw']:.3f}, "
          f"|lift| {worst['lift']:.3f}; node details {got['details']}")
    assert len(rows) >= 30, text[-3000:]
    # bounded: nothing past the caps, whatever the random network asked for
    assert worst["linear"] <= caps[0] * (1 + 1e-9) and worst["yaw"] <= caps[1] * (1 + 1e-9)
    assert worst["lift"] <= caps[2] * (1 + 1e-9)
    by_phase: dict[str, list[str]] = {}
    for phase, driver, _ in rows:
        by_phase.setdefault(phase, []).append(driver)
    assert set(by_phase["up"]) == {"operator"}
    events = [e for _, _, ev in rows for e in ev]
    assert events.count("handback") == 1, rows
    assert "policy" in by_phase["gesture"] + by_phase["policy"]
    assert set(by_phase["clutch"]) == {"operator"} and "takeover" in events
    assert set(by_phase["after"]) == {"operator"}  # authority stays with the operator
    assert set(by_phase["estop"]) == {"stopped"}
