"""The XR teleoperation control scheme as a pure state machine (time is injected).

Controls (sticks arrive as xr-standard axes: x right positive, y pushed forward negative):

* left stick drives forward/back and strafes; right stick turns (left = CCW) and
  moves the lift (forward = up), up to the robot profile's speed caps.
* trigger closes that gripper; stick click cycles the pinch range full → fine → half.
* hold Y/B (secondary) clutches that arm; both edges re-anchor.
* hold X/A (primary) scales that hand's arm motion and its stick by ``slow_factor``.
* the e-stop latches from any stop input: the left menu (where a runtime exposes
  it), the page's or the scene's E-STOP, or the grip gesture (both squeezes held
  at or past ``estop_squeeze_threshold`` at once; the squeeze does nothing else).
  Only the release clears it, and the release takes two steps: a first release
  edge arms it, a second one within ``release_confirm_window_s`` confirms it. Either
  step is refused while any stop input is still held (left menu, page stop, or
  either squeeze past the threshold), and the arming is cancelled by a stop input,
  a connection change or lost focus. A release leaves the arms paused. Right menu /
  page pause toggles arm pause; resuming re-anchors both arms.
* two complete X+Y+A+B chords (all four down, then all up, twice) request a robot
  reset and leave the arms paused.
* enabled arms follow without any button held. A pose older than
  ``pose_timeout_s`` holds that arm and zeros its stick; button/stick reports older
  than ``input_timeout_s`` zero base/lift but keep arm tracking. Ages are sample
  ages: the stamps are when the headset sampled, mapped to the host clock by the
  xr node, so link delay counts. A connected hand's report with a pose or input
  stamp later than now by more than ``future_stamp_tolerance_s`` is refused
  whole (counted in ``rejected_future_reports``; a skewed clock cannot keep a
  sample alive, nor make one fresh later): the hand keeps its last sound
  sample, which ages as usual. A left menu or grip gesture in it still latches
  the stop. Digital levels stay
  latched until a real report changes them or the hand disconnects (the pinch
  range, slow and clutch included); edges come only
  from reports. A new connection (epoch) starts with a baseline report that makes no
  edges, except that a menu button already down latches the e-stop. An epoch change
  or pose loss discards that hand's anchor, so poses never jump across them.
* anchoring never moves an arm: a (re)enabled arm's first target is the robot's
  grip pose. Late is not lost: while a hand's samples stay contiguous (no gap
  over ``pose_timeout_s`` between consecutive sample stamps) but arrive stale,
  the arm holds and its anchor is kept for ``late_anchor_keep_s`` (0: not
  kept). Fresh again, the arm resumes at its grip pose and its target closes
  the difference to where the kept mapping puts the hand at most at
  ``late_catch_up_speed_m_s`` and ``late_catch_up_rate_rad_s``, on top of the
  hand's own motion.
* losing page focus pauses the arms and zeros base/lift while unfocused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import Pose, PoseError
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.teleop.anchored_mapping import AnchoredMapping, CatchUp
from teledora.operators.teleop.estop_latch import EStopLatch
from teledora.operators.teleop.teleop_node_config import EpisodesNodeConfig, TeleopNodeConfig

PINCH_ORDER = ("full", "fine", "half")
_BUTTONS = ("primary", "secondary", "stick_click", "menu")


class TeleopConfigError(ConfigError):
    """A teleop configuration value is missing, unknown or out of range."""


@dataclass(frozen=True)
class TeleopConfig:
    """Tunables of the control scheme (units in the names): teleop.yaml, with the
    three speed caps and the base frame (the arm targets' frame) taken from the
    robot profile."""

    base_frame: str
    max_speed_m_s: float
    max_yaw_rate_rad_s: float
    max_lift_speed_m_s: float
    slow_factor: float
    pose_timeout_s: float
    late_anchor_keep_s: float
    late_catch_up_speed_m_s: float
    late_catch_up_rate_rad_s: float
    input_timeout_s: float
    future_stamp_tolerance_s: float
    stick_deadzone: float
    chord_window_s: float
    pinch_full_rad: float
    pinch_fine_rad: float
    pinch_half_rad: float
    estop_squeeze_threshold: float
    release_confirm_window_s: float
    start_paused: bool
    node: TeleopNodeConfig  # the teleop node's batching and republishing
    episodes: EpisodesNodeConfig  # the episodes node

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("node", "episodes"):
                continue  # checked by their own classes
            if f.name == "start_paused":
                if not isinstance(v, bool):
                    raise TeleopConfigError("start_paused must be true or false")
                continue
            if f.name == "base_frame":
                if not isinstance(v, str) or not v:
                    raise TeleopConfigError(f"base_frame must be a frame name, got {v!r}")
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
                raise TeleopConfigError(f"{f.name} must be a finite number >= 0, got {v!r}")
        if not 0.0 < self.slow_factor <= 1.0:
            raise TeleopConfigError(f"slow_factor must be in (0, 1], got {self.slow_factor}")
        if not 0.0 <= self.stick_deadzone < 1.0:
            raise TeleopConfigError(f"stick_deadzone must be in [0, 1), got {self.stick_deadzone}")
        if not 0.0 < self.estop_squeeze_threshold <= 1.0:
            raise TeleopConfigError(f"estop_squeeze_threshold must be in (0, 1], got {self.estop_squeeze_threshold}")
        if self.release_confirm_window_s <= 0.0:
            raise TeleopConfigError(f"release_confirm_window_s must be > 0, got {self.release_confirm_window_s}")
        for name in ("late_catch_up_speed_m_s", "late_catch_up_rate_rad_s"):
            if getattr(self, name) <= 0.0:  # zero would never close the gap: late_anchor_keep_s 0 is the off switch
                raise TeleopConfigError(f"{name} must be > 0, got {getattr(self, name)}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], profile: RobotProfile) -> "TeleopConfig":
        """Builds a config from teleop.yaml's mapping and the robot profile's caps
        and base frame; unknown keys, and profile values set in teleop.yaml, are an error."""
        from_profile = {**profile_caps(profile), "base_frame": profile.base_frame}
        in_both = sorted(set(values) & set(from_profile))
        if in_both:
            raise TeleopConfigError(f"{in_both}: speed caps and the base frame are set in the robot profile, not here")
        return config_from_mapping(cls, {**values, **from_profile}, error=TeleopConfigError)

    def pinch_rad(self, name: str) -> float:
        return {"full": self.pinch_full_rad, "fine": self.pinch_fine_rad, "half": self.pinch_half_rad}[name]


def profile_caps(profile: RobotProfile) -> dict[str, float]:
    """The scheme's speed caps, from the robot profile."""
    return {"max_speed_m_s": profile.base.max_linear_m_s, "max_yaw_rate_rad_s": profile.base.max_yaw_rad_s,
            "max_lift_speed_m_s": profile.lift.max_speed_m_s}


@dataclass
class _Hand:
    """What the scheme remembers about one hand."""

    epoch: int | None = None
    connected: bool = False
    baseline_pending: bool = True
    buttons: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(_BUTTONS, False))
    stick: tuple[float, float] = (0.0, 0.0)  # (right, forward)
    trigger: float = 0.0
    squeeze: float = 0.0
    input_stamp_ns: int | None = None
    pose: Pose | None = None
    pose_stamp_ns: int | None = None
    pinch: int = 0
    mapping: AnchoredMapping | None = None
    hold: Pose | None = None  # last target sent: the tracked target or the held grip pose
    late_since_ns: int | None = None  # when the pose went stale with the anchor kept
    catch_up: CatchUp | None = None  # resumed with a kept anchor: what is left to close
    gripper_rad: float = 0.0
    tracking: bool = False

    def forget_connection(self) -> None:
        """A connection ended or a new one began: every latched level and the anchor go."""
        self.baseline_pending = True
        self.pinch = 0
        self.buttons = dict.fromkeys(_BUTTONS, False)
        self.stick = (0.0, 0.0)
        self.trigger = 0.0
        self.squeeze = 0.0
        self.input_stamp_ns = None
        self.pose = None
        self.pose_stamp_ns = None
        self.mapping = None
        self.catch_up = None
        self.late_since_ns = None


class _ResetChord:
    """Counts complete X+Y+A+B chords (all down, then all up); two in a window = reset."""

    def __init__(self, window_ns: int) -> None:
        self._window_ns = window_ns
        self._blocked = True  # wait for all four up before a chord can start
        self._held = False
        self._completed_at: int | None = None

    def block(self) -> None:
        self._blocked, self._held, self._completed_at = True, False, None

    def update(self, down: list[bool], now_ns: int) -> bool:
        """Feeds the four chord buttons from a real report; True when a reset fires."""
        if self._completed_at is not None and now_ns - self._completed_at > self._window_ns:
            self._completed_at = None
        if self._blocked:
            self._blocked = any(down)
            return False
        if not self._held:
            if all(down):
                self._held = True
            return False
        if any(down):
            return False
        self._held = False
        if self._completed_at is None:
            self._completed_at = now_ns
            return False
        self._completed_at = None
        return True


@dataclass(frozen=True)
class TeleopOutput:
    """One step's messages, ready for ``messages.encode``."""

    arm_targets: dict[str, Any]
    base_cmd: dict[str, Any]
    lift_cmd: dict[str, Any]
    state: dict[str, Any]


def _clamp(v: float, lo: float, hi: float) -> float:
    """``float(np.clip(v, lo, hi))`` for one number, bit for bit (signed zeros
    and NaN included), without numpy's per-call overhead (~5 us, four calls a
    report)."""
    return float(min(max(v, lo), hi))


def _deadzone(v: float, dz: float) -> float:
    if abs(v) <= dz:
        return 0.0
    return float(np.sign(v) * (abs(v) - dz) / (1.0 - dz))


class TeleopScheme:
    """The control scheme; feed it controller reports and ticks, read its commands."""

    def __init__(self, config: TeleopConfig) -> None:
        self.config = config
        self._hands = {h: _Hand() for h in SIDES}
        self.arms_paused = self.config.start_paused
        self.reset_count = 0
        self.rejected_future_reports = 0  # hand reports refused for a stamp beyond the future tolerance
        self._clutched = dict.fromkeys(SIDES, False)
        self._arms_yielded = False  # another driver (a policy) has the arms
        self._slow = dict.fromkeys(SIDES, False)
        self._focused = True
        self._ui = {"ui_estop": False, "ui_release_stop": False, "ui_pause": False}
        self._ui_baseline = True
        self._chord = _ResetChord(int(self.config.chord_window_s * 1e9))
        self._events: list[str] = []
        self._stop = EStopLatch(self.config.release_confirm_window_s, self._event)

    @property
    def estop_latched(self) -> bool:
        """The e-stop is latched: no motion at all until a two-step release."""
        return self._stop.latched

    @property
    def release_armed(self) -> bool:
        """The first release step was taken and awaits its confirmation."""
        return self._stop.armed

    # ---------------------------------------------------------------- inputs
    def on_controllers(self, msg: Mapping[str, Any], now_ns: int) -> None:
        """Applies one decoded ``XrControllers`` report received at ``now_ns``."""
        self._stop.expire(now_ns)
        for hand in SIDES:
            if not self._from_the_future(hand, msg[hand], now_ns):
                self._on_hand(hand, msg[hand])
        if self.stop_gesture_held() or self._gesture_in(msg):
            self._estop("grip_gesture")
        focused = bool(msg["focused"])
        if self._focused and not focused:
            self._pause("focus_lost")
            self._stop.cancel("focus_lost")
        self._focused = focused
        self._on_ui(msg, now_ns)
        held = self.stop_inputs_held()
        if held:
            self._stop.cancel("+".join(held))
        h = self._hands
        if h["left"].connected and h["right"].connected and not (h["left"].baseline_pending or h["right"].baseline_pending):
            down = [h[x].buttons[b] for x in SIDES for b in ("primary", "secondary")]
            if self._chord.update(down, now_ns):
                self._reset_robot()

    def _on_hand(self, hand: str, rep: Mapping[str, Any]) -> None:
        st = self._hands[hand]
        connected = bool(rep["connected"])
        if not connected:
            if st.connected:
                self._event(f"{hand}_disconnected")
                self._stop.cancel(f"{hand}_disconnected")
                st.forget_connection()
                self._clutched[hand] = self._slow[hand] = False
                self._chord.block()
            st.connected = False
            return
        epoch = int(rep["epoch"])
        if not st.connected or epoch != st.epoch:
            if st.epoch is not None and epoch != st.epoch:
                self._event(f"{hand}_epoch_{epoch}")
            self._stop.cancel(f"{hand}_connected")
            st.forget_connection()
            st.epoch, st.connected = epoch, True
            self._clutched[hand] = self._slow[hand] = False
            self._chord.block()
        # pose: a new valid sample; reacquisition after loss starts from no mapping
        if rep["pose_valid"]:
            try:
                pose, stamp = Pose.of(rep["position"], rep["orientation"]), int(rep["pose_stamp_ns"])
            except PoseError:
                pose, stamp = None, None
            if pose is not None:
                if st.pose_stamp_ns is not None and stamp - st.pose_stamp_ns > self.config.pose_timeout_s * 1e9:
                    st.mapping = None  # reacquired after a gap: the old reference is void
                st.pose, st.pose_stamp_ns = pose, stamp
        st.stick = (float(rep["stick"][0]), -float(rep["stick"][1]))  # kept as (right, forward)
        st.trigger = _clamp(rep["trigger"], 0.0, 1.0)
        st.squeeze = _clamp(rep["squeeze"], 0.0, 1.0)
        st.input_stamp_ns = int(rep["input_stamp_ns"])
        new = {b: bool(rep[b]) for b in _BUTTONS}
        old, st.buttons = st.buttons, new
        if st.baseline_pending:
            st.baseline_pending = False
            self._apply_levels(hand)
            if hand == "left" and new["menu"]:
                self._estop("left_menu_at_connect")
            return
        rising = {b: new[b] and not old[b] for b in _BUTTONS}
        if rising["stick_click"]:
            st.pinch = (st.pinch + 1) % len(PINCH_ORDER)
            self._event(f"{hand}_pinch_{PINCH_ORDER[st.pinch]}")
        if rising["menu"]:
            if hand == "left":
                self._estop("left_menu")
            else:
                self._toggle_pause("right_menu")
        self._apply_levels(hand)

    def _from_the_future(self, hand: str, rep: Mapping[str, Any], now_ns: int) -> bool:
        """True (counted, with an event) for a connected hand's report whose pose
        or input stamp lies beyond the future tolerance: none of it is stored, as
        a stored future stamp would turn fresh, and drive, once the clock caught
        up with it. A left menu down in it still latches the stop (latching
        cannot move anything, and a stop is never delayed)."""
        if not rep["connected"]:
            return False
        latest = now_ns + self.config.future_stamp_tolerance_s * 1e9
        if not (int(rep["input_stamp_ns"]) > latest or (rep["pose_valid"] and int(rep["pose_stamp_ns"]) > latest)):
            return False
        self.rejected_future_reports += 1
        self._event(f"{hand}_future_stamp")
        if hand == "left" and rep["menu"]:
            self._estop("left_menu_future_stamp")
        return True

    def _gesture_in(self, msg: Mapping[str, Any]) -> bool:
        """The grip gesture in this report's own levels, refused hand reports included."""
        return all(msg[h]["connected"] and _clamp(msg[h]["squeeze"], 0.0, 1.0) >= self.config.estop_squeeze_threshold
                   for h in SIDES)

    def _apply_levels(self, hand: str) -> None:
        """Clutch and slow follow the held levels; clutch edges re-anchor, slow edges rescale."""
        st = self._hands[hand]
        clutch = st.buttons["secondary"]
        if clutch != self._clutched[hand]:
            self._clutched[hand] = clutch
            st.mapping = None
            self._event(f"{hand}_clutch_{'on' if clutch else 'off'}")
        slow = st.buttons["primary"]
        if slow != self._slow[hand]:
            self._slow[hand] = slow
            scale = self.config.slow_factor if slow else 1.0
            if st.mapping is not None and st.pose is not None:
                st.mapping = st.mapping.rescaled(st.pose, scale)
            self._event(f"{hand}_slow_{'on' if slow else 'off'}")

    def stop_gesture_held(self) -> bool:
        """Both hands connected with their squeeze at or past the threshold."""
        return all(self._squeezed(hand) for hand in SIDES)

    def _squeezed(self, hand: str) -> bool:
        st = self._hands[hand]
        return st.connected and st.squeeze >= self.config.estop_squeeze_threshold

    def stop_inputs_held(self) -> list[str]:
        """The stop inputs whose last reported level is held, by name.

        A level stays held until a real report changes it or its hand
        disconnects; each squeeze counts on its own, so a hand still clenched
        after a grip-gesture stop keeps the release refused."""
        held = []
        if self._hands["left"].connected and self._hands["left"].buttons["menu"]:
            held.append("left_menu")
        if self._ui["ui_estop"]:
            held.append("page_stop")
        held += [f"{hand}_squeeze" for hand in SIDES if self._squeezed(hand)]
        return held

    def _on_ui(self, msg: Mapping[str, Any], now_ns: int) -> None:
        new = {k: bool(msg[k]) for k in self._ui}
        old, self._ui = self._ui, new
        if self._ui_baseline:
            self._ui_baseline = False
            if new["ui_estop"]:
                self._estop("page_stop_at_connect")
            return
        if new["ui_estop"] and not old["ui_estop"]:
            self._estop("page_stop")
        if new["ui_release_stop"] and not old["ui_release_stop"]:
            refuse = self.stop_inputs_held() + ([] if self._focused else ["unfocused"])
            if self._stop.release_step(now_ns, refuse):
                self._pause("estop_released")
        if new["ui_pause"] and not old["ui_pause"]:
            self._toggle_pause("page_pause")

    # ------------------------------------------------------------- actions
    def _event(self, name: str) -> None:
        self._events.append(name)

    def _estop(self, why: str) -> None:
        self._stop.latch(why)
        self._pause(why)

    def _pause(self, why: str) -> None:
        if not self.arms_paused:
            self.arms_paused = True
            self._event(f"arms_paused:{why}")
        for st in self._hands.values():
            st.mapping = None

    def _toggle_pause(self, why: str) -> None:
        if not self.arms_paused:
            self._pause(why)
        elif self.estop_latched:
            self._event(f"resume_refused_estop:{why}")
        elif not self._focused:
            self._event(f"resume_refused_unfocused:{why}")
        else:
            self.arms_paused = False
            for st in self._hands.values():
                st.mapping = None  # re-anchor to current robot hands and controllers
            self._event(f"arms_resumed:{why}")

    def yield_arms(self, yielded: bool) -> None:
        """While another driver (a learned policy) has the arms, the scheme
        keeps them clutched: it tracks nothing, and its targets hold where the
        arms are. Both edges drop the anchors, so taking the arms back anchors
        at the grips' current poses instead of jumping to the old mapping."""
        if yielded == self._arms_yielded:
            return
        self._arms_yielded = yielded
        for st in self._hands.values():
            st.mapping = None
            st.catch_up = None
        self._event("arms_yielded" if yielded else "arms_reclaimed")

    def _reset_robot(self) -> None:
        if self.estop_latched:
            self._event("reset_refused_estop")
            return
        self.reset_count += 1
        self._event("reset")
        self._pause("reset")

    # ---------------------------------------------------------------- step
    def _fresh(self, stamp: int | None, now_ns: int, timeout_s: float) -> bool:
        """A sample at most ``timeout_s`` old and not later than now by more
        than the future tolerance."""
        if stamp is None:
            return False
        age_ns = now_ns - stamp
        return -self.config.future_stamp_tolerance_s * 1e9 <= age_ns <= timeout_s * 1e9

    def step(self, now_ns: int, robot_grips: Mapping[str, Pose | None], lift_height_m: float = 0.0) -> TeleopOutput:
        """Evaluates timeouts at ``now_ns`` and returns the commands to send.

        Arm mapping happens on the lift carriage: ``robot_grips`` are the grip
        poses with the lift at height 0, and the published targets (base_link)
        add the current ``lift_height_m``. The operator's hands thus ride with
        the lift, as the arms do: raising the lift raises the targets instead of
        making the arms reach down to hold them where they were.
        ``robot_grips`` is read only for an arm that anchors or holds, so it
        may compute its poses on first access."""
        cfg = self.config
        self._stop.expire(now_ns)
        lift_offset = np.array([0.0, 0.0, float(lift_height_m)])
        arms: dict[str, Any] = {}
        sticks: dict[str, tuple[float, float]] = {}
        for hand in SIDES:
            st = self._hands[hand]
            pose_fresh = st.connected and st.pose is not None and self._fresh(st.pose_stamp_ns, now_ns, cfg.pose_timeout_s)
            input_fresh = st.connected and self._fresh(st.input_stamp_ns, now_ns, cfg.input_timeout_s)
            if pose_fresh:
                st.late_since_ns = None
            elif st.mapping is not None:
                # Samples that arrive late (the host fell behind; the headset's
                # samples are contiguous, else on_controllers voids the anchor)
                # hold the arm but keep the anchor for late_anchor_keep_s: when
                # they are fresh again the arm catches up with where the hand
                # is (from its own pose, at bounded speeds) instead of
                # re-anchoring short of it for good.
                if st.late_since_ns is None:
                    st.late_since_ns = now_ns
                    self._event(f"{hand}_pose_stale")
                if now_ns - st.late_since_ns >= cfg.late_anchor_keep_s * 1e9:  # 0: not kept at all
                    st.mapping = None
                    st.late_since_ns = None
                    self._event(f"{hand}_anchor_dropped")
            can_track = (
                pose_fresh and not self.estop_latched and not self.arms_paused and self._focused and not self._clutched[hand]
                and not self._arms_yielded
            )
            # the robot's grip pose is asked for only when anchoring, resuming or
            # holding needs it: a tracking arm's step does without (the node's
            # forward kinematics then run only when used)
            tracking = can_track and st.mapping is not None and st.tracking
            if can_track and not tracking:
                robot = robot_grips.get(hand)
                if robot is not None:
                    tracking = True
                    if st.mapping is None:
                        scale = cfg.slow_factor if self._slow[hand] else 1.0
                        st.mapping = AnchoredMapping(st.pose, robot, scale)
                        st.catch_up = None
                        self._event(f"{hand}_anchored")
                    else:
                        # a kept anchor: start where the arm is, never where the
                        # mapping puts the hand, and close the rest at bounded speeds
                        st.catch_up = CatchUp.between(robot, st.mapping.target(st.pose), now_ns)
                        self._event(f"{hand}_catching_up")
            if tracking:
                st.hold = st.mapping.target(st.pose)
                if st.catch_up is not None:
                    st.hold, st.catch_up = st.catch_up.advance(
                        st.hold, now_ns, cfg.late_catch_up_speed_m_s, cfg.late_catch_up_rate_rad_s)
            else:
                robot = robot_grips.get(hand)
                if robot is not None:
                    st.hold = robot  # a held arm's target is where the arm is
            if tracking != st.tracking:
                st.tracking = tracking
                self._event(f"{hand}_{'tracking' if tracking else 'holding'}")
            if st.connected and not self.estop_latched and not self.arms_paused and self._focused:
                st.gripper_rad = st.trigger * cfg.pinch_rad(PINCH_ORDER[st.pinch])
            target = st.hold or Pose.identity()
            arms[hand] = {
                "enabled": tracking,
                "position": target.position + lift_offset,
                "orientation": target.orientation,
                "gripper": float(st.gripper_rad),
                "slow": self._slow[hand],
            }
            drive_ok = pose_fresh and input_fresh and not self.estop_latched and self._focused
            raw = st.stick if drive_ok else (0.0, 0.0)
            k = cfg.slow_factor if self._slow[hand] else 1.0
            sticks[hand] = (k * _deadzone(raw[0], cfg.stick_deadzone), k * _deadzone(raw[1], cfg.stick_deadzone))
        lx, ly = sticks["left"]
        rx, ry = sticks["right"]
        fwd, left = ly * cfg.max_speed_m_s, -lx * cfg.max_speed_m_s
        speed = float(np.hypot(fwd, left))
        if speed > cfg.max_speed_m_s:
            fwd, left = fwd * cfg.max_speed_m_s / speed, left * cfg.max_speed_m_s / speed
        yaw = _clamp(-rx, -1.0, 1.0) * cfg.max_yaw_rate_rad_s
        lift = _clamp(ry, -1.0, 1.0) * cfg.max_lift_speed_m_s
        events, self._events = self._events, []
        return TeleopOutput(
            arm_targets={"stamp_ns": now_ns, "frame_id": cfg.base_frame, "left": arms["left"], "right": arms["right"]},
            base_cmd={"stamp_ns": now_ns, "forward_m_s": fwd + 0.0, "left_m_s": left + 0.0, "yaw_rad_s": yaw + 0.0},
            lift_cmd={"stamp_ns": now_ns, "velocity_m_s": lift + 0.0},
            state={
                "stamp_ns": now_ns,
                "estop_latched": self.estop_latched,
                "release_armed": self.release_armed,
                "arms_paused": self.arms_paused,
                "left_clutched": self._clutched["left"],
                "right_clutched": self._clutched["right"],
                "left_slow": self._slow["left"],
                "right_slow": self._slow["right"],
                "left_pinch": PINCH_ORDER[self._hands["left"].pinch],
                "right_pinch": PINCH_ORDER[self._hands["right"].pinch],
                "reset_count": self.reset_count,
                "events": events,
            },
        )
