"""The lidar outlier filter: detection of flipped distance bytes, false rejections on clean scans.

Both sim lidars (front 5.5 Hz, back 10 Hz, the shipped noise and dropouts)
ray-cast the room of models/alohamini2/scene.xml while the base drives the
demo's 6.4 m loop (models/alohamini2/demo_script.yaml: straight segments at
0.225 m/s, 90-degree turns in place at 0.628 rad/s). Three pipelines per lidar,
each filtered by ``operators/lidar/outlier_filter.py`` with the shipped
settings (or ``--set KEY=VALUE``), scans in order as the node sees them:

* ``sim``: the sim lidar's scans as it publishes them (clean: every rejection
  is a false one);
* ``A1 bytes``: the same turns encoded as RPLIDAR A1 samples, parsed by the
  driver's parser, cut into turns and binned as the hardware node does (clean);
* ``A1 bytes, BER``: the same bytes with one bit flipped in ``--ber`` of them
  (``--repeats`` seeds). Each scan is compared with the scan binned from the
  same decoded samples with their true distances: a ray that differs by more
  than the filter's tolerance is an injected outlier (a return at a wrong
  range, or a return where the truth saw nothing); ``caught`` are those the
  filter rejected. A rejection of a ray equal to its truth is a false one.
  Rays a flip turned into "no return" or "too close" cannot be caught (the
  filter tests returns only) and are listed apart, as are flips within the
  tolerance.

    python benchmarks/lidar_outliers.py [--ber 1e-3] [--repeats 3] [--set previous_window_deg=8]
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field, replace

import mujoco
import numpy as np

from teledora import models
from teledora.fakes.rplidar_a1 import encode_sample
from teledora.models.config_files import load_lidar_setup
from teledora.nodes.lidar.lidar_sim import SimLidarBackend
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.outlier_filter import OutlierFilter, OutlierFilterConfig
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory
from teledora.operators.lidar.revolution_assembler import RevolutionAssembler
from teledora.operators.lidar.rplidar_protocol import SAMPLE_LEN, ContinuityLimits, SampleStreamParser
from teledora.operators.lidar.scan_binning import Revolution, bin_revolution

V_M_S, W_RAD_S = 0.225, 0.628
# the demo's loop from (0, 0) facing +x: (drive to x, y) or (turn to yaw deg)
PROFILE = models.load_profile()
LOOP = [("drive", (1.0, 0.0)), ("turn", 90), ("drive", (1.0, 0.6)), ("turn", 180), ("drive", (-0.9, 0.6)),
        ("turn", 270), ("drive", (-0.9, -0.7)), ("turn", 360), ("drive", (0.0, -0.7)), ("turn", 450),
        ("drive", (0.0, 0.0)), ("turn", 360)]


T0_S = 1.0  # trajectory start


def loop_poses(rate_hz: float = 100.0) -> PoseHistory:
    """The demo loop as a 100 Hz pose history (constant speeds, stops between segments)."""
    x, y, yaw, t = 0.0, 0.0, 0.0, T0_S
    samples = [OdometrySample(int(t * 1e9), Pose2D(x, y, yaw), 0.0, 0.0, 0.0)]
    dt = 1.0 / rate_hz
    for kind, goal in LOOP:
        if kind == "drive":
            gx, gy = goal
            dist = math.hypot(gx - x, gy - y)
            steps = max(1, int(round(dist / V_M_S / dt)))
            for k in range(1, steps + 1):
                f = k / steps
                t += dt
                samples.append(OdometrySample(int(round(t * 1e9)), Pose2D(x + f * (gx - x), y + f * (gy - y), yaw),
                                              V_M_S, 0.0, 0.0))
            x, y = gx, gy
        else:
            target = math.radians(goal)
            steps = max(1, int(round(abs(target - yaw) / W_RAD_S / dt)))
            w = math.copysign(W_RAD_S, target - yaw)
            for k in range(1, steps + 1):
                t += dt
                samples.append(OdometrySample(int(round(t * 1e9)), Pose2D(x, y, yaw + k / steps * (target - yaw)),
                                              0.0, 0.0, w))
            yaw = target
    poses = PoseHistory(max_age_s=t + 10.0, max_extrapolation_s=0.05)
    for s in samples:
        poses.add(s)
    return poses


def cast_turns(backend: SimLidarBackend, poses: PoseHistory) -> list[Revolution]:
    start, end = int(T0_S * 1e9), poses.newest.stamp_ns
    turns = []
    while start + backend.period_ns <= end:
        turns.append(backend.cast_turn(start, poses))
        start += backend.period_ns
    return turns


@dataclass
class Tally:
    scans: int = 0
    rays: int = 0  # returns tested (finite, within the limits)
    rejected: int = 0
    false: int = 0
    injected: int = 0
    caught: int = 0
    injected_1m: int = 0  # of those, 1 m or more off
    caught_1m: int = 0
    to_no_return: int = 0
    within_tolerance: int = 0
    cpu_s: list = field(default_factory=list)  # the filter's CPU time per scan
    flipped_distance_samples: int = 0


def filter_tally(scans, cfg: OutlierFilterConfig, truths=None, tally: Tally | None = None) -> Tally:
    tally = tally or Tally()
    filt = OutlierFilter(cfg)
    for n, scan in enumerate(scans):
        t0 = time.thread_time()
        res = filt.apply(scan)
        tally.cpu_s.append(time.thread_time() - t0)
        r = scan.ranges.astype(np.float64)
        valid = np.isfinite(r) & (r >= scan.range_min) & (r <= scan.range_max)
        tally.scans += 1
        tally.rays += int(valid.sum())
        rejected = np.zeros(len(r), dtype=bool)
        rejected[res.rejected] = True
        tally.rejected += int(rejected.sum())
        if truths is None:
            tally.false += int(rejected.sum())
            continue
        t = truths[n].ranges.astype(np.float64)
        same = (r == t) | (np.isnan(r) & np.isnan(t))
        # the truth as the filter reads a ray: +Inf is any range beyond range_max, -Inf any below range_min
        t_lo = np.where(np.isposinf(t), scan.range_max, np.where(np.isneginf(t), -np.inf, t))
        t_hi = np.where(np.isposinf(t), np.inf, np.where(np.isneginf(t), scan.range_min, t))
        with np.errstate(invalid="ignore"):
            closest = np.clip(r, t_lo, t_hi)
            off = np.where(np.isnan(t), np.inf, np.abs(r - closest))
            beyond = valid & (off > cfg.range_tolerance_m + cfg.range_tolerance_fraction * np.minimum(r, closest))
        injected = valid & ~same & beyond
        tally.injected += int(injected.sum())
        tally.caught += int((injected & rejected).sum())
        big = injected & (off >= 1.0)
        tally.injected_1m += int(big.sum())
        tally.caught_1m += int((big & rejected).sum())
        tally.false += int((rejected & same).sum())
        tally.to_no_return += int((np.isfinite(t) & ~np.isfinite(r)).sum())
        tally.within_tolerance += int((~same & np.isfinite(r) & ~injected).sum())
    return tally


def a1_bytes(turns: list[Revolution]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """The turns as one A1 sample stream; each sample's true distance (m) and time (ns)."""
    out, dist, times = [], [], []
    for rev in turns:
        m = len(rev)
        for k in range(m):
            d_m = float(rev.distance_m[k])
            out.append(encode_sample(k == 0, int(rev.quality[k]), float(rev.angle_deg[k]), d_m * 1000.0))
        q2 = np.clip(np.round(np.asarray(rev.distance_m) * 4000.0), 0, 0xFFFF)
        dist.append(q2 / 4000.0)
        times.append(rev.start_ns + np.round((np.arange(m) + 0.5) / m * rev.scan_time_s * 1e9).astype(np.int64))
    return b"".join(out), np.concatenate(dist), np.concatenate(times)


def parse_and_bin(stream: bytes, true_m: np.ndarray, times: np.ndarray, setup, frame_id: str):
    """Scans as the hardware node bins them, and the same samples binned with their true distances."""
    hw = setup.hardware
    parser = SampleStreamParser(limits=ContinuityLimits(hw.max_angle_step_deg, hw.max_angle_backstep_deg))
    batch = parser.feed(stream)
    index = (batch.end_offset - SAMPLE_LEN) // SAMPLE_LEN  # flips move no byte
    flipped = int(np.count_nonzero(np.abs(batch.distance_m - true_m[index]) > 1e-9))
    out = []
    for dist in (batch.distance_m, true_m[index]):
        asm = RevolutionAssembler(hw.min_samples_per_revolution, hw.max_samples_per_revolution, 1.0 / hw.min_scan_rate_hz)
        revs = asm.add(batch.start, batch.angle_deg, dist, batch.quality, times[index])
        out.append([bin_revolution(r, setup.grid, frame_id) for r in revs])
    return out[0], out[1], flipped


def flip_bits(stream: bytes, ber: float, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    data = bytearray(stream)
    for i in np.flatnonzero(rng.random(len(data)) < ber):
        data[i] ^= 1 << int(rng.integers(8))
    return bytes(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ber", type=float, default=1e-3, help="fraction of bytes with one bit flipped")
    ap.add_argument("--repeats", type=int, default=3, help="bit-error seeds per lidar")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an outlier_filter setting")
    args = ap.parse_args()
    setup = load_lidar_setup()
    cfg = setup.outlier_filter
    for item in args.set:
        key, value = item.split("=", 1)
        cfg = replace(cfg, **{key: float(value)})
    print(f"outlier_filter: {cfg}")
    scene = mujoco.MjModel.from_xml_path(str(models.path(setup.scene)))
    poses = loop_poses()
    print(f"trajectory: the demo loop, {poses.newest.stamp_ns * 1e-9 - T0_S:.1f} s")
    rows = []
    for name in ("front", "back"):
        unit = setup.lidars[name]
        backend = SimLidarBackend(scene, unit.site, setup.grid, setup.sim, unit.sim_scan_rate_hz, unit.frame_id,
                                  PROFILE.base_frame, PROFILE.base_joints)
        turns = cast_turns(backend, poses)
        sim_scans = [bin_revolution(r, setup.grid, unit.frame_id) for r in turns]
        rows.append((name, "sim", filter_tally(sim_scans, cfg)))
        stream, true_m, times = a1_bytes(turns)
        clean, _, _ = parse_and_bin(stream, true_m, times, setup, unit.frame_id)
        rows.append((name, "A1 bytes", filter_tally(clean, cfg)))
        tally = Tally()
        for seed in range(args.repeats):
            scans, truths, flipped = parse_and_bin(flip_bits(stream, args.ber, seed), true_m, times, setup, unit.frame_id)
            tally.flipped_distance_samples += flipped
            filter_tally(scans, cfg, truths, tally)
        rows.append((name, f"A1 bytes, BER {args.ber:g} x{args.repeats}", tally))

    print()
    print("| lidar, pipeline | scans | returns | injected | caught | missed | detection | >= 1 m off: caught | false rejections |"
          " false rate | to no-return | within tolerance |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for name, kind, t in rows:
        flips = t.flipped_distance_samples > 0

        def shown(v):
            return v if flips else "-"

        det = f"{100.0 * t.caught / t.injected:.1f} %" if t.injected else "-"
        print(f"| {name} {kind} | {t.scans} | {t.rays} | {shown(t.injected)} | {shown(t.caught)} | "
              f"{shown(t.injected - t.caught)} | {det} | {shown(f'{t.caught_1m} / {t.injected_1m}')} | {t.false} | "
              f"{1e6 * t.false / max(t.rays, 1):.0f} ppm | {shown(t.to_no_return)} | {shown(t.within_tolerance)} |")
        if flips:
            notes.append(f"{name} {kind}: {t.flipped_distance_samples} decoded samples carried a flipped distance bit")
    print()
    print("\n".join(notes))
    for name, kind, t in rows:
        ms = 1e3 * np.asarray(t.cpu_s)
        print(f"filter CPU per scan, {name} {kind}: median {np.median(ms):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms")


if __name__ == "__main__":
    main()
