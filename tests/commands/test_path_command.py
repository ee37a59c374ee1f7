"""`teledora path run`: waypoint parsing, planning, CSV output, clear errors."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from teledora import cli

from teledora import models
from teledora.commands.path import WaypointFileError, parse_waypoints

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
    assert "ready -> low" in printed and "low -> back" in printed
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["t_s", *NAMES]
    q = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    home = np.array([PROFILE.home_q()[n] for n in NAMES])
    ready = np.array([READY.get(n.split("_", 1)[1], home[i]) for i, n in enumerate(NAMES)])
    np.testing.assert_allclose(q[0], ready, atol=1e-9)
    np.testing.assert_allclose(q[-1], ready, atol=5e-3)
    t = np.array([float(r[0]) for r in rows[1:]])
    assert np.all(np.diff(t) >= 0)
    assert t[-1] == pytest.approx(0.08 / 0.2 + 0.08 / 0.1, rel=0.02)  # default speed 0.1 m/s on the way back


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
