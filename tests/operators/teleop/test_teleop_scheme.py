"""The teleop control scheme, one table per rule, plus a randomised property test.

Time is injected: every report and step carries an explicit ``t_ms``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_teleop_config
from teledora.operators.contract.messages import encode
from teledora.operators.teleop.teleop_scheme import TeleopConfig, TeleopConfigError, TeleopOutput, TeleopScheme
from teledora.operators.geometry import Pose, quat_angle, quat_from_rotvec, quat_multiply

MS = 1_000_000
PROFILE = models.load_profile()
CONFIG = load_teleop_config(profile=PROFILE)  # shipped teleop.yaml, the profile's caps
GRIPS = {
    "left": Pose.of([0.35, 0.18, 0.75], [0.0, 0.0, 0.0, 1.0]),
    "right": Pose.of([0.35, -0.19, 0.75], [0.0, 0.0, 0.0, 1.0]),
}
HOME = {"left": (0.3, 0.2, 1.0), "right": (0.3, -0.2, 1.0)}


class Harness:
    """Drives a scheme with full reports; each hand keeps its last fields unless overridden."""

    def __init__(self, config: TeleopConfig | None = None, grips: dict | None = None, validate: bool = True) -> None:
        self.s = TeleopScheme(config or CONFIG)
        self.validate = validate
        self.grips = dict(grips or GRIPS)
        self.hands: dict[str, dict[str, Any]] = {h: self._hand(h) for h in ("left", "right")}
        self.ui = dict(focused=True, ui_estop=False, ui_release_stop=False, ui_pause=False, ui_episode_start=False,
                       ui_episode_keep=False, ui_episode_discard=False)
        self.seq = 0

    @staticmethod
    def _hand(h: str) -> dict[str, Any]:
        return dict(
            connected=True, epoch=1, pose_valid=True, position=list(HOME[h]), orientation=[0.0, 0.0, 0.0, 1.0],
            trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False,
            menu=False, pose_stamp_ns=0, input_stamp_ns=0,
        )

    def report(self, t_ms: float, left: dict | None = None, right: dict | None = None, pose_for=("left", "right"),
               input_for=("left", "right"), **ui: Any) -> TeleopOutput:
        """Sends one report at ``t_ms``; hands in ``pose_for``/``input_for`` get fresh stamps."""
        t = int(t_ms * MS)
        for h, over in (("left", left), ("right", right)):
            self.hands[h].update(over or {})
            if h in pose_for:
                self.hands[h]["pose_stamp_ns"] = t
            if h in input_for:
                self.hands[h]["input_stamp_ns"] = t
        self.ui.update(ui)
        self.seq += 1
        msg = dict(stamp_ns=t, frame_id="operator", seq=self.seq, source="test", left=dict(self.hands["left"]),
                   right=dict(self.hands["right"]), **self.ui)
        if self.validate:
            encode("XrControllers", msg)  # every report the tests send is contract-valid
        self.s.on_controllers(msg, t)
        return self.step(t_ms)

    def step(self, t_ms: float) -> TeleopOutput:
        out = self.s.step(int(t_ms * MS), self.grips)
        for kind, value in (("ArmTargets", out.arm_targets), ("BaseCommand", out.base_cmd),
                            ("LiftCommand", out.lift_cmd), ("TeleopState", out.state)):
            if self.validate:
                encode(kind, value)
        return out

    def press(self, t_ms: float, hand: str, button: str) -> TeleopOutput:
        self.report(t_ms, **{hand: {button: True}})
        return self.report(t_ms + 10, **{hand: {button: False}})


def moved(h: Harness, t_ms: float, hand: str, dp) -> TeleopOutput:
    pos = list(np.add(HOME[hand], dp))
    return h.report(t_ms, **{hand: {"position": pos}})


def events(*outs: TeleopOutput) -> list[str]:
    return [e for o in outs for e in o.state["events"]]


def release_edge(h: Harness, t_ms: float) -> TeleopOutput:
    """One press of the release control: the level up at ``t_ms``, down 10 ms later."""
    up = h.report(t_ms, ui_release_stop=True)
    down = h.report(t_ms + 10, ui_release_stop=False)
    return replace(down, state=dict(down.state, events=events(up, down)))


# --------------------------------------------------------------- config
@pytest.mark.parametrize(
    "values, message",
    [
        ({"slow_factor": 0.0}, "slow_factor"),
        ({"stick_deadzone": 1.0}, "stick_deadzone"),
        ({"start_paused": 1}, "start_paused"),
        ({"max_sped_m_s": 1.0}, "unknown"),
        ({"pose_timeout_s": float("nan")}, "pose_timeout_s"),
        ({"future_stamp_tolerance_s": -0.1}, "future_stamp_tolerance_s"),
        ({"estop_squeeze_threshold": 0.0}, "estop_squeeze_threshold"),
        ({"estop_squeeze_threshold": 1.5}, "estop_squeeze_threshold"),
        ({"release_confirm_window_s": 0.0}, "release_confirm_window_s"),
        ({"late_catch_up_speed_m_s": 0.0}, "late_catch_up_speed_m_s must be"),
        ({"late_catch_up_speed_m_s": float("inf")}, "late_catch_up_speed_m_s.*finite"),
        ({"late_catch_up_rate_rad_s": 0.0}, "late_catch_up_rate_rad_s must be"),
        ({"late_catch_up_rate_rad_s": -1.0}, "late_catch_up_rate_rad_s must be"),
        ({"max_speed_m_s": 0.3}, r"\['max_speed_m_s'\]: speed caps and the base frame are set in the robot profile"),
        ({"base_frame": "chassis"}, r"\['base_frame'\]: .* set in the robot profile"),
    ],
)
def test_config_rejects_bad_values(values, message):
    shipped = models.load_yaml("alohamini2/teleop.yaml")
    with pytest.raises(TeleopConfigError, match=message):
        TeleopConfig.from_mapping({**shipped, **values}, PROFILE)


def test_caps_come_from_the_profile_and_are_checked():
    assert (CONFIG.max_speed_m_s, CONFIG.max_yaw_rate_rad_s, CONFIG.max_lift_speed_m_s) == (
        PROFILE.base.max_linear_m_s, PROFILE.base.max_yaw_rad_s, PROFILE.lift.max_speed_m_s)
    with pytest.raises(TeleopConfigError, match="max_speed_m_s"):
        replace(CONFIG, max_speed_m_s=-1.0)


def test_arm_targets_are_in_the_profiles_base_frame():
    config = TeleopConfig.from_mapping(models.load_yaml("alohamini2/teleop.yaml"), replace(PROFILE, base_frame="chassis_b"))
    out = TeleopScheme(config).step(0, GRIPS)
    assert config.base_frame == "chassis_b" and out.arm_targets["frame_id"] == "chassis_b"


# ------------------------------------------------------- sticks -> base/lift
@pytest.mark.parametrize(
    "left_stick, right_stick, expected",
    [
        ([0.0, -1.0], [0.0, 0.0], (0.25, 0.0, 0.0, 0.0)),  # left stick pushed forward (y < 0): drive forward
        ([0.0, 1.0], [0.0, 0.0], (-0.25, 0.0, 0.0, 0.0)),
        ([-1.0, 0.0], [0.0, 0.0], (0.0, 0.25, 0.0, 0.0)),  # left stick left: strafe left (+y)
        ([1.0, -1.0], [0.0, 0.0], (0.25 / np.sqrt(2), -0.25 / np.sqrt(2), 0.0, 0.0)),  # diagonal capped at 0.25
        ([0.0, 0.0], [-1.0, 0.0], (0.0, 0.0, 0.65, 0.0)),  # right stick left: CCW (+yaw)
        ([0.0, 0.0], [1.0, 0.0], (0.0, 0.0, -0.65, 0.0)),
        ([0.0, 0.0], [0.0, -1.0], (0.0, 0.0, 0.0, 0.08)),  # right stick forward: lift up
        ([0.0, 0.0], [0.0, 1.0], (0.0, 0.0, 0.0, -0.08)),
        ([0.05, 0.08], [0.09, -0.1], (0.0, 0.0, 0.0, 0.0)),  # inside the deadzone
        ([0.0, -0.55], [0.0, 0.0], (0.25 * 0.5, 0.0, 0.0, 0.0)),  # deadzone rescaled: (0.55-0.1)/0.9
    ],
)
def test_sticks_map_to_capped_base_and_lift(left_stick, right_stick, expected):
    h = Harness()
    out = h.report(0, left={"stick": left_stick}, right={"stick": right_stick})
    got = (out.base_cmd["forward_m_s"], out.base_cmd["left_m_s"], out.base_cmd["yaw_rad_s"], out.lift_cmd["velocity_m_s"])
    np.testing.assert_allclose(got, expected, atol=1e-12)


# ------------------------------------------------------------ trigger/pinch
@pytest.mark.parametrize(
    "clicks, trigger, pinch, closure",
    [(0, 1.0, "full", 0.65), (1, 1.0, "fine", 0.35), (2, 1.0, "half", 0.5), (3, 1.0, "full", 0.65),
     (1, 0.5, "fine", 0.175), (0, 0.0, "full", 0.0)],
)
def test_trigger_closes_gripper_within_the_cycled_pinch_range(clicks, trigger, pinch, closure):
    h = Harness()
    h.report(0)
    t = 10
    for _ in range(clicks):
        h.press(t, "right", "stick_click")
        t += 20
    out = h.report(t, right={"trigger": trigger})
    assert out.state["right_pinch"] == pinch and out.state["left_pinch"] == "full"
    assert out.arm_targets["right"]["gripper"] == pytest.approx(closure)
    assert out.arm_targets["left"]["gripper"] == 0.0


def test_held_stick_click_cycles_once():
    h = Harness()
    h.report(0)
    for t in range(10, 200, 10):
        out = h.report(t, left={"stick_click": True})
    assert out.state["left_pinch"] == "fine"


# --------------------------------------------------------------- follow
@pytest.mark.parametrize(
    "hand, dp",
    [("left", (0.1, 0.0, 0.0)), ("left", (0.0, -0.05, 0.02)), ("right", (-0.03, 0.04, 0.1))],
)
def test_enabled_arms_follow_without_any_button(hand, dp):
    h = Harness()
    first = h.report(0)
    assert first.arm_targets[hand]["enabled"]
    np.testing.assert_allclose(first.arm_targets[hand]["position"], GRIPS[hand].position)
    out = moved(h, 10, hand, dp)
    np.testing.assert_allclose(out.arm_targets[hand]["position"], GRIPS[hand].position + np.array(dp), atol=1e-12)
    other = "right" if hand == "left" else "left"
    np.testing.assert_allclose(out.arm_targets[other]["position"], GRIPS[other].position)


def test_rotation_is_applied_as_a_world_frame_delta():
    grips = dict(GRIPS, left=Pose.of([0.35, 0.18, 0.75], quat_from_rotvec([0.0, 0.5, 0.0])))
    h = Harness(grips=grips)
    h.report(0)
    out = h.report(10, left={"orientation": list(quat_from_rotvec([0.0, 0.0, 0.3]))})
    expected = Pose.of([0, 0, 0], quat_from_rotvec([0.0, 0.0, 0.3]))

    q = quat_multiply(expected.orientation, grips["left"].orientation)
    assert quat_angle(out.arm_targets["left"]["orientation"], q) < 1e-9


# --------------------------------------------------------------- clutch
@pytest.mark.parametrize("hand, button", [("left", "secondary"), ("right", "secondary")])
def test_clutch_holds_arm_and_both_edges_reanchor(hand, button):
    h = Harness()
    h.report(0)
    moved(h, 10, hand, (0.1, 0, 0))
    h.grips[hand] = Pose.of(GRIPS[hand].position + [0.09, 0, 0], [0, 0, 0, 1])  # the arm lags 1 cm
    on = h.report(20, **{hand: {button: True}})
    assert on.state[f"{hand}_clutched"] and not on.arm_targets[hand]["enabled"]
    np.testing.assert_allclose(on.arm_targets[hand]["position"], h.grips[hand].position)  # held where the arm is
    during = moved(h, 30, hand, (0.3, 0, 0))  # hand moves while clutched: no effect
    assert not during.arm_targets[hand]["enabled"]
    np.testing.assert_allclose(during.arm_targets[hand]["position"], h.grips[hand].position)
    off = h.report(40, **{hand: {button: False}})
    assert off.arm_targets[hand]["enabled"] and not off.state[f"{hand}_clutched"]
    np.testing.assert_allclose(off.arm_targets[hand]["position"], h.grips[hand].position)  # re-anchored
    after = moved(h, 50, hand, (0.35, 0, 0))
    np.testing.assert_allclose(after.arm_targets[hand]["position"], h.grips[hand].position + [0.05, 0, 0], atol=1e-12)
    assert f"{hand}_clutch_on" in events(on) and f"{hand}_clutch_off" in events(off)


# ---------------------------------------------------------------- slow
@pytest.mark.parametrize(
    "hand, dp, stick, field, full",
    [("left", (0.1, 0, 0), [0.0, -1.0], "forward_m_s", 0.25), ("right", (0, 0.2, 0), [0.0, -1.0], "lift", 0.08)],
)
def test_slow_scales_that_arm_and_its_stick(hand, dp, stick, field, full):
    h = Harness()
    h.report(0)
    h.report(10, **{hand: {"primary": True}})
    out = h.report(20, **{hand: {"position": list(np.add(HOME[hand], dp)), "stick": stick}})
    assert out.state[f"{hand}_slow"] and out.arm_targets[hand]["slow"]
    np.testing.assert_allclose(out.arm_targets[hand]["position"], GRIPS[hand].position + 0.1 * np.array(dp), atol=1e-12)
    value = out.lift_cmd["velocity_m_s"] if field == "lift" else out.base_cmd[field]
    assert value == pytest.approx(0.1 * full)
    # releasing slow continues from the current target without a jump
    rel = h.report(30, **{hand: {"primary": False, "stick": [0.0, 0.0]}})
    np.testing.assert_allclose(rel.arm_targets[hand]["position"], out.arm_targets[hand]["position"], atol=1e-12)
    other = "right" if hand == "left" else "left"
    assert not out.state[f"{other}_slow"]


def test_slow_scales_rotation():
    h = Harness()
    h.report(0)
    h.report(10, left={"primary": True})
    out = h.report(20, left={"orientation": list(quat_from_rotvec([0.0, 0.0, 1.0]))})
    assert quat_angle(out.arm_targets["left"]["orientation"], GRIPS["left"].orientation) == pytest.approx(0.1)


# --------------------------------------------------------------- e-stop
@pytest.mark.parametrize("trigger", ["left_menu", "page_stop"])
def test_estop_latches_stops_everything_and_reset_cannot_clear_it(trigger):
    h = Harness()
    h.report(0, left={"stick": [0, -1], "trigger": 0.4}, right={"stick": [1, -1]})
    if trigger == "left_menu":
        out = h.report(10, left={"menu": True})
        out = h.report(20, left={"menu": False})
    else:
        out = h.report(10, ui_estop=True)
        out = h.report(20, ui_estop=False)
    assert out.state["estop_latched"] and out.state["arms_paused"]
    assert (out.base_cmd["forward_m_s"], out.base_cmd["yaw_rad_s"], out.lift_cmd["velocity_m_s"]) == (0.0, 0.0, 0.0)
    assert not out.arm_targets["left"]["enabled"] and not out.arm_targets["right"]["enabled"]
    frozen = out.arm_targets["left"]["gripper"]
    out = h.report(30, left={"trigger": 1.0})
    assert out.arm_targets["left"]["gripper"] == frozen
    # right menu (resume) and two reset chords do not clear it
    h.press(40, "right", "menu")
    for t in (100, 200):
        h.report(t, left={"primary": True, "secondary": True}, right={"primary": True, "secondary": True})
        out = h.report(t + 50, left={"primary": False, "secondary": False}, right={"primary": False, "secondary": False})
    assert out.state["estop_latched"] and out.state["reset_count"] == 0
    assert "reset_refused_estop" in events(out)
    # the explicit two-step release clears it; arms stay paused until resumed
    out = release_edge(h, 300)
    assert out.state["estop_latched"] and out.state["release_armed"]
    out = release_edge(h, 400)
    assert not out.state["estop_latched"] and out.state["arms_paused"]
    out = h.press(520, "right", "menu")
    assert not out.state["arms_paused"] and out.arm_targets["left"]["enabled"]


# ----------------------------------------------------- grip-gesture e-stop
@pytest.mark.parametrize(
    "left_squeeze, right_squeeze, latched",
    [
        (1.0, 1.0, True),
        (0.9, 0.9, True),  # the threshold itself counts
        (0.89, 1.0, False),
        (1.0, 0.89, False),
        (1.0, 0.0, False),  # one hand is not the gesture
        (0.0, 1.0, False),
        (0.5, 0.5, False),
    ],
)
def test_both_squeezes_past_the_threshold_latch_the_stop_on_that_report(left_squeeze, right_squeeze, latched):
    h = Harness()
    h.report(0, left={"stick": [0.0, -1.0], "trigger": 0.4}, right={"stick": [0.0, -1.0]})
    out = h.report(10, left={"squeeze": left_squeeze, "trigger": 1.0}, right={"squeeze": right_squeeze})
    assert out.state["estop_latched"] is latched
    assert ("estop_latched:grip_gesture" in events(out)) is latched
    if latched:  # the same report's step already holds everything
        assert (out.base_cmd["forward_m_s"], out.lift_cmd["velocity_m_s"]) == (0.0, 0.0)
        assert not out.arm_targets["left"]["enabled"] and not out.arm_targets["right"]["enabled"]
        assert out.arm_targets["left"]["gripper"] == pytest.approx(0.4 * 0.65)  # frozen before this report's trigger
    else:  # the squeeze has no other function: no event at all
        assert events(out) == [] and out.base_cmd["forward_m_s"] == pytest.approx(0.25)


def test_grip_gesture_held_at_a_connections_first_report_latches_at_once():
    h = Harness()
    out = h.report(0, left={"squeeze": 1.0}, right={"squeeze": 1.0})
    assert out.state["estop_latched"] and "estop_latched:grip_gesture" in events(out)


def test_grip_gesture_needs_both_hands_connected():
    h = Harness()
    h.report(0, right={"connected": False})
    out = h.report(10, left={"squeeze": 1.0}, right={"squeeze": 1.0})  # right still not connected
    assert not out.state["estop_latched"]


def test_a_disconnected_hand_forgets_its_squeeze():
    h = Harness()
    h.report(0, left={"squeeze": 1.0})
    h.report(10, right={"connected": False, "squeeze": 1.0})
    out = h.report(20, right={"connected": True, "epoch": 2, "squeeze": 0.0})
    assert not out.state["estop_latched"]
    out = h.report(30, right={"squeeze": 1.0})
    assert out.state["estop_latched"]


# ----------------------------------------------------- two-step release
def latched_harness(config: TeleopConfig | None = None) -> Harness:
    h = Harness(config)
    h.report(0)
    h.report(10, ui_estop=True)
    out = h.report(20, ui_estop=False)
    assert out.state["estop_latched"]
    return h


@pytest.mark.parametrize(
    "confirm_after_ms, released",
    [(300, True), (4990, True), (5000, True), (5010, False), (20000, False)],
)
def test_release_needs_an_arm_and_a_confirm_within_the_window(confirm_after_ms, released):
    h = latched_harness()
    out = release_edge(h, 100)
    assert out.state["estop_latched"] and out.state["release_armed"]
    assert "estop_release_armed" in events(out) and "estop_released" not in events(out)
    out = release_edge(h, 100 + confirm_after_ms)
    assert out.state["estop_latched"] is not released
    if released:
        assert "estop_released" in events(out) and out.state["arms_paused"] and not out.state["release_armed"]
    else:  # the window ran out: this edge only armed a new release
        assert events(out)[:2] == ["estop_release_expired", "estop_release_armed"] and out.state["release_armed"]


def test_an_armed_release_expires_on_a_tick_without_reports():
    h = latched_harness()
    release_edge(h, 100)
    assert h.step(5100).state["release_armed"]
    out = h.step(5111)
    assert not out.state["release_armed"] and events(out) == ["estop_release_expired"]
    assert release_edge(h, 5200).state["estop_latched"]  # a single edge only arms again


@pytest.mark.parametrize(
    "held, refusal",
    [
        ({"left": {"menu": True}}, "left_menu"),
        ({"ui_estop": True}, "page_stop"),
        ({"left": {"squeeze": 0.95}}, "left_squeeze"),
        ({"right": {"squeeze": 1.0}}, "right_squeeze"),
        ({"left": {"squeeze": 1.0}, "right": {"squeeze": 1.0}}, "left_squeeze+right_squeeze"),
        ({"left": {"menu": True}, "ui_estop": True}, "left_menu+page_stop"),
    ],
)
@pytest.mark.parametrize("step", ["arm", "confirm"])
def test_release_is_refused_while_any_stop_input_is_held(held, refusal, step):
    h = latched_harness()
    t = 100
    if step == "confirm":
        release_edge(h, t)
        t += 100
    h.report(t, **held)  # the stop input goes down and stays down
    for k in range(3):  # every release edge while it is held is refused
        out = release_edge(h, t + 100 + 100 * k)
        assert out.state["estop_latched"] and not out.state["release_armed"]
        assert f"estop_release_refused:{refusal}" in events(out)
    let_go = {k: (False if k == "ui_estop" else {b: (False if b == "menu" else 0.0) for b in v}) for k, v in held.items()}
    h.report(t + 500, **let_go)
    out = release_edge(h, t + 600)  # let go: the next edge is a first step again
    assert out.state["estop_latched"] and out.state["release_armed"]
    out = release_edge(h, t + 700)
    assert not out.state["estop_latched"]


@pytest.mark.parametrize(
    "interruption, why",
    [
        (dict(left={"menu": True}), "estop_release_cancelled:left_menu"),
        (dict(ui_estop=True), "estop_release_cancelled:page_stop"),
        (dict(right={"squeeze": 1.0}), "estop_release_cancelled:right_squeeze"),
        (dict(left={"connected": False}), "estop_release_cancelled:left_disconnected"),
        (dict(right={"epoch": 2}), "estop_release_cancelled:right_connected"),
        (dict(focused=False), "estop_release_cancelled:focus_lost"),
    ],
)
def test_an_armed_release_is_cancelled_by_a_stop_input_a_connection_change_or_lost_focus(interruption, why):
    h = latched_harness()
    release_edge(h, 100)
    out = h.report(200, **interruption)
    assert why in events(out) and not out.state["release_armed"] and out.state["estop_latched"]
    # back to normal, the next edge arms again rather than confirming
    h.report(300, left={"menu": False, "connected": True, "squeeze": 0.0}, right={"squeeze": 0.0},
             ui_estop=False, focused=True)
    out = release_edge(h, 400)
    assert out.state["estop_latched"] and out.state["release_armed"]


def test_release_steps_are_refused_while_the_page_is_unfocused():
    h = latched_harness()
    h.report(100, focused=False)
    out = release_edge(h, 200)
    assert "estop_release_refused:unfocused" in events(out) and not out.state["release_armed"]
    h.report(300, focused=True)
    release_edge(h, 400)
    assert not release_edge(h, 500).state["estop_latched"]


def test_release_edges_while_not_latched_do_nothing():
    h = Harness()
    h.report(0)
    out = release_edge(h, 100)
    assert not out.state["release_armed"] and events(out) == []
    h.report(200, ui_estop=True)
    out = h.report(210, ui_estop=False)
    assert out.state["estop_latched"] and not out.state["release_armed"]  # no arming carried over
    assert release_edge(h, 300).state["estop_latched"]


def test_release_window_config():
    h = latched_harness(replace(CONFIG, release_confirm_window_s=0.5))
    release_edge(h, 100)
    assert release_edge(h, 700).state["estop_latched"]  # 600 ms > 0.5 s: armed again, not released
    assert not release_edge(h, 900).state["estop_latched"]


# ---------------------------------------------------------------- pause
@pytest.mark.parametrize("how", ["right_menu", "page_pause"])
def test_pause_resume_reanchors_and_keeps_base_available(how):
    h = Harness()
    h.report(0)

    def toggle(t):
        if how == "right_menu":
            return h.press(t, "right", "menu")
        h.report(t, ui_pause=True)
        return h.report(t + 10, ui_pause=False)

    out = toggle(10)
    assert out.state["arms_paused"] and not out.arm_targets["left"]["enabled"]
    out = moved(h, 30, "left", (0.2, 0, 0))
    out = h.report(40, left={"stick": [0.0, -1.0]})
    assert out.base_cmd["forward_m_s"] == pytest.approx(0.25)  # base still drives
    assert not out.arm_targets["left"]["enabled"]
    h.report(45, left={"stick": [0.0, 0.0]})
    out = toggle(50)
    assert not out.state["arms_paused"] and out.arm_targets["left"]["enabled"]
    # re-anchored at the moved controller: no jump by the 0.2 m moved while paused
    np.testing.assert_allclose(out.arm_targets["left"]["position"], GRIPS["left"].position, atol=1e-12)


# ---------------------------------------------------------------- reset
def chord(h: Harness, t: float, down: bool) -> TeleopOutput:
    both = {"primary": down, "secondary": down}
    return h.report(t, left=dict(both), right=dict(both))


@pytest.mark.parametrize(
    "script, resets",
    [
        ([(0, True), (50, False), (100, True), (150, False)], 1),  # two complete chords
        ([(0, True), (50, False)], 0),  # one chord
        ([(0, True), (50, True), (100, True)], 0),  # held, never released
        ([(0, True), (50, False), (4000, True), (4050, False)], 0),  # second chord outside the window
        ([(0, True), (50, False), (100, True), (150, False), (200, True), (250, False), (300, True), (350, False)], 2),
    ],
)
def test_two_complete_chords_reset_and_leave_arms_paused(script, resets):
    h = Harness()
    h.report(-10)
    out = None
    for t, down in script:
        out = chord(h, t, down)
    assert out.state["reset_count"] == resets
    if resets:
        assert out.state["arms_paused"] and not out.state["estop_latched"]


def test_chord_needs_all_four_released_between():
    h = Harness()
    h.report(-10)
    chord(h, 0, True)
    h.report(50, left={"primary": False})  # partial release
    out = h.report(100, left={"primary": True})
    out = chord(h, 150, False)
    assert out.state["reset_count"] == 0  # only one complete chord so far
    chord(h, 200, True)
    out = chord(h, 250, False)
    assert out.state["reset_count"] == 1


# ------------------------------------------------------------- staleness
@pytest.mark.parametrize(
    "age_ms, left_enabled, forward",
    [(0, True, 0.25), (290, True, 0.25), (310, False, 0.0), (1000, False, 0.0)],
)
def test_stale_pose_holds_only_that_arm_and_zeros_its_stick(age_ms, left_enabled, forward):
    h = Harness()
    h.report(0)
    out = h.report(age_ms, left={"stick": [0.0, -1.0]}, right={"stick": [-1.0, 0.0]}, pose_for=("right",))
    assert out.arm_targets["left"]["enabled"] is left_enabled
    assert out.arm_targets["right"]["enabled"]
    assert out.base_cmd["forward_m_s"] == pytest.approx(forward)
    assert out.base_cmd["yaw_rad_s"] == pytest.approx(0.65)  # the other hand's stick is unaffected


def test_pose_reacquisition_discards_the_old_reference():
    h = Harness()
    h.report(0)
    moved(h, 10, "left", (0.1, 0, 0))
    h.report(400, pose_for=("right",))  # left pose now 390 ms old: held
    h.grips["left"] = Pose.of(GRIPS["left"].position + [0.1, 0, 0], [0, 0, 0, 1])
    out = moved(h, 410, "left", (0.5, 0.0, 0.0))  # the hand reappears far away
    np.testing.assert_allclose(out.arm_targets["left"]["position"], h.grips["left"].position)


def late_stretch(h: Harness, late_ms: int, robot_dp=(0.04, 0.0, 0.0), robot_q=(0.0, 0.0, 0.0, 1.0)) -> tuple[int, list]:
    """The host falls behind: samples keep their headset spacing (10 ms) but
    arrive 400 ms old for ``late_ms`` while the hand moves 10 cm in x, and the
    arm, held meanwhile, has got ``robot_dp`` from its grip; then the backlog
    (the samples of the last 400 ms, still 10 ms apart) arrives at once.
    Returns the arrival time of the backlog and its outputs."""
    for t in range(1000, 1100, 10):
        sampled(h, t, 0, 0)
    t = 1100
    for t in range(1100, 1100 + late_ms, 10):
        h.hands["left"]["position"] = list(np.add(HOME["left"], (0.1 * (t - 1100) / late_ms, 0, 0)))
        out = sampled(h, t, 400, 0)
        assert not out.arm_targets["left"]["enabled"]
    h.grips["left"] = Pose.of(GRIPS["left"].position + robot_dp, robot_q)
    h.hands["left"]["position"] = list(np.add(HOME["left"], (0.1, 0, 0)))
    return t + 10, [sampled(h, t + 10, age, 0) for age in range(390, -10, -10)]


def first_enabled(outs: list[TeleopOutput], hand: str = "left") -> TeleopOutput:
    return next(o for o in outs if o.arm_targets[hand]["enabled"])


@pytest.mark.parametrize("late_ms, kept", [(500, True), (900, True), (1200, False), (2000, False)])
def test_after_a_late_stretch_the_arm_resumes_at_the_robot_pose_and_catches_up_at_the_bounded_speed(late_ms, kept):
    # the arm held 6 cm short of where the kept mapping puts the hand; it is
    # never commanded that jump: it resumes where it is, then the target closes
    # the 6 cm at late_catch_up_speed_m_s (a dropped anchor has nothing to close)
    h = Harness()
    assert CONFIG.late_anchor_keep_s == 1.0
    t, backlog = late_stretch(h, late_ms)
    first = first_enabled(backlog)
    np.testing.assert_allclose(first.arm_targets["left"]["position"], h.grips["left"].position, atol=1e-12)
    assert ("left_anchored" in events(*backlog)) is not kept
    assert ("left_anchor_dropped" in events(*backlog)) is False  # dropped, if at all, while late
    goal = GRIPS["left"].position + [0.1, 0, 0] if kept else h.grips["left"].position
    v = CONFIG.late_catch_up_speed_m_s
    left_m = float(np.linalg.norm(h.grips["left"].position - goal))
    for k in range(1, 60):  # on time again, every 10 ms, the hand still
        p = sampled(h, t + 10 * k, 0, 0).arm_targets["left"]["position"]
        assert np.linalg.norm(p - goal) == pytest.approx(max(0.0, left_m - v * 0.010 * k), abs=1e-12)
    np.testing.assert_allclose(p, goal, atol=1e-12)


def test_a_resumed_arm_catches_up_a_rotation_at_the_bounded_rate():
    robot_q = quat_from_rotvec([0.0, 0.0, 0.3])  # the held arm turned 0.3 rad away from the kept target
    h = Harness()
    t, backlog = late_stretch(h, 500, robot_q=robot_q)
    first = first_enabled(backlog)
    assert quat_angle(first.arm_targets["left"]["orientation"], robot_q) < 1e-9
    w = CONFIG.late_catch_up_rate_rad_s
    for k in range(1, 60):
        q = sampled(h, t + 10 * k, 0, 0).arm_targets["left"]["orientation"]
        assert quat_angle(q, GRIPS["left"].orientation) == pytest.approx(max(0.0, 0.3 - w * 0.010 * k), abs=1e-9)


def test_a_resumed_arm_follows_the_hand_while_it_catches_up():
    # the catch-up comes on top of the hand's own motion: a hand moving 1 cm per
    # report moves the target by that plus at most the catch-up's share
    h = Harness()
    t, backlog = late_stretch(h, 500)
    prev = first_enabled(backlog).arm_targets["left"]["position"]
    v = CONFIG.late_catch_up_speed_m_s
    for k in range(1, 10):
        h.hands["left"]["position"] = list(np.add(HOME["left"], (0.1, 0.01 * k, 0)))
        p = sampled(h, t + 10 * k, 0, 0).arm_targets["left"]["position"]
        assert p[1] - prev[1] == pytest.approx(0.01, abs=1e-12)  # the hand's motion, unscaled
        assert p[0] - prev[0] == pytest.approx(v * 0.010, abs=1e-12)  # the catch-up, toward the kept target
        prev = p


def test_a_clutch_during_the_catch_up_reanchors_where_the_arm_is():
    h = Harness()
    t, backlog = late_stretch(h, 500)
    sampled(h, t + 10, 0, 0)
    h.report(t + 20, left={"secondary": True})
    h.grips["left"] = Pose.of(GRIPS["left"].position + [0.05, 0, 0], [0, 0, 0, 1])
    out = h.report(t + 30, left={"secondary": False})
    np.testing.assert_allclose(out.arm_targets["left"]["position"], h.grips["left"].position, atol=1e-12)
    out = h.report(t + 40)  # anchored afresh: nothing left to catch up
    np.testing.assert_allclose(out.arm_targets["left"]["position"], h.grips["left"].position, atol=1e-12)


@pytest.mark.parametrize("keep_s, dropped_at_first_stale_step", [(0.0, True), (1.0, False)])
def test_late_anchor_keep_zero_switches_keeping_off(keep_s, dropped_at_first_stale_step):
    h = Harness(replace(CONFIG, late_anchor_keep_s=keep_s))
    for t in range(1000, 1100, 10):
        sampled(h, t, 0, 0)
    out = sampled(h, 1100, 400, 0)  # a single late sample
    assert not out.arm_targets["left"]["enabled"]
    assert ("left_anchor_dropped" in events(out)) is dropped_at_first_stale_step


def test_a_gap_in_the_samples_discards_the_anchor_even_within_late_anchor_keep_s():
    # not late but missing: the next sample is 400 ms after the last (tracking lost)
    h = Harness()
    h.report(0)
    h.report(10)
    h.report(410, pose_for=("right",))  # left pose 400 ms old: held
    h.grips["left"] = Pose.of(GRIPS["left"].position + [0.02, 0, 0], [0, 0, 0, 1])
    out = moved(h, 420, "left", (0.3, 0.0, 0.0))  # reappears far away, 410 ms after its last sample
    np.testing.assert_allclose(out.arm_targets["left"]["position"], h.grips["left"].position)


@pytest.mark.parametrize("age_ms, moves", [(400, True), (600, False)])
def test_stale_buttons_zero_base_lift_but_arms_keep_tracking(age_ms, moves):
    h = Harness()
    h.report(0, left={"stick": [0, -1]}, right={"stick": [0, -1], "secondary": True})
    # poses keep coming every 100 ms, button/stick reports stop
    for t in range(100, age_ms, 100):
        h.report(t, input_for=())
    out = h.report(age_ms, left={"position": list(np.add(HOME["left"], (0.05, 0, 0)))}, input_for=())
    assert (out.base_cmd["forward_m_s"] != 0.0) is moves
    assert (out.lift_cmd["velocity_m_s"] != 0.0) is moves
    assert out.arm_targets["left"]["enabled"]
    np.testing.assert_allclose(out.arm_targets["left"]["position"], GRIPS["left"].position + [0.05, 0, 0], atol=1e-12)
    assert out.state["right_clutched"]  # digital level stays latched, no timeout-made release


def sampled(h: Harness, arrive_ms: float, pose_age_ms: float, input_age_ms: float, **hands: dict) -> TeleopOutput:
    """A report arriving at ``arrive_ms`` whose samples were taken the given ages
    earlier (their stamps, mapped to the host clock, as the xr node sends them)."""
    for hand in ("left", "right"):
        h.hands[hand]["pose_stamp_ns"] = int((arrive_ms - pose_age_ms) * MS)
        h.hands[hand]["input_stamp_ns"] = int((arrive_ms - input_age_ms) * MS)
    return h.report(arrive_ms, pose_for=(), input_for=(), **hands)


@pytest.mark.parametrize(
    "link_delay_ms, arms_enabled, base_moves",
    [(0, True, True), (250, True, True), (299, True, True), (301, False, False), (600, False, False),
     (1000, False, False)],
)
def test_staleness_is_judged_by_sample_age_so_link_delay_holds_the_arms(link_delay_ms, arms_enabled, base_moves):
    # every report arrives link_delay_ms after its samples were taken, 10 ms apart: however
    # regular the arrivals, a delay beyond the 300 ms pose rule holds both arms and the base
    h = Harness()
    for t in range(1000, 1500, 10):
        out = sampled(h, t, link_delay_ms, link_delay_ms, left={"stick": [0.0, -1.0]})
    assert out.arm_targets["left"]["enabled"] is arms_enabled and out.arm_targets["right"]["enabled"] is arms_enabled
    assert (out.base_cmd["forward_m_s"] == pytest.approx(0.25)) is base_moves
    assert base_moves or out.base_cmd["forward_m_s"] == 0.0


@pytest.mark.parametrize("input_age_ms, base_moves", [(450, True), (500, True), (510, False)])
def test_input_rule_is_judged_by_sample_age(input_age_ms, base_moves):
    h = Harness()
    out = sampled(h, 1000, 0, input_age_ms, left={"stick": [0.0, -1.0]})
    assert out.arm_targets["left"]["enabled"]  # fresh poses: the arm tracks either way
    assert (out.base_cmd["forward_m_s"] != 0.0) is base_moves


@pytest.mark.parametrize(
    "ahead_ms, fresh",
    [(0, True), (49, True), (50, True), (51, False), (1_000_000, False)],
)
def test_a_stamp_from_the_future_beyond_the_tolerance_is_not_fresh(ahead_ms, fresh):
    h = Harness()
    out = sampled(h, 1000, -ahead_ms, -ahead_ms, left={"stick": [0.0, -1.0]})
    assert out.arm_targets["left"]["enabled"] is fresh
    assert (out.base_cmd["forward_m_s"] == pytest.approx(0.25)) is fresh
    assert ("left_future_stamp" in out.state["events"]) is (not fresh)
    assert h.s.rejected_future_reports == (0 if fresh else 2)  # one per hand whose report is refused


def test_one_report_from_the_future_cannot_keep_the_base_moving_through_silence():
    # the case: one report stamped +1000 s with the stick forward, then 2 s of silence
    h = Harness()
    out = sampled(h, 0, -1_000_000, -1_000_000, left={"stick": [0.0, -1.0]})
    speeds = [out.base_cmd["forward_m_s"]] + [h.step(t).base_cmd["forward_m_s"] for t in range(100, 2100, 100)]
    assert speeds == [0.0] * len(speeds)


@pytest.mark.parametrize("which", ["both", "pose", "input"])
def test_a_report_stamped_beyond_the_tolerance_never_enters_the_state(which):
    # a sound report, then one stamped 10 s ahead (either stamp is enough) with the
    # stick forward, the clutch down, a stick click and the hand moved; then
    # silence until well past the time the stamp names: none of it is ever used
    h = Harness()
    sampled(h, 0, 0, 0)
    ahead = {"both": (-10_000, -10_000), "pose": (-10_000, 0), "input": (0, -10_000)}[which]
    moved_to = list(np.add(HOME["left"], (0.2, 0.0, 0.0)))
    out = sampled(h, 10, *ahead, left={"stick": [0.0, -1.0], "secondary": True, "stick_click": True, "position": moved_to})
    assert h.s.rejected_future_reports == 2
    assert {"left_future_stamp", "right_future_stamp"} <= set(events(out))
    assert not out.state["left_clutched"] and out.state["left_pinch"] == "full"
    np.testing.assert_allclose(out.arm_targets["left"]["position"], GRIPS["left"].position, atol=1e-12)  # not moved
    outs = [h.step(t) for t in range(20, 12_000, 50)]
    assert all(o.base_cmd["forward_m_s"] == 0.0 for o in outs)
    assert all(not o.arm_targets["left"]["enabled"] for o in outs if o.arm_targets["stamp_ns"] > 300 * MS)
    assert h.s.rejected_future_reports == 2


def test_a_future_report_leaves_the_hands_last_sound_sample_in_force():
    h = Harness()
    sampled(h, 0, 0, 0)
    out = sampled(h, 10, -5_000, -5_000, left={"stick": [0.0, -1.0]})
    assert out.arm_targets["left"]["enabled"] and out.base_cmd["forward_m_s"] == 0.0  # the sample of t=0, 10 ms old
    out = sampled(h, 20, 0, 0)
    assert out.arm_targets["left"]["enabled"] and out.base_cmd["forward_m_s"] == pytest.approx(0.25)
    assert h.s.rejected_future_reports == 2


@pytest.mark.parametrize(
    "stop, why",
    [({"left": {"menu": True}}, "estop_latched:left_menu_future_stamp"),
     ({"left": {"squeeze": 1.0}, "right": {"squeeze": 1.0}}, "estop_latched:grip_gesture")],
)
def test_a_stop_input_in_a_refused_report_still_latches_the_stop(stop, why):
    # a stop never waits for a sound stamp: latching it cannot move anything
    h = Harness()
    sampled(h, 0, 0, 0)
    out = sampled(h, 10, -10_000, -10_000, **stop)
    assert out.state["estop_latched"] and why in events(out)
    assert h.s.rejected_future_reports == 2


def test_input_timeout_generates_no_edges():
    h = Harness()
    h.report(0, right={"secondary": True})
    for t in range(100, 2000, 100):
        out = h.report(t, input_for=())
    assert out.state["right_clutched"] and "right_clutch_off" not in events(out)


# ------------------------------------------------------- connections/epochs
@pytest.mark.parametrize(
    "first_report, estop, paused, pinch",
    [
        ({"menu": True}, True, True, "full"),  # stop is actionable from the very first report
        ({"stick_click": True}, False, False, "full"),  # a held click is a baseline, not a click
        ({}, False, False, "full"),
    ],
)
def test_first_report_of_a_connection_is_a_baseline(first_report, estop, paused, pinch):
    h = Harness()
    out = h.report(0, left=dict(first_report))
    assert out.state["estop_latched"] is estop and out.state["arms_paused"] is paused
    assert out.state["left_pinch"] == pinch


def test_right_menu_held_at_connect_does_not_toggle_pause():
    h = Harness()
    out = h.report(0, right={"menu": True})
    assert not out.state["arms_paused"]
    out = h.report(10, right={"menu": False})
    out = h.report(20, right={"menu": True})
    assert out.state["arms_paused"]  # the next real press acts immediately


@pytest.mark.parametrize("hand", ["left", "right"])
def test_epoch_change_reanchors_without_a_jump(hand):
    h = Harness()
    h.report(0)
    moved(h, 10, hand, (0.1, 0, 0))
    h.grips[hand] = Pose.of(GRIPS[hand].position + [0.1, 0, 0], [0, 0, 0, 1])
    out = h.report(20, **{hand: {"epoch": 2, "position": [2.0, 2.0, 2.0], "stick_click": True}})
    np.testing.assert_allclose(out.arm_targets[hand]["position"], h.grips[hand].position)
    assert f"{hand}_epoch_2" in events(out)
    assert out.state[f"{hand}_pinch"] == "full"  # held click in the new connection's first report: baseline
    out = h.report(30, **{hand: {"position": [2.0, 2.1, 2.0]}})
    np.testing.assert_allclose(out.arm_targets[hand]["position"], h.grips[hand].position + [0, 0.1, 0], atol=1e-12)


def test_disconnect_releases_buttons_and_holds_arm():
    h = Harness()
    h.report(0, left={"secondary": True, "primary": True})
    out = h.report(10, left={"connected": False})
    assert not out.state["left_clutched"] and not out.state["left_slow"]
    assert not out.arm_targets["left"]["enabled"] and out.arm_targets["right"]["enabled"]
    assert "left_disconnected" in events(out)


@pytest.mark.parametrize("how", ["disconnect", "epoch"])
def test_a_new_connection_starts_with_pinch_slow_and_clutch_reset(how):
    h = Harness()
    h.report(0)
    h.press(10, "right", "stick_click")
    out = h.report(30, right={"primary": True, "secondary": True, "trigger": 1.0})
    assert (out.state["right_pinch"], out.state["right_slow"], out.state["right_clutched"]) == ("fine", True, True)
    if how == "disconnect":
        out = h.report(40, right={"connected": False})
        assert (out.state["right_pinch"], out.state["right_slow"], out.state["right_clutched"]) == ("full", False, False)
        assert not out.arm_targets["right"]["slow"]
        out = h.report(50, right={"connected": True, "primary": False, "secondary": False})
    else:
        out = h.report(50, right={"epoch": 2, "primary": False, "secondary": False})
    assert (out.state["right_pinch"], out.state["right_slow"], out.state["right_clutched"]) == ("full", False, False)
    assert out.arm_targets["right"]["gripper"] == pytest.approx(CONFIG.pinch_full_rad)  # the trigger, still full
    assert out.state["left_pinch"] == "full"


# ------------------------------------------------------------------ focus
def test_blur_pauses_arms_and_zeros_base_lift():
    h = Harness()
    h.report(0, left={"stick": [0, -1]})
    out = h.report(10, focused=False)
    assert out.state["arms_paused"] and out.base_cmd["forward_m_s"] == 0.0
    out = h.press(20, "right", "menu")
    assert out.state["arms_paused"]  # no resume while hidden
    out = h.report(40, focused=True)
    assert out.state["arms_paused"] and out.base_cmd["forward_m_s"] == pytest.approx(0.25)
    out = h.press(50, "right", "menu")
    assert not out.state["arms_paused"]


def test_start_paused_config():
    h = Harness(replace(CONFIG, start_paused=True))
    out = h.report(0)
    assert out.state["arms_paused"] and not out.arm_targets["left"]["enabled"]


# --------------------------------------------------------------- property
def _random_stream(rng: np.random.Generator, h: Harness, n: int):
    """Yields (output, epoch_changed_hands, grips) for a random report/tick stream."""
    t = 0.0
    for _ in range(n):
        t += float(rng.choice([1, 5, 11, 50, 320, 600]))
        changed = []
        if rng.random() < 0.15:
            yield h.step(t), changed
            continue
        over: dict[str, dict] = {}
        for hand in ("left", "right"):
            o: dict[str, Any] = {}
            for b in ("primary", "secondary", "stick_click", "menu"):
                if rng.random() < 0.15:
                    o[b] = not h.hands[hand][b]
            if rng.random() < 0.05:
                o["epoch"] = h.hands[hand]["epoch"] + 1
                changed.append(hand)
            if rng.random() < 0.03:
                o["connected"] = not h.hands[hand]["connected"]
            o["pose_valid"] = bool(rng.random() > 0.05)
            o["position"] = list(np.asarray(h.hands[hand]["position"]) + rng.normal(0, 0.05, 3))
            o["orientation"] = list(quat_from_rotvec(rng.normal(0, 0.3, 3)))
            o["stick"] = list(rng.uniform(-1.5, 1.5, 2))
            o["trigger"] = float(rng.uniform(0, 1))
            if rng.random() < 0.1:
                o["squeeze"] = float(rng.choice([0.0, 0.5, 0.89, 0.9, 1.0]))
            over[hand] = o
        ui = {k: bool(rng.random() < p) for k, p in (("ui_estop", 0.03), ("ui_release_stop", 0.3), ("ui_pause", 0.04))}
        ui["focused"] = bool(rng.random() > 0.03)
        stale_pose = tuple(x for x in ("left", "right") if rng.random() > 0.1)
        stale_input = tuple(x for x in ("left", "right") if rng.random() > 0.1)
        if rng.random() < 0.2:
            for hand in ("left", "right"):
                h.grips[hand] = Pose.of(GRIPS[hand].position + rng.normal(0, 0.02, 3), [0, 0, 0, 1])
        yield h.report(t, left=over["left"], right=over["right"], pose_for=stale_pose, input_for=stale_input, **ui), changed


@pytest.mark.parametrize("seed", range(8))
def test_property_no_motion_while_estopped_and_no_jump_across_epochs(seed):
    rng = np.random.default_rng(seed)
    h = Harness(validate=seed == 0)  # contract-checking every message of one stream is enough
    latched_grip: dict[str, float] | None = None
    pending = {"left": False, "right": False}
    saw_estop = saw_epoch_reanchor = 0
    for out, changed in _random_stream(rng, h, 400):
        for hand in changed:
            pending[hand] = True
        b, lift = out.base_cmd, out.lift_cmd
        assert np.hypot(b["forward_m_s"], b["left_m_s"]) <= 0.25 + 1e-12
        assert abs(b["yaw_rad_s"]) <= 0.65 + 1e-12 and abs(lift["velocity_m_s"]) <= 0.08 + 1e-12
        if out.state["estop_latched"]:
            saw_estop += 1
            assert (b["forward_m_s"], b["left_m_s"], b["yaw_rad_s"], lift["velocity_m_s"]) == (0.0, 0.0, 0.0, 0.0)
            grip = {hand: out.arm_targets[hand]["gripper"] for hand in ("left", "right")}
            if latched_grip is None:
                latched_grip = grip
            assert grip == latched_grip, "gripper moved while the e-stop was latched"
            for hand in ("left", "right"):
                assert not out.arm_targets[hand]["enabled"]
        else:
            latched_grip = None
        for hand in ("left", "right"):
            enabled = out.arm_targets[hand]["enabled"]
            if pending[hand] and enabled:
                # first tracked target after an epoch change starts exactly at the robot's grip
                np.testing.assert_allclose(out.arm_targets[hand]["position"], h.grips[hand].position, atol=1e-12)
                pending[hand] = False
                saw_epoch_reanchor += 1
    assert saw_estop > 0 and saw_epoch_reanchor > 0  # the stream exercised both invariants


def _stop_held(report: dict[str, Any]) -> bool:
    """The release rule's stop inputs, written from the report alone."""
    left, right = report["left"], report["right"]
    return bool(
        (left["connected"] and left["menu"])
        or report["ui_estop"]
        or any(x["connected"] and x["squeeze"] >= 0.9 for x in (left, right))
    )


def _connection(hand: dict[str, Any]) -> int | None:
    """A hand's connection: its epoch while connected (a disconnected hand's epoch means nothing)."""
    return hand["epoch"] if hand["connected"] else None


@pytest.mark.parametrize("seed", range(8))
def test_property_release_happens_exactly_when_the_two_step_rule_allows(seed):
    """Against the rule stated over the report history: a release edge at report k
    clears a latched stop iff the previous release edge j came at most 5 s earlier,
    the stop stayed latched after j, and at every report j..k no stop input was held,
    the page was focused and neither hand's connection differed from j's."""
    rng = np.random.default_rng(100 + seed)
    h = Harness(validate=False)
    history: list[dict[str, Any]] = []  # per report: t, sent levels, latched after it
    counts = {"released": 0, "refused_or_rearmed": 0}
    t = 0.0
    for _ in range(600):
        t += float(rng.choice([5, 40, 150, 900, 2600]))
        over: dict[str, dict] = {}
        for hand in ("left", "right"):
            o: dict[str, Any] = {}
            if rng.random() < 0.08:
                o["menu"] = not h.hands[hand]["menu"]
            if rng.random() < 0.12:
                o["squeeze"] = float(rng.choice([0.0, 0.3, 0.89, 0.9, 1.0]))
            if rng.random() < 0.02:
                o["epoch"] = h.hands[hand]["epoch"] + 1
            if rng.random() < 0.02:
                o["connected"] = not h.hands[hand]["connected"]
            over[hand] = o
        ui = {"ui_estop": bool(rng.random() < 0.04), "ui_release_stop": bool(rng.random() < 0.4),
              "focused": bool(rng.random() > 0.02)}
        out = h.report(t, left=over["left"], right=over["right"], **ui)
        sent = {"t": t, "left": dict(h.hands["left"]), "right": dict(h.hands["right"]), **h.ui}
        sent["latched"] = out.state["estop_latched"]
        history.append(sent)
        k = len(history) - 1
        if k < 2 or not (sent["ui_release_stop"] and not history[k - 1]["ui_release_stop"]):
            continue
        if not history[k - 1]["latched"]:
            continue  # nothing to release (the same report may latch a stop)
        edges = [j for j in range(1, k) if history[j]["ui_release_stop"] and not history[j - 1]["ui_release_stop"]]
        j = edges[-1] if edges else None
        allowed = j is not None and (
            t - history[j]["t"] <= 5000
            and all(history[i]["latched"] for i in range(j, k))
            and not any(_stop_held(history[i]) for i in range(j, k + 1))
            and all(_connection(history[i][x]) == _connection(history[j][x]) for i in range(j, k + 1) for x in ("left", "right"))
            and all(history[i]["focused"] for i in range(j, k + 1))
        )
        assert sent["latched"] is not allowed, f"report {k} at t={t}: released={not sent['latched']}, rule says {allowed}"
        counts["released" if allowed else "refused_or_rearmed"] += 1
    assert counts["released"] > 5 and counts["refused_or_rearmed"] > 5, counts
