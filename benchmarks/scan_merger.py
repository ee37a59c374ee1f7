"""Scan merger: cost per pair and accuracy against the simulator's ground truth.

Part 1 (cost): merges of a front + back pair of 360-point and of 1,440-point
scans, interleaved per compensation mode; median and p99 CPU time of the
merging thread in ms and as a fraction of the A1's scan period (1 / 5.5 Hz).

Part 2 (accuracy): the two sim lidars (front 5.5 Hz, back 10 Hz, the shipped
noise) ray-cast in models/alohamini2/scene.xml while the base drives at
0.25 m/s and turns at 0.65 rad/s; odometry = ground truth at 100 Hz. Each
merged scan is compared, direction by direction, with an ideal instantaneous
scan cast from the base centre at the merged stamp (robot removed from the
scene): median / p90 / p99 range error and the share of directions within
5 cm, for per-ray compensation, one transform per scan, and none; with the
sim's noise off (motion error alone), on, and for a base standing still
(the floor: depth edges seen with parallax from lidars off the base centre).

    python benchmarks/scan_merger.py [--n 300] [--seconds 8]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import mujoco
import numpy as np

from teledora import models
from teledora.models.config_files import load_lidar_setup
from teledora.nodes.lidar.lidar_sim import SimLidarBackend
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.lidar_mounts import mount_from_site
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory
from teledora.operators.lidar.scan_merger import COMPENSATION_MODES, ScanMerger
from teledora.operators.lidar.scan_pairing import ScanPairer

PROFILE = models.load_profile()
A1_PERIOD_S = 1 / 5.5


def _room_scan(rays: int, stamp_ns: int, rng: np.random.Generator) -> LaserScan:
    inc = 2 * np.pi / rays
    ranges = 2.0 + rng.random(rays) * 3.0
    ranges[rng.random(rays) < 0.05] = np.inf
    return LaserScan(stamp_ns, "lidar", -(rays - 0.5) * inc, -0.5 * inc, inc, -A1_PERIOD_S / rays, A1_PERIOD_S,
                     0.15, 12.0, ranges, np.full(rays, 40.0))


def bench_cost(setup, mounts, n: int) -> None:
    rng = np.random.default_rng(0)
    odom = PoseHistory(max_age_s=10.0)
    for k in range(300):
        odom.add(OdometrySample(k * 10_000_000, Pose2D(0.0025 * k, 0.0, 0.0065 * k), 0.25, 0.0, 0.65))
    print("merge CPU time per pair (front + back), A1 scan period 181.8 ms")
    print(f"{'rays':>6} {'mode':>11} {'median ms':>10} {'p99 ms':>8} {'median/period':>14} {'p99/period':>11}")
    for rays in (360, 1440):
        pair = {"front": _room_scan(rays, 1_000_000_000, rng), "back": _room_scan(rays, 1_060_000_000, rng)}
        mergers = {m: ScanMerger(PROFILE.base_frame, mounts, setup.merger.footprint, m) for m in COMPENSATION_MODES}
        times: dict[str, list[float]] = {m: [] for m in COMPENSATION_MODES}
        for _ in range(n):
            for mode, merger in mergers.items():  # interleaved: same machine state for each mode
                t0 = time.thread_time_ns()  # CPU time of this thread: robust to a busy machine
                merger.merge(pair, odom)
                times[mode].append((time.thread_time_ns() - t0) * 1e-6)
        for mode in COMPENSATION_MODES:
            t = np.asarray(times[mode])
            med, p99 = np.median(t), np.percentile(t, 99)
            print(f"{rays:>6} {mode:>11} {med:>10.3f} {p99:>8.3f} {med / (A1_PERIOD_S * 1e3):>14.4f} "
                  f"{p99 / (A1_PERIOD_S * 1e3):>11.4f}")
        ratio = np.median(times["per_ray"]) / np.median(times["none"])
        print(f"{rays:>6} per_ray / none median ratio: {ratio:.2f}")


def _truth_ranges(model, data, qadr, pose, z, angles) -> np.ndarray:
    """Ideal instantaneous ranges from the base centre at ``pose``, robot moved out of the room."""
    data.qpos[qadr] = (50.0, 50.0, 0.0)
    mujoco.mj_kinematics(model, data)
    x, y, yaw = pose
    out = np.full(len(angles), np.inf)
    gid = np.zeros(1, dtype=np.int32)
    for i, a in enumerate(angles):
        d = np.array([np.cos(yaw + a), np.sin(yaw + a), 0.0])
        r = mujoco.mj_ray(model, data, np.array([x, y, z]), d, None, 1, -1, gid)
        if r >= 0:
            out[i] = r
    return out


def bench_accuracy(setup, mounts, seconds: float, v: float, w: float, noise: bool) -> None:
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.scene)))
    sim = setup.sim if noise else replace(setup.sim, range_noise_std_m=0.0, range_noise_fraction=0.0, dropout_probability=0.0)
    lidars = {
        name: SimLidarBackend(model, setup.lidars[name].site, setup.grid, sim,
                              setup.lidars[name].sim_scan_rate_hz, setup.lidars[name].frame_id,
                              PROFILE.base_frame, PROFILE.base_joints)
        for name in ("front", "back")
    }
    odom = PoseHistory(max_age_s=seconds + 1)
    x0, y0, yaw0 = -0.8, -0.3, 0.0  # circle of radius v/w = 0.38 m, clear of the furniture

    def pose(t):
        yaw = yaw0 + w * t
        if w == 0:
            return x0 + v * t * np.cos(yaw0), y0 + v * t * np.sin(yaw0), yaw
        return x0 + v / w * (np.sin(yaw) - np.sin(yaw0)), y0 - v / w * (np.cos(yaw) - np.cos(yaw0)), yaw

    scans = []
    for k in range(int(seconds * 100) + 1):
        t = k * 0.01
        odom.add(OdometrySample(int(round(t * 1e9)), Pose2D(*pose(t)), v, 0.0, w))
        for name, lidar in lidars.items():
            scans += [(s.stamp_ns, name, s) for s in lidar.read(odom)]
    scans.sort(key=lambda e: e[0])
    pairer = ScanPairer(("front", "back"), setup.merger.tolerance_s, setup.merger.silence_timeout_s)
    groups = []
    for stamp, name, scan in scans:
        groups += [g for g in pairer.offer(name, scan, stamp) if not g.alone]
    truth_data = mujoco.MjData(model)
    qadr = [int(model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)]) for j in ("base_x", "base_y", "base_yaw")]
    z = mounts["front"].z
    errors: dict[str, list[np.ndarray]] = {m: [] for m in COMPENSATION_MODES}
    for g in groups[1:]:  # the first pair may start before odometry
        for mode in COMPENSATION_MODES:
            res = ScanMerger(PROFILE.base_frame, mounts, setup.merger.footprint, mode).merge(g.scans, odom)
            ms = res.scan
            truth = _truth_ranges(model, truth_data, qadr, pose(ms.stamp_ns * 1e-9), z, ms.angles())
            ok = np.isfinite(ms.ranges) & np.isfinite(truth)
            errors[mode].append(np.abs(ms.ranges[ok] - truth[ok]))
    print(f"\nmerged-scan accuracy vs ground truth: {len(groups) - 1} pairs over {seconds:.0f} s, "
          f"v = {v} m/s, w = {w} rad/s, front 5.5 Hz + back 10 Hz, sim noise {'on' if noise else 'off'}")
    print(f"{'mode':>11} {'median cm':>10} {'p90 cm':>8} {'p99 cm':>8} {'<5 cm':>7}")
    for mode in COMPENSATION_MODES:
        e = np.concatenate(errors[mode]) * 100
        print(f"{mode:>11} {np.median(e):>10.2f} {np.percentile(e, 90):>8.2f} {np.percentile(e, 99):>8.2f} "
              f"{np.mean(e < 5) * 100:>6.1f}%")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="merges per case (cost)")
    ap.add_argument("--seconds", type=float, default=8.0, help="simulated driving time (accuracy)")
    args = ap.parse_args(argv)
    setup = load_lidar_setup(None)
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.model)))
    mounts = {name: mount_from_site(model, setup.lidars[name].site, PROFILE.base_frame) for name in ("front", "back")}
    bench_cost(setup, mounts, args.n)
    bench_accuracy(setup, mounts, args.seconds, v=0.25, w=0.65, noise=False)
    bench_accuracy(setup, mounts, args.seconds, v=0.25, w=0.65, noise=True)
    bench_accuracy(setup, mounts, args.seconds, v=0.0, w=0.0, noise=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
