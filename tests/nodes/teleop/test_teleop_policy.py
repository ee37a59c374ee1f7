"""The teleop node with a policy's proposals (inputs policy_arm_targets,
policy_base_cmd, policy_lift_cmd): the selector decides each step whose
commands reach the IK loop, the base and the lift."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora import models
from teledora.nodes.teleop import teleop
from teledora.operators.contract.messages import decode, encode
from teledora.operators.recording.recorded_message import value_digest
from teledora.recording import RunWriter
from teledora.recording.journal_files import FOLLOW_ENV

PROFILE = models.load_profile()
ARM = list(PROFILE.arm_joint_names)
MS = 1_000_000
T0 = 1_800_000_000_000_000_000
LIFT_M = 0.3
POLICY_LEFT = (0.36, 0.21, 0.62)
POLICY_RIGHT = (0.35, -0.22, 0.63)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


class Stepped(MockNode):
    """One event per batch; the clock moves to each event's time."""

    def __init__(self, timed, clock: Clock) -> None:
        super().__init__([ev for _, ev in timed])
        self._times = [t for t, _ in timed]
        self._clock = clock

    def next(self, timeout=None):
        ev = super().next(timeout)
        if ev is not None and ev.get("type") == "INPUT" and self._times:
            self._clock.now = self._times.pop(0)
        return ev

    def drain(self):
        return []


def event(input_id: str, value: pa.Array, seq: int = 0) -> dict:
    return {"type": "INPUT", "id": input_id, "value": value, "metadata": {"seq": seq}}


def hand(t: int, position, **kw) -> dict:
    d = dict(connected=True, epoch=1, pose_valid=True, position=list(position), orientation=[0.0, 0.0, 0.0, 1.0],
             trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False,
             menu=False, pose_stamp_ns=t, input_stamp_ns=t)
    d.update(kw)
    return d


def report(t: int, seq: int, left: dict | None = None, right: dict | None = None, **kw) -> pa.Array:
    msg = dict(stamp_ns=t, frame_id="operator", seq=seq, source="test", focused=True, ui_estop=False,
               ui_release_stop=False, ui_pause=False, ui_episode_start=False, ui_episode_keep=False,
               ui_episode_discard=False, left=left or hand(t, (0.3, 0.2, 1.0)), right=right or hand(t, (0.3, -0.2, 1.0)))
    msg.update(kw)
    return encode("XrControllers", msg)


def policy_commands(t: int, seq: int, forward: float = 0.1, lift: float = 0.02) -> list[dict]:
    def arm(p):
        return dict(enabled=True, position=list(p), orientation=[0.0, 0.0, 0.0, 1.0], gripper=0.2, slow=False)

    return [
        event("policy_arm_targets", encode("ArmTargets", dict(stamp_ns=t, frame_id="base_link", left=arm(POLICY_LEFT), right=arm(POLICY_RIGHT))), seq),
        event("policy_base_cmd", encode("BaseCommand", dict(stamp_ns=t, forward_m_s=forward, left_m_s=0.0, yaw_rad_s=0.1)), seq),
        event("policy_lift_cmd", encode("LiftCommand", dict(stamp_ns=t, velocity_m_s=lift)), seq),
    ]


HOME = [PROFILE.home_q()[n] for n in ARM]


def robot_state(t: int = T0, seq: int = 0) -> list[tuple[int, dict]]:
    """The lift first: the IK starts its reference from a joint state once it knows the lift."""
    return [(t, event("lift", encode("LiftState", dict(stamp_ns=t, height_m=LIFT_M, velocity_m_s=0.0, homed=True)), seq)),
            (t, event("joint_states", encode("JointState", dict(stamp_ns=t, names=ARM, position=HOME, velocity=[], effort=[])), seq))]


def script(phases, policy: bool = True, until_ms: int = 3000) -> list[tuple[int, dict]]:
    """Reports every 20 ms (``phases(t_ms)`` gives the report's keyword args), a
    tick every 10 ms, the robot's (still) state every 50 ms and, with ``policy``,
    the policy's three commands every 30 ms."""
    timed = robot_state()
    for t_ms in range(10, until_ms, 10):
        t = T0 + t_ms * MS
        if t_ms % 50 == 0:
            timed += robot_state(t, t_ms // 50)
        if policy and t_ms % 30 == 0:
            timed += [(t, ev) for ev in policy_commands(t, t_ms // 30)]
        if t_ms % 20 == 0:
            timed.append((t, event("controllers", report(t, t_ms // 20, **phases(t_ms)), t_ms // 20)))
        timed.append((t, {"type": "INPUT", "id": "tick", "value": pa.array([], type=pa.null()), "metadata": {}}))
    return timed


def buttons(t_ms: int, left_at=(0.3, 0.2, 1.0), **kw) -> dict:
    t = T0 + t_ms * MS
    left = {k[2:]: v for k, v in kw.items() if k.startswith("l_")}
    right = {k[2:]: v for k, v in kw.items() if k.startswith("r_")}
    return dict(left=hand(t, left_at, **left), right=hand(t, (0.3, -0.2, 1.0), **right))


def handback_then(t_ms: int, after=None) -> dict:
    """Buttons up, X+A held from 200 ms to 1400 ms (the hand-back), then ``after``."""
    if 200 <= t_ms < 1400:
        return buttons(t_ms, l_primary=True, r_primary=True)
    if t_ms >= 1400 and after is not None:
        return after(t_ms)
    return buttons(t_ms)


class Run:
    """The node run over a script, with every target the IK loop was handed."""

    def __init__(self, monkeypatch, timed) -> None:
        self.to_ik: list[tuple[int, dict]] = []
        build = teleop.build_ik_loop
        clock = Clock()

        def recording_build(path):
            loop = build(path)
            original = loop.on_targets

            def on_targets(msg, now_ns):
                self.to_ik.append((now_ns, msg))
                return original(msg, now_ns)

            loop.on_targets = on_targets
            return loop

        monkeypatch.setattr(teleop, "build_ik_loop", recording_build)
        self.node = Stepped(timed, clock)
        teleop.main([], node=self.node, clock=clock)

    def decoded(self, output: str, kind: str) -> list[dict]:
        return [decode(kind, v) for v in self.node.outputs[output]]


def from_policy(targets: dict) -> bool:
    return np.allclose(targets["left"]["position"], POLICY_LEFT) and np.allclose(targets["right"]["position"], POLICY_RIGHT)


def test_without_a_policy_the_operator_drives_and_nothing_changes(monkeypatch):
    plain = Run(monkeypatch, script(handback_then, policy=False))
    states = plain.decoded("state", "TeleopState")
    assert {s["driver"] for s in states} == {"operator"}
    # the gesture with no policy behind it is refused
    events = [e for s in states for e in s["events"]]
    assert "handback_refused" in events and "handback" not in events
    assert not any(from_policy(t) for _, t in plain.to_ik)
    # the arm targets sent are the ones the IK got, and the scheme tracks the hands
    assert [value_digest(encode("ArmTargets", t)) for _, t in plain.to_ik] == [value_digest(v) for v in plain.node.outputs["arm_targets"]]
    assert plain.decoded("arm_targets", "ArmTargets")[-1]["left"]["enabled"]
    diag = plain.decoded("diagnostics", "Diagnostics")[-1]
    assert diag["rejected"] == 0


def test_policy_commands_without_the_handback_change_no_output(monkeypatch):
    """Until the gesture the policy's commands are ignored: every output the
    IK, base and lift see is byte for byte what the run without them gives."""
    hold_buttons_up = lambda t_ms: buttons(t_ms)  # noqa: E731
    plain = Run(monkeypatch, script(hold_buttons_up, policy=False, until_ms=1500))
    with_policy = Run(monkeypatch, script(hold_buttons_up, policy=True, until_ms=1500))
    for output in ("arm_targets", "base_cmd", "lift_cmd", "joint_commands"):
        assert [value_digest(v) for v in with_policy.node.outputs[output]] == [value_digest(v) for v in plain.node.outputs[output]], output
    assert not any(from_policy(t) for _, t in with_policy.to_ik)
    assert with_policy.decoded("diagnostics", "Diagnostics")[-1]["rejected"] == 0  # known inputs, not strays


def test_after_the_handback_the_policys_commands_drive(monkeypatch):
    run = Run(monkeypatch, script(handback_then, until_ms=2000))
    states = run.decoded("state", "TeleopState")
    handed = next(s for s in states if "handback" in s["events"])
    assert handed["driver"] == "policy" and handed["stamp_ns"] >= T0 + 1200 * MS
    assert states[-1]["driver"] == "policy"
    before = [t for now, t in run.to_ik if now < T0 + 1200 * MS]
    after = [t for now, t in run.to_ik if now > handed["stamp_ns"]]
    assert before and not any(from_policy(t) for t in before)
    assert after and all(from_policy(t) for t in after)
    base = run.decoded("base_cmd", "BaseCommand")[-1]
    lift = run.decoded("lift_cmd", "LiftCommand")[-1]
    assert (base["forward_m_s"], base["yaw_rad_s"], lift["velocity_m_s"]) == pytest.approx((0.1, 0.1, 0.02))
    diag = run.decoded("diagnostics", "Diagnostics")[-1]
    assert '"handbacks": 1' in diag["details_json"] and "POLICY DRIVING" in diag["details_json"]


def test_policy_base_and_lift_keep_the_operators_caps(monkeypatch):
    timed = script(handback_then, policy=False, until_ms=2000)
    for t_ms in range(30, 2000, 30):
        t = T0 + t_ms * MS
        timed += [(t, ev) for ev in policy_commands(t, t_ms // 30, forward=0.9, lift=0.5)]
    timed.sort(key=lambda te: te[0])
    run = Run(monkeypatch, timed)
    config = teleop.load_teleop_config(None, PROFILE)
    base = run.decoded("base_cmd", "BaseCommand")[-1]
    lift = run.decoded("lift_cmd", "LiftCommand")[-1]
    assert run.decoded("state", "TeleopState")[-1]["driver"] == "policy"
    assert base["forward_m_s"] == pytest.approx(config.max_speed_m_s)
    assert lift["velocity_m_s"] == pytest.approx(config.max_lift_speed_m_s)


@pytest.mark.parametrize("takeover", [dict(r_squeeze=0.8), dict(l_secondary=True)], ids=["grip", "clutch"])
def test_a_takeover_report_gives_the_operator_that_very_step(monkeypatch, takeover):
    takeover_ms = 1700

    def after(t_ms):
        # the operator's left hand moved 10 cm while the policy drove
        return buttons(t_ms, left_at=(0.4, 0.2, 1.0), **(takeover if t_ms >= takeover_ms else {}))

    run = Run(monkeypatch, script(lambda t: handback_then(t, after), until_ms=2200))
    t_take = T0 + takeover_ms * MS
    assert any(from_policy(t) for now, t in run.to_ik if now < t_take)
    # from the takeover report's own step on, no policy target reaches the IK loop
    # (the policy keeps sending every 30 ms)
    later = [(now, t) for now, t in run.to_ik if now >= t_take]
    assert later and not any(from_policy(t) for _, t in later)
    assert later[0][0] == t_take
    states = run.decoded("state", "TeleopState")
    took = next(s for s in states if "takeover" in s["events"])
    assert took["stamp_ns"] == t_take and took["driver"] == "operator"
    assert run.decoded("base_cmd", "BaseCommand")[-1]["forward_m_s"] == 0.0  # the operator's sticks are at rest
    if "r_squeeze" in takeover:
        # the arm re-anchors where it is: its first target after the takeover is its
        # grip, not where the mapping from before the hand-back would put the moved hand
        grips = teleop.RobotGrips(models.path(PROFILE.model), PROFILE)
        grips.set_joints(ARM, np.array(HOME))
        grips.set_lift_height(LIFT_M)
        first = later[0][1]
        assert first["left"]["enabled"]
        np.testing.assert_allclose(first["left"]["position"], grips.grips()["left"].position + [0.0, 0.0, LIFT_M], atol=1e-9)


def test_the_estop_stops_both_and_the_policy_needs_the_gesture_again(monkeypatch):
    def after(t_ms):
        return dict(buttons(t_ms), ui_estop=1700 <= t_ms < 1760)

    run = Run(monkeypatch, script(lambda t: handback_then(t, after), until_ms=2400))
    t_stop = T0 + 1700 * MS
    states = run.decoded("state", "TeleopState")
    stopped = [s for s in states if s["stamp_ns"] >= t_stop]
    assert stopped[0]["estop_latched"] and stopped[0]["driver"] == "stopped"
    assert all(s["driver"] == "stopped" for s in stopped)  # latched until released; never the policy again
    later = [t for now, t in run.to_ik if now >= t_stop]
    assert later and not any(from_policy(t) for t in later)
    assert not any(t[s]["enabled"] for t in later for s in ("left", "right"))
    bases = [b for b in run.decoded("base_cmd", "BaseCommand") if b["stamp_ns"] >= t_stop]
    assert bases and all(b["forward_m_s"] == 0.0 and b["yaw_rad_s"] == 0.0 for b in bases)


def test_a_stale_policy_holds_the_arms_and_stops_base_and_lift(monkeypatch):
    timed = [te for te in script(handback_then, until_ms=2600)
             if not (te[1]["id"].startswith("policy_") and te[0] > T0 + 1800 * MS)]
    run = Run(monkeypatch, timed)
    states = run.decoded("state", "TeleopState")
    assert any(s["driver"] == "policy" for s in states)
    assert states[-1]["driver"] == "stopped"
    last_target = run.to_ik[-1][1]
    assert not last_target["left"]["enabled"] and not last_target["right"]["enabled"]
    assert run.decoded("base_cmd", "BaseCommand")[-1]["forward_m_s"] == 0.0
    assert run.decoded("lift_cmd", "LiftCommand")[-1]["velocity_m_s"] == 0.0
    diag = run.decoded("diagnostics", "Diagnostics")[-1]
    assert diag["level"] == "warn" and "stale" in diag["message"]


def test_an_invalid_policy_command_is_rejected_and_counted(monkeypatch):
    bad = pa.array([1, 2, 3])
    timed = script(lambda t: buttons(t), policy=False, until_ms=200) + [(T0 + 200 * MS, event("policy_base_cmd", bad, 1))]
    run = Run(monkeypatch, timed)
    diag = run.decoded("diagnostics", "Diagnostics")[-1]
    assert diag["rejected"] == 1 and "BaseCommand" in diag["last_error"]


def test_replay_of_the_journal_gives_the_same_joint_commands(monkeypatch, tmp_path):
    """The policy's inputs are in the journal: following it reproduces every output byte for byte."""
    timed = script(handback_then, until_ms=2000)
    live = Run(monkeypatch, timed)
    assert any(from_policy(t) for _, t in live.to_ik)
    run_dir = tmp_path / "run"
    writer = RunWriter(run_dir, {"recorded_inputs": {"teleop__journal": "teleop/journal"}}, start_ns=0)
    for i, value in enumerate(live.node.outputs["journal"]):
        writer.append("teleop__journal", value, {"seq": i}, i)
    writer.close(1)
    monkeypatch.setenv(FOLLOW_ENV, str(run_dir))
    replay = MockNode([ev for _, ev in timed])  # all queued at once, another clock
    teleop.main([], node=replay, clock=lambda: 5)
    for output in ("arm_targets", "base_cmd", "lift_cmd", "state", "joint_commands"):
        assert [value_digest(v) for v in replay.outputs[output]] == [value_digest(v) for v in live.node.outputs[output]], output
