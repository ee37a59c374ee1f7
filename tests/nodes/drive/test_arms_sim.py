"""arms node (sim variant) under MockNode: every command bounded before the sim sees it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
from dora.testing import MockNode

from teledora import models
from teledora.nodes.drive import arms_sim
from teledora.fakes.stepped_node import FakeClock, SteppedNode
from teledora.operators.contract.messages import decode, encode

PROFILE = models.load_profile()
JOINTS = list(PROFILE.arm_joint_names)
TICK_RAD = 2 * np.pi / 4096


def commands(q, dq) -> object:
    return encode("JointCommands", dict(stamp_ns=1, names=JOINTS, q_ref=list(q), dq_ref=list(dq), status="ok"))


def mjcf_ranges() -> dict[str, tuple[float, float]]:
    """The joint ranges as written in the model file (own range or default class)."""
    root = ET.parse(models.path(PROFILE.model)).getroot()
    defaults = {d.get("class"): d.find("joint") for d in root.iter("default") if d.get("class")}
    out = {}
    for j in root.iter("joint"):
        if j.get("name") in JOINTS:
            lo, hi = (float(v) for v in (j.get("range") or defaults[j.get("class")].get("range")).split())
            out[j.get("name")] = (lo, hi)
    return out


def test_absurd_commands_are_rejected_and_over_range_ones_clamped_into_the_model_range() -> None:
    n = len(JOINTS)
    absurd = np.full(n, 0.2)
    absurd[JOINTS.index("right_elbow_flex")] = 1e300  # the issue's command
    over = np.where([j.endswith("gripper") for j in JOINTS], 2.0, -5.0)  # outside every range, not absurdly
    node = SteppedNode([  # one command per batch, so none is skipped as stale
        ("joint_commands", commands(absurd, np.zeros(n)), 0.0),
        ("joint_commands", commands(over, np.full(n, -7.5)), 0.0),  # feedforward 2.5x its 3 rad/s cap
        ("joint_commands", commands(np.zeros(n), np.full(n, 1e3)), 0.0),  # absurd feedforward
    ], FakeClock())
    arms_sim.main(node=node)
    sent = [decode("JointCommands", v) for v in node.outputs["servo_targets"]]
    assert len(sent) == 1  # only the clamped command reached the sim
    q, dq = dict(zip(sent[0]["names"], sent[0]["q_ref"])), sent[0]["dq_ref"]
    ranges = mjcf_ranges()
    for joint in JOINTS:
        lo, hi = ranges[joint]
        assert lo <= q[joint] <= hi, joint
        assert abs(q[joint] - (lo if not joint.endswith("gripper") else hi)) < TICK_RAD  # the tick next to the bound
        assert q[joint] / TICK_RAD == round(q[joint] / TICK_RAD)  # on the servo grid
    np.testing.assert_array_equal(dq, np.full(n, -3.0))
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (2, 1, "warn")
    logs = " ".join(log["message"] for log in node.logs)
    # the absurd values are refused when decoded (message limits), before the arms' own limits
    assert "right_elbow_flex: 1e+300 is outside" in logs and "velocity: 1000 is beyond the plausible" in logs
    limits = json.loads(diag["details_json"])["limits"]
    assert limits["rejected"] == 0 and limits["clamped"] == 1
    assert json.loads(diag["details_json"])["rejected_by_reason"] == {"out_of_range": 2}
    assert limits["clamped_by"] == {**{f"{j} q_ref": 1 for j in JOINTS}, **{f"{j} dq_ref": 1 for j in JOINTS}}


def test_a_command_within_limits_is_passed_on_unclamped() -> None:
    n = len(JOINTS)
    q = np.where([j.endswith("gripper") for j in JOINTS], 0.3, np.linspace(-1.0, 0.6, n))
    node = MockNode([("joint_commands", commands(q, np.full(n, 1.5)))])
    arms_sim.main(node=node)
    sent = decode("JointCommands", node.outputs["servo_targets"][0])
    np.testing.assert_allclose(sent["q_ref"], q, atol=TICK_RAD / 2)
    np.testing.assert_array_equal(sent["dq_ref"], np.full(n, 1.5))
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (0, 0, "ok")
