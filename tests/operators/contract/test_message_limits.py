"""Message limits: impossible values, stamps and joints are refused at decode, by reason."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.operators.contract.message_limits import MessageLimits, MessageLimitsError, MessageLimitsSettings
from teledora.operators.contract.messages import MessageError, decode, encode

PROFILE = models.load_profile()
LIMITS = MessageLimits.for_robot(PROFILE, models.path(PROFILE.model).read_text())
ARM = list(PROFILE.arm_joint_names)
NOW = 1_800_000_000_000_000_000


def hand(**kw):
    h = dict(connected=True, epoch=1, pose_valid=True, position=[0.3, 0.2, 1.0], orientation=[0, 0, 0, 1.0], trigger=0.0,
             squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False, menu=False,
             pose_stamp_ns=NOW, input_stamp_ns=NOW)
    h.update(kw)
    return h


def xr(left=None, **kw):
    m = dict(stamp_ns=NOW, frame_id="xr", seq=0, source="test", focused=True, ui_estop=False, ui_release_stop=False,
             ui_pause=False, ui_episode_start=False, ui_episode_keep=False, ui_episode_discard=False,
             left=left or hand(), right=hand())
    m.update(kw)
    return encode("XrControllers", m)


def joint_state(names=None, position=None, stamp_ns=NOW, velocity=()):
    names = ARM if names is None else names
    position = [0.1] * len(names) if position is None else position
    return encode("JointState", dict(stamp_ns=stamp_ns, names=names, position=position, velocity=list(velocity), effort=[]))


def scan(ranges, **kw):
    m = dict(stamp_ns=NOW, frame_id="laser", angle_min=-math.pi, angle_max=math.pi, angle_increment=0.01,
             time_increment=1e-4, scan_time=0.1, range_min=0.15, range_max=12.0, ranges=ranges, intensities=[])
    m.update(kw)
    return encode("LaserScan", m)


def reason_of(kind, value, now=NOW) -> str:
    with pytest.raises(MessageError) as exc:
        decode(kind, value, LIMITS, now)
    return exc.value.reason


def test_sound_messages_pass():
    decode("XrControllers", xr(), LIMITS, NOW)
    decode("JointState", joint_state(), LIMITS, NOW)
    decode("LaserScan", scan([1.0, float("inf"), float("nan"), 2.0]), LIMITS, NOW)


@pytest.mark.parametrize("value, reason", [
    (xr(left=hand(position=[1e308, 0.0, 0.0])), "out_of_range"),  # the 1e308 m hand
    (xr(left=hand(trigger=1e300)), "out_of_range"),
    (xr(left=hand(stick=[0.0, -3.0])), "out_of_range"),
    (xr(stamp_ns=NOW + 1000 * 10**9), "future_stamp"),
    (xr(stamp_ns=-5), "bad_stamp"),
    (xr(left=hand(pose_stamp_ns=NOW + 10 * 10**9)), "future_stamp"),  # 10 s ahead never reaches teleop
    (xr(left=hand(epoch=-1)), "out_of_range"),
])
def test_impossible_controller_reports_are_refused_by_reason(value, reason):
    assert reason_of("XrControllers", value) == reason


def test_joint_states_name_only_the_models_joints_within_their_ranges():
    assert reason_of("JointState", joint_state(names=ARM[:-1] + ["tail"])) == "unknown_joint"
    assert reason_of("JointState", joint_state(names=[f"j{i}" for i in range(200_000)])) == "unknown_joint"
    assert reason_of("JointState", joint_state(position=[1e300] + [0.0] * (len(ARM) - 1))) == "out_of_range"
    assert reason_of("JointState", joint_state(velocity=[1e3] * len(ARM))) == "out_of_range"
    # a subset of the model's joints is a valid message; whether it is enough is the receiver's question
    decode("JointState", joint_state(names=ARM[:3]), LIMITS, NOW)


def test_a_joint_is_refused_only_beyond_its_range_widened_by_the_reject_margin():
    lo, hi = LIMITS.joint_lo["left_elbow_flex"], LIMITS.joint_hi["left_elbow_flex"]
    i = ARM.index("left_elbow_flex")
    for q, ok in ((hi - 1e-6, True), (hi + 1e-6, False), (lo + 1e-6, True), (lo - 1e-6, False)):
        position = [0.0] * len(ARM)
        position[i] = q
        if ok:
            decode("JointState", joint_state(position=position), LIMITS, NOW)
        else:
            assert reason_of("JointState", joint_state(position=position)) == "out_of_range"


def test_scans_need_rays_and_possible_ranges():
    assert reason_of("LaserScan", scan([])) == "empty"
    assert reason_of("LaserScan", scan([1.0, 1e30])) == "out_of_range"  # (1e300 is +Inf in float32: "no return")
    assert reason_of("LaserScan", scan([1.0, -2.0])) == "out_of_range"
    assert reason_of("LaserScan", scan([1.0], range_max=1e300)) == "out_of_range"


def test_commands_over_the_absurd_factor_of_their_cap_are_refused_below_it_passed_on():
    cap = PROFILE.base.max_linear_m_s * PROFILE.command_limits.reject_factor
    ok = encode("BaseCommand", dict(stamp_ns=NOW, forward_m_s=cap * 0.99, left_m_s=0.0, yaw_rad_s=0.0))
    decode("BaseCommand", ok, LIMITS, NOW)  # over the cap but not absurd: the base clamps and counts it
    bad = encode("BaseCommand", dict(stamp_ns=NOW, forward_m_s=cap * 1.01, left_m_s=0.0, yaw_rad_s=0.0))
    assert reason_of("BaseCommand", bad) == "out_of_range"


@settings(max_examples=200, deadline=None)
@given(ahead_s=st.floats(-1e6, 1e6, allow_nan=False))
def test_the_stamp_window_is_exactly_the_future_tolerance(ahead_s):
    stamp = NOW + int(ahead_s * 1e9)
    value = encode("LiftState", dict(stamp_ns=stamp, height_m=0.1, velocity_m_s=0.0, homed=True))
    tolerance_ns = int(PROFILE.message_limits.future_stamp_tolerance_s * 1e9)
    if stamp - NOW > tolerance_ns:
        assert reason_of("LiftState", value) == "future_stamp"
    else:
        assert decode("LiftState", value, LIMITS, NOW)["stamp_ns"] == stamp


@settings(max_examples=200, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False), field=st.sampled_from(["x", "y", "vx", "vy", "wz", "yaw"]))
def test_odometry_is_refused_exactly_when_a_value_is_beyond_its_bound(x, field):
    msg = dict(stamp_ns=NOW, frame_id="odom", child_frame_id="base_link", x=0.0, y=0.0, yaw=0.0, vx=0.0, vy=0.0, wz=0.0)
    msg[field] = x
    bound = {"x": LIMITS.settings.max_world_position_m, "y": LIMITS.settings.max_world_position_m, "yaw": 1e3,
             "vx": LIMITS.base_speed, "vy": LIMITS.base_speed, "wz": LIMITS.yaw_rate}[field]
    value = encode("Odometry", msg)
    if abs(x) <= bound:
        decode("Odometry", value, LIMITS, NOW)
    else:
        assert reason_of("Odometry", value) == "out_of_range"


def test_settings_must_be_positive_and_finite():
    good = vars(PROFILE.message_limits)
    for bad in (0.0, -1.0, float("nan"), float("inf"), True):
        with pytest.raises(MessageLimitsError):
            MessageLimitsSettings(**{**good, "max_reach_m": bad})


def test_without_limits_decode_checks_the_shape_alone():
    value = xr(left=hand(position=[1e308, 0.0, 0.0]))
    assert decode("XrControllers", value)["left"]["position"][0] == 1e308
    assert np.isfinite(decode("XrControllers", xr(), LIMITS, None)["left"]["position"]).all()


@pytest.mark.parametrize("width, height", [(-4, -1), (0, 10), (10, 0), (-2, 3)])
def test_an_image_of_impossible_size_is_refused_even_when_its_byte_count_matches(width, height):
    from teledora.operators.contract.messages import decode_image

    pixels = pa.array(np.zeros(max(1, abs(width * height)) * 3, dtype=np.uint8))
    with pytest.raises(MessageError, match="impossible"):
        decode_image(pixels, dict(width=width, height=height, encoding="rgb8"))
