"""lidar_front / lidar_back node (sim): a rotating 2D lidar ray-cast in the MuJoCo scene.

Inputs: ``ground_truth`` (GroundTruth from ``sim/ground_truth``, preferred) or
``odom`` (Odometry from ``base/odom``): the base pose over time, plus (from
ground truth) the arm and lift joints so the lidar sees the robot as it stands.
Outputs: ``scan`` (LaserScan in the lidar frame, same layout as the hardware
node), ``diagnostics`` (~1 Hz).

The lidar turns clockwise at its scan rate and measures ``samples_per_second``
times a second; every sample is cast from the lidar site at that sample's own
time, with the base pose interpolated from the pose input, so a moving base
distorts the scan exactly as it does a real rotating lidar. Returns on the
robot's own body are kept (the merger's footprint removes them); noise,
random dropouts and the 0.15-12 m limits follow the A1. A turn is cast as
soon as the pose input covers its end, so the output is deterministic for a
given input stream (no wall clock). Every scan passes the same outlier filter
as the hardware node's (lidar.yaml ``outlier_filter``), so both variants
publish alike; the rays it sets to NaN are counted (``outliers_rejected``)
and make the period's diagnostics ``warn``.

Args: ``--lidar front|back`` (or env ``LIDAR``), ``--config`` lidar YAML,
``--scan-rate-hz`` (overrides lidar.yaml), ``--seed``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import mujoco
import numpy as np

from teledora import models
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.models.config_files import load_lidar_setup, load_node_profile
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.lidar_config import SimLidarConfig
from teledora.operators.lidar.lidar_mounts import site_pose_in_base
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.outlier_filter import OutlierFilter
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory, PoseOutOfRangeError
from teledora.operators.lidar.scan_binning import Revolution, ScanGrid, bin_revolution

RAY_START_OFFSET_M = 0.04  # rays start outside the lidar's own housing (r 0.035 m)


class SimLidarBackend:
    """Casts one lidar's turns in a MuJoCo scene.

    Args:
        model: The scene (robot + room).
        site: The lidar's mount site.
        grid: Angular grid and range limits of the published scan.
        sim: Noise, dropout and measurement-rate settings.
        scan_rate_hz: Turns per second.
        frame_id: Frame of the published scans.
        base_frame: The robot's base body (the profile's base frame).
        base_joints: The joints that place the base in the scene (the profile's).
    """

    def __init__(self, model: mujoco.MjModel, site: str, grid: ScanGrid, sim: SimLidarConfig,
                 scan_rate_hz: float, frame_id: str, base_frame: str, base_joints: Sequence[str]) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.grid = grid
        self.sim = sim
        self.frame_id = frame_id
        self.period_ns = int(round(1e9 / scan_rate_hz))
        self.samples_per_turn = max(int(round(sim.samples_per_second / scan_rate_hz)), 2)
        self.rng = np.random.default_rng(sim.seed)
        pos, rot = site_pose_in_base(model, site, base_frame)
        self.mount_xyz = pos
        self.mount_yaw = float(np.arctan2(rot[1, 0], rot[0, 0]))
        self._base_qpos = [int(model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)])
                           for j in base_joints]
        self._joint_qpos: dict[str, int] = {}
        for j in range(model.njnt):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if name and name not in base_joints and model.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
                self._joint_qpos[name] = int(model.jnt_qposadr[j])
        self.next_start_ns: int | None = None
        self.turns = 0

    def set_joints(self, names: Sequence[str], positions: Sequence[float]) -> int:
        """Poses the arms / lift as reported; returns how many names were unknown."""
        unknown = 0
        for name, q in zip(names, positions):
            adr = self._joint_qpos.get(name)
            if adr is None:
                unknown += 1
            else:
                self.data.qpos[adr] = q
        return unknown

    def sample_geometry(self, start_ns: int) -> tuple[np.ndarray, np.ndarray]:
        """Clockwise angles (deg) and times (ns) of one turn's samples."""
        m = self.samples_per_turn
        frac = (np.arange(m) + 0.5) / m
        return frac * 360.0, start_ns + np.round(frac * self.period_ns).astype(np.int64)

    def cast_turn(self, start_ns: int, poses: PoseHistory, chunk: int = 8) -> Revolution:
        """Casts the turn that starts at ``start_ns`` (raises PoseOutOfRangeError if not covered)."""
        angle_deg, times = self.sample_geometry(start_ns)
        bx, by, byaw = poses.interpolate(times)
        m = len(angle_deg)
        dist = np.zeros(m)
        hit_geom = np.zeros(1, dtype=np.int32)
        # ray direction in the lidar frame: clockwise angle -> -theta counter-clockwise
        a_lidar = -np.radians(angle_deg)
        mx, my, mz = self.mount_xyz
        for c0 in range(0, m, chunk):
            # the robot's bodies follow the base pose of this chunk of rays (a few ms)
            mid = min(c0 + chunk // 2, m - 1)
            self.data.qpos[self._base_qpos] = (bx[mid], by[mid], byaw[mid])
            mujoco.mj_kinematics(self.model, self.data)
            for i in range(c0, min(c0 + chunk, m)):
                cy, sy = np.cos(byaw[i]), np.sin(byaw[i])
                ox = bx[i] + cy * mx - sy * my
                oy = by[i] + sy * mx + cy * my
                heading = byaw[i] + self.mount_yaw + a_lidar[i]
                d = np.array([np.cos(heading), np.sin(heading), 0.0])
                pnt = np.array([ox, oy, mz]) + RAY_START_OFFSET_M * d
                r = mujoco.mj_ray(self.model, self.data, pnt, d, None, 1, -1, hit_geom)
                dist[i] = r + RAY_START_OFFSET_M if r >= 0 else 0.0
        return Revolution(angle_deg, self._measure(dist), np.where(dist > 0, self.sim.quality, 0), start_ns,
                          self.period_ns * 1e-9)

    def _measure(self, true_m: np.ndarray) -> np.ndarray:
        """Noise, dropouts and the range limit, as the device reports them (0 = none)."""
        s = self.sim
        sigma = s.range_noise_std_m + s.range_noise_fraction * true_m
        measured = true_m + self.rng.standard_normal(true_m.shape) * sigma
        lost = self.rng.random(true_m.shape) < s.dropout_probability
        measured[(true_m <= 0) | lost | (measured > self.grid.range_max_m)] = 0.0
        return np.maximum(measured, 0.0)

    def read(self, poses: PoseHistory) -> list[LaserScan]:
        """Casts every turn whose end the pose history now covers."""
        newest = poses.newest
        if newest is None:
            return []
        if self.next_start_ns is None:
            self.next_start_ns = newest.stamp_ns
        out = []
        while self.next_start_ns + self.period_ns <= newest.stamp_ns:
            rev = self.cast_turn(self.next_start_ns, poses)
            out.append(bin_revolution(rev, self.grid, self.frame_id))
            self.next_start_ns += self.period_ns
            self.turns += 1
        return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="lidar_sim", description=__doc__.splitlines()[0])
    ap.add_argument("--lidar", default=os.environ.get("LIDAR", "front"), help="lidar name in lidar.yaml")
    ap.add_argument("--config", type=Path, default=None, help="lidar YAML (default: shipped)")
    ap.add_argument("--scan-rate-hz", type=float, default=None, help="turns per second (overrides lidar.yaml)")
    ap.add_argument("--seed", type=int, default=None, help="noise seed (overrides sim.seed)")
    return ap.parse_args(argv)


def pose_from_message(msg: dict[str, Any]) -> OdometrySample:
    """The base pose of a GroundTruth or Odometry message."""
    return OdometrySample(int(msg["stamp_ns"]), Pose2D(msg["x"], msg["y"], msg["yaw"]), msg["vx"], msg["vy"], msg["wz"])


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    setup = load_lidar_setup(args.config)
    if args.lidar not in setup.lidars:
        raise SystemExit(f"unknown lidar {args.lidar!r}; lidar.yaml has {sorted(setup.lidars)}")
    unit = setup.lidars[args.lidar]
    sim_cfg = setup.sim
    if args.seed is not None:
        from dataclasses import replace

        sim_cfg = replace(sim_cfg, seed=args.seed)
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.scene)))
    profile = load_node_profile()
    backend = SimLidarBackend(model, unit.site, setup.grid, sim_cfg, args.scan_rate_hz or unit.sim_scan_rate_hz, unit.frame_id,
                              profile.base_frame, profile.base_joints)
    poses = PoseHistory(max_age_s=2.0, max_extrapolation_s=0.05)
    io = NodeIO(make_node(node), node_id(f"lidar_{args.lidar}"), clock)
    io.diag.set_status("warn", "waiting for a pose input")
    kinds = {"ground_truth": "GroundTruth", "odom": "Odometry"}
    outliers = OutlierFilter(setup.outlier_filter) if setup.outlier_filter is not None else None

    def flag_outliers() -> None:
        new, last = outliers.report() if outliers is not None else (0, "")
        if new and io.diag.level == "ok":
            io.diag.set_status("warn", f"{new} range outlier(s) set to NaN since the last report (last: {last})")

    while (batch := io.next_batch()) is not None:
        for event in batch:
            if event["type"] != "INPUT" or event["id"] not in kinds:
                continue  # STOP / INPUT_CLOSED: keep going until the stream ends
            msg = io.decode(event, kinds[event["id"]])
            if msg is None:
                continue
            if not poses.add(pose_from_message(msg)):
                io.diag.dropped += 1
                io.diag.error(f"{event['id']}: stamp {msg['stamp_ns']} not newer than the last pose")
                continue
            if event["id"] == "ground_truth":
                backend.set_joints(msg["joint_names"], msg["joint_position"])
            try:
                for scan in backend.read(poses):
                    if outliers is not None:
                        scan = outliers.apply(scan).scan
                    io.send("scan", "LaserScan", scan.to_message())
                    io.diag.set_status("ok", f"{backend.turns} turns cast")
            except PoseOutOfRangeError as exc:  # a gap in the pose stream: skip that turn
                io.diag.error(f"pose gap: {exc}")
                backend.next_start_ns = poses.newest.stamp_ns
                if outliers is not None:
                    outliers.reset()  # the turn after the gap has no previous turn to be judged against
            io.diag.details = {"turns": backend.turns, "samples_per_turn": backend.samples_per_turn,
                               "scan_rate_hz": 1e9 / backend.period_ns, "out_of_order_poses": poses.out_of_order,
                               "outliers_rejected": outliers.rays_rejected if outliers is not None else None}
        io.publish_diagnostics(refresh=flag_outliers)
    io.publish_diagnostics(force=True, refresh=flag_outliers)


if __name__ == "__main__":
    main()
