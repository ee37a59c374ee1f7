"""scan_merger node under MockNode: pairing, odometry, a silent lidar, bad input."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora.nodes.lidar import scan_merger
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.contract.messages import decode, encode
from tests.operators.lidar.scan_cases import BACK, FRONT, SyntheticRoom, base_pose, merged_points_world, synthetic_scan, wall_error  # noqa: E402

ROOM = SyntheticRoom(x_min=-3, x_max=3, y_min=-2.5, y_max=2.5, pillar_x=1.5, pillar_y=-1.0)


class ClockedNode(MockNode):
    """Delivers events one at a time and sets the host clock to each event's arrival time."""

    def __init__(self, timed_events):
        super().__init__([e for _, e in timed_events])
        self.times = [t for t, _ in timed_events]
        self.now = 0

    def next(self, timeout=None):
        if self.times:
            self.now = self.times.pop(0)
        return super().next(timeout)

    def drain(self):
        return []


def odom_msg(t_s, v=0.0, w=0.0):
    x, y, yaw = base_pose(t_s, v, w)
    return encode("Odometry", {"stamp_ns": int(round(t_s * 1e9)), "frame_id": "odom", "child_frame_id": "base_link",
                               "x": x, "y": y, "yaw": yaw, "vx": v, "vy": 0.0, "wz": w})


def scan_msg(mount, t_s, v=0.0, w=0.0, **kw):
    return encode("LaserScan", synthetic_scan(ROOM, mount, t_s, v=v, w=w, **kw).to_message())


def _run(timed, argv=()):
    node = ClockedNode(timed)
    scan_merger.main(list(argv), node=node, clock=lambda: node.now)
    return node


def _ns(t):
    return int(round(t * 1e9))


def test_pairs_are_merged_with_per_ray_motion_compensation_while_turning():
    v, w = 0.25, 0.65
    timed = [(_ns(k * 0.01), ("odom", odom_msg(k * 0.01, v, w))) for k in range(0, 140)]
    timed += [(_ns(0.6), ("front", scan_msg(FRONT, 0.6, v, w))), (_ns(0.65), ("back", scan_msg(BACK, 0.65, v, w, rays=200, scan_time_s=0.1)))]
    timed += [(_ns(1.0), ("front", scan_msg(FRONT, 1.0, v, w))), (_ns(1.07), ("back", scan_msg(BACK, 1.07, v, w, rays=200, scan_time_s=0.1)))]
    timed.sort(key=lambda e: e[0])
    node = _run(timed)
    merged = [LaserScan.from_message(decode("LaserScan", s)) for s in node.outputs["scan"]]
    assert [m.stamp_ns for m in merged] == [_ns(0.625), _ns(1.035)]
    for m in merged:
        assert m.frame_id == "base_link"
        wx, wy = merged_points_world(m, base_pose(m.stamp_ns * 1e-9, v, w))
        assert np.percentile(wall_error(ROOM, wx, wy), 95) < 0.02
    diag = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert diag["paired"] == 2 and diag["compensation"] == "per_ray" and diag["odom_error"] == ""


def test_a_silent_lidar_is_flagged_and_the_other_published_alone():
    timed = [(_ns(k * 0.05), ("odom", odom_msg(k * 0.05))) for k in range(0, 40)]
    for k in range(1, 10):
        timed.append((_ns(k * 0.182), ("front", scan_msg(FRONT, k * 0.182))))
    timed.append((_ns(0.2), ("back", scan_msg(BACK, 0.2))))  # back sends one scan, then nothing
    timed.sort(key=lambda e: e[0])
    node = _run(timed)
    metas = [decode("LaserScan", s) for s in node.outputs["scan"]]
    assert len(metas) >= 4
    diags = [decode("Diagnostics", d) for d in node.outputs["diagnostics"]]
    last = diags[-1]
    assert last["level"] == "warn" and "back silent" in last["message"]
    details = json.loads(last["details_json"])
    assert details["alone"] >= 3 and details["silent"] == ["back"] and details["paired"] == 1


def test_scans_still_waiting_when_the_inputs_end_are_counted():
    timed = [(_ns(k * 0.05), ("odom", odom_msg(k * 0.05))) for k in range(0, 20)]
    timed += [(_ns(0.5), ("front", scan_msg(FRONT, 0.5))), (_ns(0.55), ("back", scan_msg(BACK, 0.55))),
              (_ns(0.68), ("front", scan_msg(FRONT, 0.68)))]  # its partner never comes: the stream ends first
    timed.sort(key=lambda e: e[0])
    node = _run(timed)
    assert [decode("LaserScan", s)["stamp_ns"] for s in node.outputs["scan"]] == [_ns(0.525)]
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["paired"] == 1 and details["waiting_at_end"] == 1 and details["unpaired_dropped"] == 0


def test_without_odometry_scans_still_merge_and_the_reason_is_reported():
    timed = [(_ns(0.5), ("front", scan_msg(FRONT, 0.5))), (_ns(0.55), ("back", scan_msg(BACK, 0.55)))]
    node = _run(timed)
    assert len(node.outputs["scan"]) == 1
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["level"] == "warn" and "no odometry" in diag["message"]


def test_bad_scans_are_rejected_and_counted():
    bad_geometry = synthetic_scan(ROOM, FRONT, 0.5).to_message()
    bad_geometry["angle_max"] = bad_geometry["angle_max"] + 1.0
    timed = [
        (_ns(0.5), ("back", pa.array([1, 2, 3]))),
        (_ns(0.5), ("front", encode("LaserScan", bad_geometry))),
        (_ns(0.6), ("front", scan_msg(FRONT, 0.6))),
        (_ns(0.62), ("back", scan_msg(BACK, 0.62))),
    ]
    node = _run(timed, ["--compensation", "none"])
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 2 and "angle_max" in diag["last_error"]
    assert len(node.outputs["scan"]) == 1
    assert json.loads(diag["details_json"])["compensation"] == "none"


def test_self_hits_on_the_footprint_are_dropped_and_counted():
    front = synthetic_scan(ROOM, FRONT, 0.5)
    behind = int(np.argmin(np.abs(np.cos(front.angles()) + 1)))
    front.ranges[behind] = 0.19  # the tower behind the front lidar
    timed = [(_ns(0.5), ("front", encode("LaserScan", front.to_message()))), (_ns(0.55), ("back", scan_msg(BACK, 0.55)))]
    node = _run(timed)
    merged = LaserScan.from_message(decode("LaserScan", node.outputs["scan"][0]))
    assert np.min(merged.ranges[np.isfinite(merged.ranges)]) > 1.0  # only the room is left
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["self_hits"]["front"] == 1


def test_joint_states_and_lift_pose_the_self_filter():
    # the left wrist, lowered and reaching out, crosses the front lidar's plane at (0.25, 0.25)
    reach = {"left_shoulder_pan": -0.34, "left_shoulder_lift": 1.32, "left_elbow_flex": -1.96, "left_wrist_flex": -0.54}
    from teledora.models.config_files import load_node_profile

    lift_height = -0.3 - load_node_profile().lift.model_offset_m  # lift joint at its lowest

    def with_arm(t_s):
        s = synthetic_scan(ROOM, FRONT, t_s)
        a = np.arctan2(0.25 - FRONT.y, 0.25 - FRONT.x)
        i = int(np.argmin(np.abs(np.angle(np.exp(1j * (s.angles() - a))))))
        s.ranges[i - 1:i + 2] = np.hypot(0.25 - FRONT.x, 0.25 - FRONT.y)
        return encode("LaserScan", s.to_message())

    joints = encode("JointState", {"stamp_ns": _ns(0.4), "names": list(reach), "position": np.array(list(reach.values())),
                                   "velocity": np.zeros(0), "effort": np.zeros(0)})
    lift = encode("LiftState", {"stamp_ns": _ns(0.4), "height_m": lift_height, "velocity_m_s": 0.0, "homed": True})
    base = [(_ns(0.5), ("front", with_arm(0.5))), (_ns(0.55), ("back", scan_msg(BACK, 0.55)))]
    node = _run(base)  # arms at home: the wrist's returns stay
    near = LaserScan.from_message(decode("LaserScan", node.outputs["scan"][0])).ranges
    assert np.nanmin(near) < 0.4
    node = _run([(_ns(0.4), ("joint_states", joints)), (_ns(0.41), ("lift", lift))] + base)
    merged = LaserScan.from_message(decode("LaserScan", node.outputs["scan"][0]))
    assert np.nanmin(merged.ranges) > 1.0  # only the room is left
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["self_hits"]["front"] >= 3 and details["body_pose"] == "joint states"
