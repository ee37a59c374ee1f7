"""`teledora path run`: waypoint parsing, planning, CSV output, clear errors."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import cli

from teledora import models
from teledora.commands.path import WaypointFileError, parse_waypoints
from teledora.operators.ik import cartesian_path

PROFILE = models.load_profile()
NAMES = [j for s in ("left", "right") for j in PROFILE.arms[s].joints]

# an unfolded start (at the folded home posture the arm's own links leave a
# straight line little room)
READY = {"shoulder_lift": -0.6, "elbow_flex": 0.3, "wrist_flex": 0.6}
READY_JOINTS = "{" + ", ".join(f"{s}_{j}: {v}" for s in ("left", "right") for j, v in READY.items()) + "}"
WAYPOINTS = f"""
lift_height_m: 0.3
waypoints:
  - name: ready
    joints: {READY_JOINTS}
  - name: low
    offsets_m: {{left: [0.0, 0.0, -0.08], right: [0.0, 0.0, -0.08]}}
    speed_m_s: 0.2
  - name: back
    joints: {READY_JOINTS}
"""


def test_run_plans_every_leg_and_writes_the_trajectory(tmp_path, capsys):
    wp = tmp_path / "wp.yaml"
    wp.write_text(WAYPOINTS)
    out = tmp_path / "traj.csv"
    assert cli.main(["path", "run", str(wp), "--csv", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "ready -> low" in printed and "low -> back" in printed and "joint caps" in printed
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["t_s", *NAMES]
    q = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    home = np.array([PROFILE.home_q()[n] for n in NAMES])
    ready = np.array([READY.get(n.split("_", 1)[1], home[i]) for i, n in enumerate(NAMES)])
    np.testing.assert_allclose(q[0], ready, atol=1e-9)
    np.testing.assert_allclose(q[-1], ready, atol=5e-3)
    t = np.array([float(r[0]) for r in rows[1:]])
    np.testing.assert_allclose(np.diff(t), 0.01, atol=2e-6)  # one row per period, legs joined without a repeat
    # what is written keeps to the joint caps (finite differences, at rest before and after)
    caps = models.load_yaml("alohamini2/ik.yaml")["joint_reference"]
    padded = np.vstack([q[:1], q, q[-1:]])
    assert np.abs(np.diff(padded, axis=0)).max() / 0.01 <= caps["max_speed_rad_s"] * (1 + 1e-6)
    assert np.abs(np.diff(padded, 2, axis=0)).max() / 0.01**2 <= caps["max_accel_rad_s2"] * (1 + 1e-4)
    # 8 cm down at most 0.2 m/s, back at most the default 0.1 m/s, each from rest to rest
    assert t[-1] > 0.08 / 0.2 + 0.08 / 0.1


def test_a_plan_that_would_break_a_joint_cap_is_refused_and_nothing_written(tmp_path, capsys, monkeypatch):
    real = cartesian_path.sample_at_rate

    def rushed(path, rate_hz):  # a timing that runs twice as fast as planned
        times, q = real(path, rate_hz)
        return times[: (len(times) + 1) // 2], q[::2]

    monkeypatch.setattr(cartesian_path, "sample_at_rate", rushed)
    wp = tmp_path / "wp.yaml"
    wp.write_text(WAYPOINTS.replace("speed_m_s: 0.2", "speed_m_s: 2.0\n    angular_speed_rad_s: 10.0"))
    out = tmp_path / "traj.csv"
    assert cli.main(["path", "run", str(wp), "--csv", str(out)]) == 1
    err = capsys.readouterr().err
    assert "ready -> low" in err and "joint caps" in err
    assert re.search(r"joint (left|right)_\w+ would reach [0-9.]+ rad/s(²)? (speed|acceleration) .*\(cap [0-9.]+ rad/s", err)
    assert not out.exists()


def test_unreachable_waypoint_fails_clearly(tmp_path, capsys):
    wp = tmp_path / "wp.yaml"
    wp.write_text("waypoints:\n  - {name: a, joints: home}\n  - {name: b, offsets_m: {left: [0.9, 0, 0]}}\n")
    assert cli.main(["path", "run", str(wp)]) == 1
    assert "unreachable" in capsys.readouterr().err


def test_joint_waypoints_inherit_unspecified_joints():
    data = {"waypoints": [{"joints": {"left_elbow_flex": -1.0}}, {"joints": {"right_wrist_roll": 0.5}}]}
    wps = parse_waypoints(data, NAMES, PROFILE.home_q())
    assert wps[1].q[NAMES.index("left_elbow_flex")] == -1.0
    assert wps[1].q[NAMES.index("right_wrist_roll")] == 0.5


@pytest.mark.parametrize(
    "data, match",
    [
        ({"nope": 1}, "waypoints"),
        ({"waypoints": [{"joints": {"left_knee": 1.0}}]}, "unknown arm joint"),
        ({"waypoints": [{"joints": "home", "offsets_m": {}}]}, "exactly one"),
        ({"waypoints": [{"offsets_m": {"left": [1, 2]}}]}, "3 values"),
    ],
)
def test_malformed_waypoints_are_rejected(data, match):
    with pytest.raises(WaypointFileError, match=match):
        parse_waypoints(data, NAMES, PROFILE.home_q())


_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
_waypoint = st.dictionaries(
    st.sampled_from(["name", "joints", "offsets_m", "speed_m_s", "angular_speed_rad_s", "other"]),
    st.one_of(_value, st.just("home"), st.dictionaries(st.sampled_from(NAMES + ["left", "right", "x"]),
                                                        _value | st.lists(st.floats(), max_size=4), max_size=3)),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_value, st.fixed_dictionaries({"waypoints": st.lists(_waypoint | _value, max_size=4)})))
def test_any_waypoint_data_parses_or_fails_clearly(data):
    try:
        wps = parse_waypoints(data, NAMES, PROFILE.home_q())
    except WaypointFileError:
        return
    for wp in wps:
        assert (wp.q is None) != (wp.offsets_m is None)
        if wp.q is not None:
            assert wp.q.shape == (len(NAMES),)


def test_the_timing_library_is_loaded_at_start_before_any_plan(tmp_path, monkeypatch):
    """The first plan does not pay for importing TOPP-RA: it is loaded before the IK is even built."""
    from teledora.commands import path as path_command

    order: list[str] = []
    monkeypatch.setattr(path_command, "load_timing_library", lambda: order.append("timing library"))
    real_plan = path_command.plan_waypoints
    monkeypatch.setattr(path_command, "plan_waypoints", lambda *a, **k: (order.append("plan"), real_plan(*a, **k))[1])
    wp = tmp_path / "wp.yaml"
    wp.write_text(WAYPOINTS)
    assert cli.main(["path", "run", str(wp), "--csv", str(tmp_path / "traj.csv")]) == 0
    assert order == ["timing library", "plan"]
