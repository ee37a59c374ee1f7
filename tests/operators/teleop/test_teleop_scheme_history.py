"""The teleop scheme's rules checked over random report histories (hypothesis).

A state machine sends the scheme random histories: reports with fresh, stale
and future stamps, late stretches of contiguous samples with their backlog,
tracking gaps, connects, disconnects and epoch changes, every button (clutch,
slow, pinch, menus, squeezes, the page's stop, release and pause), ticks
without reports, hand motion, and random robot grip poses and lift heights.
After every scheme step it checks the rules against a small model of what the
scheme should have accepted, written from docs/teleop.md:

(a) an arm that becomes enabled, or anchors, is sent the robot's grip pose;
(b) between two enabled steps the target moves no more than the hand did
    (times the scale), plus the catch-up bound for the time between them,
    plus the lift's own motion;
(c) no arm is enabled on a stale pose (nor while clutched, paused, stopped or
    unfocused);
(d) base and lift are zero on stale input, a latched stop or lost focus, and
    within the caps always;
(e) a latched stop clears only on a confirming release edge within the window
    of the arming one;
(f) a hand's latched levels (pinch, slow, clutch) are the ones its current
    connection reported, and reset while it is disconnected; reports stamped
    beyond the future tolerance are counted and change none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from teledora import models
from teledora.models.config_files import load_teleop_config
from teledora.operators.geometry import Pose, quat_angle, quat_from_rotvec, quat_multiply
from teledora.operators.teleop.teleop_scheme import PINCH_ORDER, TeleopScheme

MS = 1_000_000
SIDES = ("left", "right")
BUTTONS = ("primary", "secondary", "stick_click", "menu")
CONFIG = load_teleop_config(profile=models.load_profile())
TOL_NS = round(CONFIG.future_stamp_tolerance_s * 1e9)
POSE_TIMEOUT_NS = round(CONFIG.pose_timeout_s * 1e9)
INPUT_TIMEOUT_NS = round(CONFIG.input_timeout_s * 1e9)
WINDOW_NS = round(CONFIG.release_confirm_window_s * 1e9)
HOME = {"left": np.array([0.3, 0.2, 1.0]), "right": np.array([0.3, -0.2, 1.0])}
GRIP = {"left": np.array([0.35, 0.18, 0.35]), "right": np.array([0.35, -0.19, 0.35])}
EPS = 1e-9
# sample ages in ms; negative: stamped ahead of now (within, then beyond the tolerance)
AGES_MS = [0, 0, 0, 0, 20, 120, 290, 310, 700, -20, -80, -10_000]
STEPS = {"total": 0, "enabled_pairs": 0, "resumptions": 0, "latches": 0, "releases": 0, "disconnects": 0, "future": 0}


@dataclass
class HandModel:
    """What the scheme should hold for one hand, from the reports it accepted."""

    connected: bool = False
    epoch: int | None = None
    baseline: bool = True
    buttons: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(BUTTONS, False))
    pinch: int = 0
    position: np.ndarray | None = None
    orientation: np.ndarray | None = None
    pose_stamp: int | None = None
    input_stamp: int | None = None

    def forget(self) -> None:
        self.baseline, self.buttons, self.pinch = True, dict.fromkeys(BUTTONS, False), 0
        self.position = self.orientation = self.pose_stamp = self.input_stamp = None


def fresh(stamp: int | None, now: int, timeout_ns: int) -> bool:
    return stamp is not None and -TOL_NS <= now - stamp <= timeout_ns


hand_change = st.fixed_dictionaries({
    "toggle": st.lists(st.sampled_from(["primary", "secondary", "stick_click", "stick_click", "menu"]), max_size=2),
    "move": st.tuples(*[st.floats(-0.03, 0.03)] * 3),
    "turn": st.tuples(*[st.floats(-0.2, 0.2)] * 3),
    "stick": st.tuples(*[st.sampled_from([-1.0, -0.5, 0.0, 0.05, 0.5, 1.2])] * 2),
    "trigger": st.sampled_from([0.0, 0.5, 1.0]),
    "squeeze": st.sampled_from([0.0] * 6 + [0.5, 0.9, 1.0]),
    "pose_valid": st.sampled_from([True] * 9 + [False]),
    "pose_age": st.sampled_from(AGES_MS),
    "input_age": st.sampled_from(AGES_MS),
})


class SchemeHistory(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.s = TeleopScheme(CONFIG)
        self.t = 10**12
        self.seq = 0
        self.sent = {h: dict(connected=True, epoch=1, position=HOME[h].copy(), orientation=np.array([0.0, 0.0, 0.0, 1.0]),
                             trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], **dict.fromkeys(BUTTONS, False)) for h in SIDES}
        self.model = {h: HandModel() for h in SIDES}
        self.ui = dict(focused=True, ui_estop=False, ui_release_stop=False, ui_pause=False, ui_episode_start=False,
                       ui_episode_keep=False, ui_episode_discard=False)
        self.grips: dict[str, Pose | None] = {h: Pose.of(GRIP[h], [0.0, 0.0, 0.0, 1.0]) for h in SIDES}
        self.lift = 0.0
        self.prev: dict[str, Any] | None = None
        self.release_edges: list[int] = []  # times of release edges, newest last
        self.rejected = 0

    # ------------------------------------------------------------ sending
    def _report(self, dt_ms: float, ages: dict[str, tuple[float, float]] | None = None,
                valid: dict[str, bool] | None = None, **ui: bool) -> None:
        """One report ``dt_ms`` after the last event; ``ages`` (pose, input) in ms per hand, fresh by default."""
        self.t += int(dt_ms * MS)
        now = self.t
        ages = ages or {}
        msg_hands = {}
        for h in SIDES:
            pose_age, input_age = ages.get(h, (0, 0))
            rep = dict(self.sent[h])
            rep.update(pose_valid=(valid or {}).get(h, True), position=list(rep["position"]),
                       orientation=list(rep["orientation"]), stick=list(rep["stick"]),
                       pose_stamp_ns=now - int(pose_age * MS), input_stamp_ns=now - int(input_age * MS))
            msg_hands[h] = rep
        old_release = self.ui["ui_release_stop"]
        self.ui.update(ui)
        self.seq += 1
        msg = dict(stamp_ns=now, frame_id="operator", seq=self.seq, source="history", **msg_hands, **self.ui)
        for h in SIDES:
            self._model_hand(h, msg_hands[h], now)
        latched_before = self.s.estop_latched
        self.s.on_controllers(msg, now)
        release_edge = self.ui["ui_release_stop"] and not old_release
        self._step(report=True, release_edge=release_edge, latched_before=latched_before)
        if release_edge and latched_before:
            self.release_edges.append(now)

    def _model_hand(self, h: str, rep: dict[str, Any], now: int) -> None:
        m = self.model[h]
        if not rep["connected"]:
            if m.connected:
                STEPS["disconnects"] += 1
            m.forget()
            m.connected = False
            return
        if rep["input_stamp_ns"] > now + TOL_NS or (rep["pose_valid"] and rep["pose_stamp_ns"] > now + TOL_NS):
            self.rejected += 1
            STEPS["future"] += 1
            return
        if not m.connected or rep["epoch"] != m.epoch:
            m.forget()
            m.connected, m.epoch = True, rep["epoch"]
        if rep["pose_valid"]:
            m.position, m.orientation = np.array(rep["position"]), np.array(rep["orientation"])
            m.pose_stamp = rep["pose_stamp_ns"]
        m.input_stamp = rep["input_stamp_ns"]
        new = {b: bool(rep[b]) for b in BUTTONS}
        if not m.baseline and new["stick_click"] and not m.buttons["stick_click"]:
            m.pinch = (m.pinch + 1) % len(PINCH_ORDER)
        m.baseline, m.buttons = False, new

    def _step(self, report: bool = False, release_edge: bool = False, latched_before: bool = False) -> None:
        out = self.s.step(self.t, self.grips, self.lift)
        self._check(out, report, release_edge, latched_before)

    # ------------------------------------------------------------ checking
    def _check(self, out, report: bool, release_edge: bool, latched_before: bool) -> None:
        STEPS["total"] += 1
        now, state, prev = self.t, out.state, self.prev
        lift_offset = np.array([0.0, 0.0, self.lift])
        latched, focused = state["estop_latched"], self.ui["focused"]
        record: dict[str, Any] = {"t": now, "lift": self.lift, "latched": latched}
        for h in SIDES:
            arm, m = out.arm_targets[h], self.model[h]
            p, q = np.asarray(arm["position"]), np.asarray(arm["orientation"])
            enabled = arm["enabled"]
            # (f) latched levels: those the current connection reported; reset while disconnected
            if m.connected:
                assert state[f"{h}_pinch"] == PINCH_ORDER[m.pinch]
                assert state[f"{h}_slow"] is m.buttons["primary"] and state[f"{h}_clutched"] is m.buttons["secondary"]
            else:
                assert (state[f"{h}_pinch"], state[f"{h}_slow"], state[f"{h}_clutched"]) == ("full", False, False)
            # (c) never enabled on a stale pose, nor clutched, paused, stopped or unfocused
            if enabled:
                assert m.connected and fresh(m.pose_stamp, now, POSE_TIMEOUT_NS), f"{h} enabled on a stale pose"
                assert not latched and not state["arms_paused"] and focused and not state[f"{h}_clutched"]
            was = prev is not None and prev[h]["enabled"]
            anchored = f"{h}_anchored" in state["events"]
            if enabled and (not was or anchored):
                # (a) (re)enabled or anchored: the robot's grip pose, as published (plus the lift)
                robot = self.grips[h]
                assert robot is not None
                np.testing.assert_allclose(p, robot.position + lift_offset, rtol=0, atol=EPS)
                assert quat_angle(q, robot.orientation) < EPS
                STEPS["resumptions"] += not anchored
            elif enabled:
                # (b) no more than the hand's motion times the scale, the catch-up bound, the lift's motion
                STEPS["enabled_pairs"] += 1
                dt_s = (now - prev["t"]) * 1e-9
                scale = CONFIG.slow_factor if prev[h]["slow"] else 1.0
                hand_m = float(np.linalg.norm(m.position - prev[h]["hand_p"]))
                bound = scale * hand_m + CONFIG.late_catch_up_speed_m_s * dt_s + abs(self.lift - prev["lift"]) + EPS
                assert np.linalg.norm(p - prev[h]["p"]) <= bound, f"{h} target jumped"
                if not prev[h]["slow"]:
                    turn = quat_angle(m.orientation, prev[h]["hand_q"])
                    assert quat_angle(q, prev[h]["q"]) <= turn + CONFIG.late_catch_up_rate_rad_s * dt_s + EPS
            record[h] = {"enabled": enabled, "p": p, "q": q, "slow": state[f"{h}_slow"],
                         "hand_p": m.position, "hand_q": m.orientation}
        # (d) base and lift: zero on stale input (either stamp), a stop or lost focus; capped always
        base, lift = out.base_cmd, out.lift_cmd
        assert np.hypot(base["forward_m_s"], base["left_m_s"]) <= CONFIG.max_speed_m_s + EPS
        assert abs(base["yaw_rad_s"]) <= CONFIG.max_yaw_rate_rad_s + EPS
        assert abs(lift["velocity_m_s"]) <= CONFIG.max_lift_speed_m_s + EPS

        def live(h: str) -> bool:
            m = self.model[h]
            return m.connected and fresh(m.input_stamp, now, INPUT_TIMEOUT_NS) and fresh(m.pose_stamp, now, POSE_TIMEOUT_NS)

        if latched or not focused or not live("left"):
            assert base["forward_m_s"] == 0.0 and base["left_m_s"] == 0.0
        if latched or not focused or not live("right"):
            assert base["yaw_rad_s"] == 0.0 and lift["velocity_m_s"] == 0.0
        # (e) a latched stop clears only on a confirming release edge within the window
        STEPS["latches"] += latched and (prev is None or not prev["latched"])
        if latched_before and not latched:
            STEPS["releases"] += 1
            assert report and release_edge and self.release_edges
            assert now - self.release_edges[-1] <= WINDOW_NS
        assert self.s.rejected_future_reports == self.rejected
        self.prev = record

    # --------------------------------------------------------------- rules
    def _apply(self, h: str, c: dict[str, Any]) -> None:
        sent = self.sent[h]
        for b in c["toggle"]:
            if b == "menu" and h == "left" and sent["menu"] is False and len(c["toggle"]) < 2:
                continue  # the left menu latches the stop: pressed only with another toggle
            sent[b] = not sent[b]
        sent["position"] = sent["position"] + np.array(c["move"])
        sent["orientation"] = quat_multiply(quat_from_rotvec(c["turn"]), sent["orientation"])
        sent.update(stick=list(c["stick"]), trigger=c["trigger"], squeeze=c["squeeze"])

    @rule(dt_ms=st.sampled_from([1, 5, 10, 11, 50, 120, 320, 600]), left=hand_change, right=hand_change,
          focused=st.sampled_from([True] * 15 + [False]))
    def report(self, dt_ms, left, right, focused):
        self._apply("left", left)
        self._apply("right", right)
        ages = {h: (c["pose_age"], c["input_age"]) for h, c in (("left", left), ("right", right))}
        self._report(dt_ms, ages, {"left": left["pose_valid"], "right": right["pose_valid"]}, focused=focused)

    @rule(dt_ms=st.sampled_from([10, 60, 310, 700]))
    def tick(self, dt_ms):
        self.t += dt_ms * MS
        self._step()

    @rule(n=st.integers(1, 4), moves=st.lists(st.tuples(*[st.floats(-0.01, 0.01)] * 3), min_size=1, max_size=4))
    def on_time(self, n, moves):
        """Calm, fresh reports every 10 ms, the hands moving: the arms track."""
        for k in range(n):
            for h in SIDES:
                self.sent[h]["position"] = self.sent[h]["position"] + np.array(moves[k % len(moves)])
                self.sent[h].update(squeeze=0.0, menu=False)
            self._report(10)

    @rule(what=st.sampled_from(["ui_release_stop", "ui_release_stop", "ui_pause", "ui_estop"]), focus=st.booleans())
    def page_button(self, what, focus):
        """A page button pressed and let go, with the hands calm (so a release may pass)."""
        for h in SIDES:
            self.sent[h].update(squeeze=0.0, menu=False)
        self._report(20, **{what: True}, focused=focus or self.ui["focused"])
        self._report(20, **{what: False})

    @rule(how=st.sampled_from(["page", "menu", "gesture"]))
    def stop(self, how):
        """A stop input pressed and let go."""
        down, up = {"page": ({"ui_estop": True}, {"ui_estop": False}),
                    "menu": ({"left": {"menu": True}}, {"left": {"menu": False}}),
                    "gesture": ({"left": {"squeeze": 1.0}, "right": {"squeeze": 1.0}},
                                {"left": {"squeeze": 0.0}, "right": {"squeeze": 0.0}})}[how]
        for levels in (down, up):
            for h in SIDES:
                self.sent[h].update(levels.get(h, {}))
            self._report(20, **{k: v for k, v in levels.items() if k not in SIDES})

    @rule(gap_ms=st.sampled_from([100, 3000, 6000]))
    def release(self, gap_ms):
        """The two release steps, ``gap_ms`` apart, hands calm and the page focused, then a resume."""
        for h in SIDES:
            self.sent[h].update(squeeze=0.0, menu=False)
        self._report(20, ui_estop=False, focused=True)
        for dt in (20, gap_ms):
            self._report(dt, ui_release_stop=True)
            self._report(20, ui_release_stop=False)
        if self.s.arms_paused:  # and the resume, as an operator would
            self._report(20, ui_pause=True)
            self._report(20, ui_pause=False)

    @rule(hand=st.sampled_from(SIDES), new_epoch=st.booleans(), away_ms=st.sampled_from([5, 100, 400]))
    def reconnect(self, hand, new_epoch, away_ms):
        self.sent[hand]["connected"] = False
        self._report(10)
        self.sent[hand].update(connected=True, epoch=self.sent[hand]["epoch"] + int(new_epoch))
        self.sent[hand]["position"] = self.sent[hand]["position"] + np.array([0.2, -0.1, 0.05])
        self._report(away_ms)

    @rule(hand=st.sampled_from(SIDES))
    def epoch_change(self, hand):
        self.sent[hand]["epoch"] += 1
        self.sent[hand]["position"] = self.sent[hand]["position"] + np.array([-0.3, 0.2, 0.1])
        self._report(10)

    @rule(hands=st.sampled_from([("left",), ("right",), SIDES]), n=st.sampled_from([3, 20, 60, 110]),
          age_ms=st.sampled_from([310, 420, 650]), step=st.tuples(*[st.floats(-0.004, 0.004)] * 3),
          turn=st.tuples(*[st.floats(-0.02, 0.02)] * 3))
    def late_stretch(self, hands, n, age_ms, step, turn):
        """Contiguous samples 10 ms apart arriving ``age_ms`` old, the hand moving, then the backlog at once."""
        for _ in range(n):
            for h in hands:
                self.sent[h]["position"] = self.sent[h]["position"] + np.array(step)
                self.sent[h]["orientation"] = quat_multiply(quat_from_rotvec(turn), self.sent[h]["orientation"])
            self._report(10, {h: (age_ms, age_ms) for h in hands})
        for age in range(age_ms - 10, -10, -10):
            self._report(0, {h: (age, age) for h in hands})

    @rule(hand=st.sampled_from(SIDES), gap_ms=st.sampled_from([320, 800]), jump=st.tuples(*[st.floats(-0.3, 0.3)] * 3))
    def gap(self, hand, gap_ms, jump):
        """Tracking lost: no valid pose for ``gap_ms``, then one far away."""
        for _ in range(gap_ms // 50):
            self._report(50, valid={hand: False})
        self.sent[hand]["position"] = self.sent[hand]["position"] + np.array(jump)
        self._report(10)

    @rule(hand=st.sampled_from(SIDES), ahead_ms=st.sampled_from([80, 10_000]), change=hand_change,
          which=st.sampled_from(["both", "pose", "input"]))
    def future_report(self, hand, ahead_ms, change, which):
        """A report whose stamps for ``hand`` lie beyond the tolerance ahead, then silence past them."""
        saved = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.sent[hand].items()}
        self._apply(hand, change)
        pose_age, input_age = (-ahead_ms if which != "input" else 0), (-ahead_ms if which != "pose" else 0)
        self._report(10, {hand: (pose_age, input_age)})
        self.sent[hand] = saved  # the hand's own next reports know nothing of it
        for _ in range(3):
            self.t += (ahead_ms // 3 + 10) * MS
            self._step()

    @rule(offsets=st.tuples(*[st.floats(-0.05, 0.05)] * 3), turn=st.tuples(*[st.floats(-0.5, 0.5)] * 3),
          lift=st.floats(0.0, 0.6), unknown=st.sampled_from([None] * 9 + ["left", "right"]))
    def robot_moves(self, offsets, turn, lift, unknown):
        for h in SIDES:
            self.grips[h] = None if h == unknown else Pose.of(GRIP[h] + np.array(offsets), quat_from_rotvec(turn))
        self.lift = lift
        self._step()


def test_the_schemes_rules_hold_over_random_histories():
    STEPS.update(dict.fromkeys(STEPS, 0))
    run_state_machine_as_test(SchemeHistory, settings=settings(
        max_examples=100, stateful_step_count=30, deadline=None, derandomize=True, database=None,
        suppress_health_check=list(HealthCheck)))
    print(f"scheme history: {STEPS}")
    assert STEPS["total"] >= 12_000
    # the histories exercised every rule
    assert min(v for k, v in STEPS.items()) > 20, STEPS
