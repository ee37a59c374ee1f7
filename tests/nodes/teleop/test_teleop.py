"""teleop node with dora.testing.MockNode: plumbing, FK anchoring, rejection."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pytest
import yaml
from dora.testing import MockNode

from teledora import models
from teledora.models.config_files import load_teleop_config
from teledora.nodes.teleop import teleop
from teledora.operators.contract.messages import decode, encode

ARM = [
    f"{side}_{j}"
    for side in ("left", "right")
    for j in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")
]
MS = 1_000_000


def hand(t_ns: int, position=(0.3, 0.2, 1.0), **kw) -> dict:
    d = dict(
        connected=True, epoch=1, pose_valid=True, position=list(position), orientation=[0.0, 0.0, 0.0, 1.0],
        trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False,
        menu=False, pose_stamp_ns=t_ns, input_stamp_ns=t_ns,
    )
    d.update(kw)
    return d


def controllers(t_ns: int, left: dict | None = None, right: dict | None = None, **kw) -> pa.Array:
    msg = dict(
        stamp_ns=t_ns, frame_id="operator", seq=t_ns // MS, source="test", focused=True, ui_estop=False,
        ui_release_stop=False, ui_pause=False, ui_episode_start=False, ui_episode_keep=False,
        ui_episode_discard=False, left=left or hand(t_ns), right=right or hand(t_ns, (0.3, -0.2, 1.0)),
    )
    msg.update(kw)
    return encode("XrControllers", msg)


def joints(t_ns: int = 0) -> pa.Array:
    return encode("JointState", dict(stamp_ns=t_ns, names=ARM, position=np.zeros(len(ARM)), velocity=[], effort=[]))


LIFT = ("lift", encode("LiftState", dict(stamp_ns=0, height_m=0.3, velocity_m_s=0.0, homed=True)))


class Clock:
    """Deterministic host clock: 10 ms per call."""

    def __init__(self) -> None:
        self._it = itertools.count(0, 10 * MS)

    def __call__(self) -> int:
        return next(self._it)


class OneByOne(MockNode):
    """Delivers one event per batch (no queued burst)."""

    def drain(self):
        return []


def run(inputs, clock=None, burst=False):
    node = MockNode(inputs) if burst else OneByOne(inputs)
    teleop.main([], node=node, clock=clock or Clock())
    return node


def test_enabled_arm_follows_controller_from_fk_anchor():
    clock = Clock()
    # the clock advances 10 ms per call; stamps are produced in step with it
    inputs = [("joint_states", joints()), LIFT]
    inputs += [("controllers", controllers(0)), ("controllers", controllers(10 * MS, left=hand(10 * MS, (0.4, 0.2, 1.05))))]
    node = run(inputs, clock)
    targets = [decode("ArmTargets", a) for a in node.outputs["arm_targets"]]
    assert len(targets) == 2
    first, second = targets
    assert first["left"]["enabled"] and first["frame_id"] == models.load_profile().base_frame
    grips = teleop.RobotGrips(teleop.models.path("alohamini2/alohamini2.xml"), teleop.models.load_profile())
    grips.set_joints(ARM, np.zeros(len(ARM)))
    grips.set_lift_height(0.3)
    fk = grips.grips()["left"].position + [0.0, 0.0, 0.3]  # carriage frame + lift height = base_link
    np.testing.assert_allclose(first["left"]["position"], fk, atol=1e-9)
    np.testing.assert_allclose(second["left"]["position"] - fk, [0.1, 0.0, 0.05], atol=1e-9)
    # the right hand did not move
    np.testing.assert_allclose(second["right"]["position"], first["right"]["position"], atol=1e-12)
    states = [decode("TeleopState", s) for s in node.outputs["state"]]
    assert "left_anchored" in states[0]["events"]


def test_sticks_give_capped_base_and_lift_commands():
    left = hand(0, stick=[0.0, -1.0])  # xr-standard: pushed forward is negative y
    right = hand(0, (0.3, -0.2, 1.0), stick=[-1.0, -1.0])
    node = run([("joint_states", joints()), LIFT, ("controllers", controllers(0, left=left, right=right))])
    base = decode("BaseCommand", node.outputs["base_cmd"][-1])
    lift = decode("LiftCommand", node.outputs["lift_cmd"][-1])
    assert base["forward_m_s"] == pytest.approx(0.25)
    assert base["left_m_s"] == pytest.approx(0.0)
    assert base["yaw_rad_s"] == pytest.approx(0.65)
    assert lift["velocity_m_s"] == pytest.approx(0.08)


@pytest.mark.parametrize("robot_inputs", [[], ["joint_states"], ["lift"]])
def test_without_joint_and_lift_state_arms_are_not_enabled(robot_inputs):
    available = {"joint_states": ("joint_states", joints()), "lift": LIFT}
    node = run([available[k] for k in robot_inputs] + [("controllers", controllers(0))])
    target = decode("ArmTargets", node.outputs["arm_targets"][-1])
    assert not target["left"]["enabled"] and not target["right"]["enabled"]
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["level"] == "warn"


def test_bad_messages_are_rejected_and_last_state_kept():
    bad_joints = encode("JointState", dict(stamp_ns=0, names=["left_shoulder_pan", "bogus"], position=[0.0, 0.0], velocity=[], effort=[]))
    inputs = [
        ("joint_states", joints()),
        LIFT,
        ("controllers", pa.array([1, 2, 3])),
        ("joint_states", bad_joints),
        ("controllers", controllers(0)),
    ]
    node = run(inputs)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 2
    assert "bogus" in diag["last_error"] or "unknown" in diag["last_error"]
    target = decode("ArmTargets", node.outputs["arm_targets"][-1])
    assert target["left"]["enabled"]  # the earlier valid joint state still anchors


def test_tick_evaluates_pose_timeout_without_xr_traffic():
    clock = Clock()
    inputs = [("joint_states", joints()), LIFT, ("controllers", controllers(0))]
    # each tick advances the clock by 10 ms: 40 ticks = 400 ms > 300 ms pose timeout
    inputs += [("tick", pa.array([i])) for i in range(40)]
    node = OneByOne(inputs)
    teleop.main([], node=node, clock=clock)
    first = decode("ArmTargets", node.outputs["arm_targets"][0])
    last = decode("ArmTargets", node.outputs["arm_targets"][-1])
    assert first["left"]["enabled"] and not last["left"]["enabled"]
    events = sum((decode("TeleopState", s)["events"] for s in node.outputs["state"]), [])
    assert "left_pose_stale" in events and "right_pose_stale" in events


def test_stop_before_last_input_does_not_end_the_loop():
    inputs = [("joint_states", joints()), LIFT, {"type": "STOP", "id": "early"}, ("controllers", controllers(0))]
    node = run(inputs)
    assert len(node.outputs["arm_targets"]) == 1


def test_a_burst_publishes_once_without_losing_edges():
    t = 0
    held = hand(t, secondary=True)
    inputs = [("joint_states", joints()), LIFT, ("controllers", controllers(t)), ("controllers", controllers(t, left=held)),
              ("controllers", controllers(t))]
    node = run(inputs, burst=True)
    assert len(node.outputs["arm_targets"]) == 1
    events = decode("TeleopState", node.outputs["state"][0])["events"]
    assert "left_clutch_on" in events and "left_clutch_off" in events


def test_reports_a_frame_apart_each_get_a_step_even_when_they_arrive_together():
    frame = 11 * MS  # 90 Hz
    inputs = [("joint_states", joints()), LIFT] + [("controllers", controllers(k * frame)) for k in range(2)]
    node = run(inputs, burst=True)
    stamps = [decode("ArmTargets", a)["stamp_ns"] for a in node.outputs["arm_targets"]]
    assert len(stamps) == 2 and stamps[0] < stamps[1]


def test_a_backlog_publishes_its_newest_reports_only():
    frame = 11 * MS
    inputs = [("joint_states", joints()), LIFT] + [("controllers", controllers(k * frame)) for k in range(7)]
    node = run(inputs, burst=True)
    assert len(node.outputs["arm_targets"]) == 3  # node.max_steps_per_batch in teleop.yaml
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["reports_folded"] == {"burst": 0, "backlog": 4}


def test_a_burst_is_counted_as_folded():
    inputs = [("joint_states", joints()), LIFT] + [("controllers", controllers(k * MS)) for k in range(3)]
    node = run(inputs, burst=True)
    assert len(node.outputs["arm_targets"]) == 1
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["reports_folded"] == {"burst": 2, "backlog": 0}


@pytest.mark.parametrize("stamps, spacing, most, want", [
    ([0], 4, 3, [True]),
    ([0, 11, 22], 4, 3, [True, True, True]),
    ([0, 1, 2], 4, 3, [False, False, True]),  # a burst: only its newest
    ([0, 1, 11, 12], 4, 3, [False, True, False, True]),
    ([0, 11, 22, 33, 44], 4, 2, [False, False, False, True, True]),
    ([0, 11], 4, 0, [False, True]),  # the newest always steps
])
def test_which_reports_of_a_batch_step(stamps, spacing, most, want):
    assert teleop.stepped_reports(stamps, spacing, most) == want


def test_outputs_carry_the_xr_report_for_tracing():
    from dora.testing import MockNode as _Mock

    class Recording(OneByOne):
        def __init__(self, inputs):
            super().__init__(inputs)
            self.meta: list[dict] = []

        def send_output(self, output_id, data, metadata=None):
            if output_id == "arm_targets":
                self.meta.append(dict(metadata or {}))
            return _Mock.send_output(self, output_id, data, metadata)

    node = Recording([("joint_states", joints()), LIFT, ("controllers", controllers(20 * MS))])
    teleop.main([], node=node, clock=Clock())
    assert node.meta == [{"xr_seq": 20, "xr_stamp_ns": 20 * MS, "seq": 0}]


def test_a_report_is_solved_by_the_ik_in_the_same_step_that_sends_its_targets():
    from dora.testing import MockNode as _Mock

    class Recording(OneByOne):
        def __init__(self, inputs):
            super().__init__(inputs)
            self.sent: list[tuple[str, dict]] = []

        def next(self, timeout=None):
            event = super().next(timeout)
            self.sent.append(("<next>", {}))
            return event

        def send_output(self, output_id, data, metadata=None):
            self.sent.append((output_id, dict(metadata or {})))
            return _Mock.send_output(self, output_id, data, metadata)

    inputs = [LIFT, ("joint_states", joints()), ("controllers", controllers(20 * MS)),
              ("controllers", controllers(40 * MS, left=hand(40 * MS, (0.35, 0.2, 1.02))))]
    node = Recording(inputs)
    teleop.main([], node=node, clock=Clock())
    sent = [(o, m) for o, m in node.sent if o not in ("journal", "diagnostics")]
    # between two reads of the stream: the report's targets, then the joint commands solved from them
    for seq in (20, 40):
        k = next(i for i, (o, m) in enumerate(sent) if o == "arm_targets" and m["xr_seq"] == seq)
        step = sent[k:next(i for i in range(k, len(sent)) if sent[i][0] == "<next>")]
        commands = [m for o, m in step if o == "joint_commands"]
        assert len(commands) == 1 and commands[0]["xr_seq"] == seq, step
    cmds = [decode("JointCommands", a) for a in node.outputs["joint_commands"]]
    assert cmds and all(c["names"] == ARM for c in cmds)
    # the second report moved the left hand: its solve moves the left arm's reference
    assert np.max(np.abs(np.array(cmds[-1]["q_ref"][:6]) - np.array(cmds[0]["q_ref"][:6]))) > 0


def test_targets_ride_with_the_lift():
    # same controller pose, lift raised by 0.1 m between two reports: the target rises with it
    lift_low = encode("LiftState", dict(stamp_ns=0, height_m=0.3, velocity_m_s=0.0, homed=True))
    lift_high = encode("LiftState", dict(stamp_ns=0, height_m=0.4, velocity_m_s=0.0, homed=True))
    inputs = [("joint_states", joints()), ("lift", lift_low), ("controllers", controllers(0)),
              ("lift", lift_high), ("controllers", controllers(10 * MS))]
    node = run(inputs, Clock())
    first, second = (decode("ArmTargets", a) for a in node.outputs["arm_targets"])
    np.testing.assert_allclose(second["left"]["position"] - first["left"]["position"], [0.0, 0.0, 0.1], atol=1e-9)


class ReportClock(OneByOne):
    """One event per batch; the host clock reads each controller report's stamp
    (a live 90 Hz stream), and sent outputs keep their metadata."""

    def __init__(self, inputs):
        super().__init__(inputs)
        self.now, self.sent_meta = 0, {}

    def next(self, timeout=None):
        event = super().next(timeout)
        if event and event.get("type") == "INPUT" and event["id"] == "controllers":
            self.now = int(decode("XrControllers", event["value"])["stamp_ns"])
        return event

    def send_output(self, output_id, data, metadata=None):
        self.sent_meta.setdefault(output_id, []).append(dict(metadata or {}))
        return super().send_output(output_id, data, metadata)


def _stick_run(argv):
    frame = 11 * MS
    reports = []
    for k in range(60):  # at rest, then the left stick pushed forward from report 20, released at 40
        stick = [0.0, -1.0] if 20 <= k < 40 else [0.0, 0.0]
        reports.append(("controllers", controllers(k * frame, left=hand(k * frame, stick=stick))))
    node = ReportClock([("joint_states", joints()), LIFT] + reports)
    teleop.main(argv, node=node, clock=lambda: node.now)
    return node


def test_unchanged_commands_and_state_go_out_once_a_keepalive_and_every_change_at_once():
    node = _stick_run([])
    assert len(node.outputs["arm_targets"]) == 60  # every step
    forward = [decode("BaseCommand", c)["forward_m_s"] for c in node.outputs["base_cmd"]]
    seqs = [m["xr_seq"] for m in node.sent_meta["base_cmd"]]
    frame_ms = 11
    # the changes went out on the very reports that made them
    assert seqs[forward.index(0.25)] == 20 * frame_ms
    assert seqs[forward.index(0.25) + forward[forward.index(0.25):].index(0.0)] == 40 * frame_ms
    # in between, unchanged values once every 0.1 s (9 to 10 reports) at most
    sent = list(zip(seqs, forward))
    assert all(b - a >= 100 for (a, va), (b, vb) in zip(sent, sent[1:]) if va == vb)
    assert len(forward) <= 12 and len(node.outputs["lift_cmd"]) <= 8
    # a receiver holding the newest sent command has the current one after every report
    for k in range(60):
        newest = max(i for i, s in enumerate(seqs) if s <= k * frame_ms)
        assert forward[newest] == (0.25 if 20 <= k < 40 else 0.0), k
    # every state that carried events went out
    events = [e for s in node.outputs["state"] for e in decode("TeleopState", s)["events"]]
    assert "left_anchored" in events and "right_anchored" in events
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["unchanged_held"]["base_cmd"] == 60 - len(forward)


def test_keepalive_zero_sends_every_step():
    node = _stick_run(["--keepalive-s", "0"])
    assert [len(node.outputs[o]) for o in ("arm_targets", "base_cmd", "lift_cmd", "state")] == [60] * 4


def test_a_keepalive_past_half_the_watchdog_refuses_to_start():
    node = ReportClock([("joint_states", joints()), LIFT])
    with pytest.raises(SystemExit, match="keepalive_s"):
        teleop.main(["--keepalive-s", "0.8"], node=node, clock=lambda: node.now)


def _teleop_yaml(tmp_path, **node_values) -> str:
    data = models.load_yaml("alohamini2/teleop.yaml")
    data["node"].update(node_values)
    path = tmp_path / "teleop.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_batching_and_keepalive_come_from_teleop_yamls_node_section(tmp_path):
    frame = 11 * MS
    inputs = [("joint_states", joints()), LIFT] + [("controllers", controllers(k * frame)) for k in range(7)]
    node = MockNode(inputs)
    teleop.main(["--config", _teleop_yaml(tmp_path, max_steps_per_batch=2)], node=node, clock=Clock())
    assert len(node.outputs["arm_targets"]) == 2
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["reports_folded"] == {"burst": 0, "backlog": 5}
    every_step = _stick_run(["--config", _teleop_yaml(tmp_path, keepalive_s=0.0)])
    assert [len(every_step.outputs[o]) for o in ("arm_targets", "base_cmd", "lift_cmd", "state")] == [60] * 4


@pytest.mark.parametrize("key, bad", [("max_steps_per_batch", 0), ("republish_s", 0.0), ("burst_spacing_s", -0.001),
                                      ("max_steps_per_batch", 2.5)])
def test_node_settings_out_of_range_in_teleop_yaml_are_refused(tmp_path, key, bad):
    with pytest.raises(ValueError, match=f"node.{key}"):
        load_teleop_config(_teleop_yaml(tmp_path, **{key: bad}))
