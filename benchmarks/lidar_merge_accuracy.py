"""Merged-scan accuracy and coverage against ray-cast ground truth, new merger vs the previous method.

The two sim lidars (front 5.5 Hz, back 10 Hz, noise and dropouts off, one
sample per grid sector so each lidar's own scan is exact; the last three
rows ("A1") use the shipped 2000 samples/s instead) ray-cast the room of
models/alohamini2/scene.xml while the base turns in place at w; odometry is
ground truth at 100 Hz; scans are paired as the node pairs them. Each merged
scan is compared, direction by direction, with a scan cast independently with
``mujoco.mj_ray`` from the base centre at the merged stamp and at the lidars'
height, with the robot moved out of the room. Printed per case and method:

* p50 / p95 / p99 absolute range error (cm) over directions finite in both
  (a method that leaves more directions empty is scored on fewer, easier ones);
* empty directions (NaN: no lidar looked there) in % of the output rays;
* the widest run of adjacent empty directions (the worst blind wedge, deg);
* merge cost per pair: CPU time of the merging thread, median / p99 ms (both
  methods interleaved in one run, so both see the same machine state).

Methods: ``new`` is the shipped merger (interpolating resampling, previous
scans fill uncovered directions, self-filter from the model at the home
pose); ``old`` is the previous method, kept as ``resampling: nearest`` with
no history (each return into its nearest output direction, the pair only).

    python benchmarks/lidar_merge_accuracy.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace

import mujoco
import numpy as np

from teledora import models
from teledora.models.config_files import load_lidar_setup
from teledora.nodes.lidar.lidar_sim import SimLidarBackend
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.body_filter import RobotBodyFilter
from teledora.operators.lidar.lidar_mounts import mount_from_site
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory
from teledora.operators.lidar.scan_binning import ScanGrid
from teledora.operators.lidar.scan_merger import ScanMerger
from teledora.operators.lidar.scan_pairing import ScanPairer

PROFILE = models.load_profile()
X0, Y0 = -0.8, -0.3  # clear of the furniture


def widest_nan_run_deg(ranges: np.ndarray) -> float:
    nan = np.isnan(ranges)
    if not nan.any():
        return 0.0
    if nan.all():
        return 360.0
    start = int(np.argmin(nan))  # begin on a seen direction so runs do not wrap
    run = best = 0
    for v in np.roll(nan, -start):
        run = run + 1 if v else 0
        best = max(best, run)
    return best * 360.0 / len(ranges)


def simulate(setup, scene, rays: dict[str, int], w: float, seconds: float, exact: bool = True):
    sim = replace(setup.sim, range_noise_std_m=0.0, range_noise_fraction=0.0, dropout_probability=0.0)
    lidars = {}
    for name, n in rays.items():
        rate = setup.lidars[name].sim_scan_rate_hz
        grid = ScanGrid(n, setup.grid.range_min_m, setup.grid.range_max_m)
        sps = n * rate if exact else sim.samples_per_second
        lidars[name] = SimLidarBackend(scene, setup.lidars[name].site, grid, replace(sim, samples_per_second=sps),
                                       rate, setup.lidars[name].frame_id, PROFILE.base_frame, PROFILE.base_joints)
    odom = PoseHistory(max_age_s=seconds + 1)
    scans = []
    for k in range(int(seconds * 100) + 1):
        t = k * 0.01
        odom.add(OdometrySample(int(round(t * 1e9)), Pose2D(X0, Y0, w * t), 0.0, 0.0, w))
        for name, lidar in lidars.items():
            scans += [(s.stamp_ns, name, s) for s in lidar.read(odom)]
    scans.sort(key=lambda e: e[0])
    pairer = ScanPairer(("front", "back"), setup.merger.tolerance_s, setup.merger.silence_timeout_s)
    groups = []
    for stamp, name, scan in scans:
        groups += [g for g in pairer.offer(name, scan, stamp) if not g.alone]
    return groups, odom


def truth_ranges(scene, data, qadr, stamp_ns, w, z, angles) -> np.ndarray:
    data.qpos[qadr] = (50.0, 50.0, 0.0)  # the robot out of the room
    mujoco.mj_kinematics(scene, data)
    yaw = w * stamp_ns * 1e-9
    out = np.full(len(angles), np.inf)
    gid = np.zeros(1, dtype=np.int32)
    origin = np.array([X0, Y0, z])
    for i, a in enumerate(angles):
        r = mujoco.mj_ray(scene, data, origin, np.array([math.cos(yaw + a), math.sin(yaw + a), 0.0]), None, 1, -1, gid)
        if r >= 0:
            out[i] = r
    return out


def run_case(setup, model, scene, mounts, rays, w, seconds, mergers, exact=True):
    groups, odom = simulate(setup, scene, rays, w, seconds, exact)
    data = mujoco.MjData(scene)
    qadr = [int(scene.jnt_qposadr[mujoco.mj_name2id(scene, mujoco.mjtObj.mjOBJ_JOINT, j)]) for j in ("base_x", "base_y", "base_yaw")]
    stats = {m: {"err": [], "empty": [], "wedge": [], "ms": []} for m in mergers}
    for m in mergers.values():
        m.reset_history()
        m.merge(groups[0].scans, odom)  # the first pair may start before odometry: it only primes the history
    for g in groups[1:]:
        for name, merger in mergers.items():  # interleaved: the same machine state for both
            t0 = time.thread_time_ns()  # CPU time: what the merge costs, not how busy the machine is
            res = merger.merge(g.scans, odom)
            stats[name]["ms"].append((time.thread_time_ns() - t0) * 1e-6)
            s = res.scan
            truth = truth_ranges(scene, data, qadr, s.stamp_ns, w, mounts["front"].z, s.angles())
            ok = np.isfinite(s.ranges) & np.isfinite(truth)
            stats[name]["err"].append(np.abs(s.ranges[ok] - truth[ok]))
            stats[name]["empty"].append(np.mean(np.isnan(s.ranges)))
            stats[name]["wedge"].append(widest_nan_run_deg(s.ranges))
    label = f"{rays['front']}+{rays['back']}" + ("" if exact else " A1")
    for name, st in stats.items():
        e = np.concatenate(st["err"]) * 100
        print(f"{label:>13} {w:>+5.1f} {name:>4} {len(groups) - 1:>6} {np.median(e):>7.3f} {np.percentile(e, 95):>7.3f} {np.percentile(e, 99):>7.2f} "
              f"{np.mean(st['empty']) * 100:>8.2f} {np.max(st['wedge']):>9.1f} {np.median(st['ms']):>8.2f} "
              f"{np.percentile(st['ms'], 99):>7.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="simulated time per case")
    args = ap.parse_args(argv)
    setup = load_lidar_setup(None)
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.model)))
    scene = mujoco.MjModel.from_xml_path(str(models.path(setup.scene)))
    mounts = {name: mount_from_site(model, setup.lidars[name].site, PROFILE.base_frame) for name in ("front", "back")}
    cfg = setup.merger
    bodies = RobotBodyFilter(model, cfg.self_filter_padding_m, PROFILE.base_frame, PROFILE.base_joints)
    mergers = {
        "old": ScanMerger(PROFILE.base_frame, mounts, cfg.footprint, cfg.compensation, resampling="nearest", history_max_age_s=0.0),
        "new": ScanMerger(PROFILE.base_frame, mounts, cfg.footprint, cfg.compensation, resampling="interpolate",
                          max_gap_rad=math.radians(cfg.max_gap_deg),
                          breakpoint_angle_rad=math.radians(cfg.breakpoint_angle_deg),
                          breakpoint_noise_m=cfg.breakpoint_noise_m, history_max_age_s=cfg.history_max_age_s,
                          body_filter=bodies),
    }
    print(f"sim lidars front 5.5 Hz + back 10 Hz in scene.xml, noise off, turning in place, {args.seconds:.0f} s per case")
    print(f"{'rays':>13} {'w':>5} {'meth':>4} {'pairs':>6} {'p50 cm':>7} {'p95 cm':>7} {'p99 cm':>7} {'empty %':>8} "
          f"{'wedge deg':>9} {'cpu p50':>8} {'cpu p99':>7}")
    for rays in ({"front": 360, "back": 360}, {"front": 1440, "back": 1440}):
        for w in (0.0, 2.0, -2.0):
            run_case(setup, model, scene, mounts, rays, w, args.seconds, mergers)
    for w in (0.0, 2.0, -2.0):
        run_case(setup, model, scene, mounts, {"front": 1440, "back": 360}, w, args.seconds, mergers)
    # the shipped sampling: 2000 samples/s binned on the 1-degree grid (364 per front
    # turn, 200 per back turn, so the back scan has ~160 empty sectors), each sample
    # reported at its sector's centre (up to 0.5 deg off: the driver's grid, not the merger's)
    for w in (0.0, 2.0, -2.0):
        run_case(setup, model, scene, mounts, {"front": 360, "back": 360}, w, args.seconds, mergers, exact=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
