"""Accuracy of the onboard flow EKF against simulated ground truth.

Three drives — a 5.5 m straight line, 30 s spinning in place, and a mixed drive
(forward, arc, strafe, spin, back) — are integrated exactly from a body-twist
profile. The simulated flow sensor and gyro (the operators behind the `flow`
node) turn the truth into reports; the estimator (the operator behind the `ekf`
node) fuses them, once with the sensor's mounting offset modelled and once with
it forgotten. Prints final and max position error and max yaw error.

    python benchmarks/estimation_accuracy.py [--seeds 5] [--markdown] [--imperfect]

``--image`` measures the flow from rendered floor images (OpenCV phase correlation)
instead of the twist, as the `flow` node does with ``--image``.
``--odom`` also fuses simulated wheel odometry (true twist + 0.01 m/s, 0.01 rad/s
noise at 50 Hz), which makes the gyro bias observable.
``--flow-delay-ms D`` gives the simulated sensor a report latency of D ms (the
``flow_sim.delay_ms`` setting, like SITL's SIM_FLOW_DELAY); the estimator fuses
each report at its stamp, without compensating the delay.
``--imperfect`` gives the simulated sensor a 2 % low flow gain (uncorrected by the
scalers) and the gyro a 0.002 rad/s yaw-rate bias, to show what calibration buys.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from teledora.models.config_files import load_estimation_config, load_profile
from teledora.operators.estimation.delay_line import DelayLine
from teledora.operators.estimation.floor_image_flow import FloorCamera, ImageFlowSensor
from teledora.operators.estimation.flow_model import FlowModel, FlowModelConfig
from teledora.operators.estimation.flow_odometry import FlowOdometry
from teledora.operators.estimation.flow_sensor_sim import FlowSensorSim, FlowSimConfig
from teledora.operators.estimation.planar_ekf import EkfConfig
from teledora.operators.geometry import wrap_angle

Twist = tuple[float, float, float]


@dataclass(frozen=True)
class Drive:
    """A named body-twist profile."""

    name: str
    duration_s: float
    twist: Callable[[float], Twist]


def _ramp(t: float, t0: float, t1: float, v: float, ramp_s: float = 1.0) -> float:
    """Trapezoid speed profile: v between t0 and t1 with linear ramps of ramp_s."""
    if t < t0 or t > t1:
        return 0.0
    return v * min(1.0, (t - t0) / ramp_s, (t1 - t) / ramp_s)


def straight_drive(speed_m_s: float = 0.1, distance_m: float = 5.5) -> Drive:
    ramp_s = 1.0
    cruise_s = distance_m / speed_m_s - ramp_s  # area of a trapezoid with ramps of ramp_s
    t1 = 0.5 + cruise_s + 2 * ramp_s
    return Drive(f"straight {distance_m:.1f} m", t1 + 1.0, lambda t: (_ramp(t, 0.5, t1, speed_m_s, ramp_s), 0.0, 0.0))


def spin_drive(rate_rad_s: float = 0.8, duration_s: float = 30.0) -> Drive:
    return Drive(f"spin {duration_s:.0f} s", duration_s + 2.0,
                 lambda t: (0.0, 0.0, _ramp(t, 0.5, 0.5 + duration_s, rate_rad_s, 0.5)))


def mixed_drive() -> Drive:
    def twist(t: float) -> Twist:
        vx = _ramp(t, 0.5, 15.5, 0.1) + _ramp(t, 20.5, 30.5, 0.08) - _ramp(t, 45.5, 55.5, 0.1)
        vy = _ramp(t, 31.0, 41.0, 0.08)
        wz = _ramp(t, 20.5, 30.5, 0.25) + _ramp(t, 41.5, 45.0, -0.8)
        return vx, vy, wz

    return Drive("mixed", 57.0, twist)


@dataclass
class Result:
    final_error_m: float
    max_error_m: float
    max_yaw_error_rad: float
    path_length_m: float


def run_drive(drive: Drive, truth_model: FlowModel, estimator_model: FlowModel, sim_config: FlowSimConfig,
              ekf_config: EkfConfig, truth_hz: float = 500.0, flow_hz: float = 50.0, gyro_hz: float = 100.0,
              camera: FloorCamera | None = None, odom_hz: float = 0.0) -> Result:
    """Simulates one drive and returns the estimator's errors against the truth. With ``camera``
    the flow is measured from rendered floor images instead of computed from the twist."""
    sim = FlowSensorSim(truth_model, sim_config)
    imager = ImageFlowSensor(camera, truth_model.config.offset_m, truth_model.config.orient_yaw_rad) if camera else None
    odo = FlowOdometry(estimator_model, ekf_config, load_profile().odom_frame)
    dt = 1.0 / truth_hz
    flow_every = round(truth_hz / flow_hz)
    gyro_every = round(truth_hz / gyro_hz)
    odom_every = round(truth_hz / odom_hz) if odom_hz > 0 else 0
    odom_rng = np.random.default_rng(sim_config.seed + 1000)
    pose = np.zeros(3)
    poses: DelayLine[tuple[float, float, float]] = DelayLine(round(sim_config.delay_ms * 1e6))  # image path
    max_err = max_yaw = length = 0.0
    steps = int(drive.duration_s * truth_hz)
    for k in range(steps + 1):
        t = k * dt
        vx, vy, wz = drive.twist(t)
        stamp_ns = int(round(t * 1e9))
        sim.add_truth(stamp_ns, vx, vy, wz)
        poses.push(stamp_ns, (float(pose[0]), float(pose[1]), float(pose[2])))
        if k % gyro_every == 0:
            odo.on_gyro(stamp_ns, sim.read_gyro(wz))
        if odom_every and k % odom_every == 0:
            n = odom_rng.normal(0.0, 0.01, 3)
            odo.on_odom(stamp_ns, vx + n[0], vy + n[1], wz + n[2])
        if k % flow_every == 0 and sim.ready(stamp_ns):  # the first reports may still be inside the delay
            r = sim.read_flow(stamp_ns)
            if imager is None:
                odo.on_flow(stamp_ns, (r.flow_rate_x, r.flow_rate_y), r.quality, r.ground_distance_m)
            else:
                poses.release(stamp_ns)
                measured = imager.read(poses.latest[0], *poses.latest[1]) if poses.latest else None
                if measured is not None:
                    odo.on_flow(stamp_ns, measured[:2], measured[2], r.ground_distance_m)
            err = math.hypot(odo.ekf.x[0] - pose[0], odo.ekf.x[1] - pose[1])
            max_err = max(max_err, err)
            max_yaw = max(max_yaw, abs(wrap_angle(odo.ekf.x[2] - pose[2])))
        # exact-enough truth integration (midpoint heading)
        mid = pose[2] + 0.5 * wz * dt
        step = np.array([vx * math.cos(mid) - vy * math.sin(mid), vx * math.sin(mid) + vy * math.cos(mid)]) * dt
        length += float(np.hypot(*step))
        pose[:2] += step
        pose[2] = wrap_angle(pose[2] + wz * dt)
    final = math.hypot(odo.ekf.x[0] - pose[0], odo.ekf.x[1] - pose[1])
    return Result(final, max_err, max_yaw, length)


def load_configs() -> tuple[FlowModelConfig, FlowSimConfig, EkfConfig]:
    cfg = load_estimation_config()
    return cfg.flow_sensor, cfg.flow_sim, cfg.ekf


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="noise seeds per drive (results: median and worst)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--imperfect", action="store_true", help="2 %% flow gain error, 0.002 rad/s gyro bias")
    parser.add_argument("--image", action="store_true", help="flow from rendered floor images (OpenCV)")
    parser.add_argument("--odom", action="store_true", help="also fuse simulated wheel odometry at 50 Hz")
    parser.add_argument("--flow-delay-ms", type=float, default=None, metavar="D",
                        help="flow report latency in ms (default: flow_sim.delay_ms)")
    args = parser.parse_args(argv)
    flow_cfg, sim_cfg, ekf_cfg = load_configs()
    if args.flow_delay_ms is not None:
        sim_cfg = replace(sim_cfg, delay_ms=args.flow_delay_ms)
    if args.imperfect:
        sim_cfg = replace(sim_cfg, gain_x=0.98, gain_y=0.98, gyro_bias_rad_s=0.002)
    truth = FlowModel(flow_cfg)
    camera = None
    if args.image:
        camera = FloorCamera(load_estimation_config().flow_image.camera)
    variants = {"offset modelled": FlowModel(flow_cfg), "offset missing": FlowModel(flow_cfg.without_offset())}
    drives = [straight_drive(), spin_drive(), mixed_drive()]
    rows = []
    for drive in drives:
        for label, est in variants.items():
            res = [run_drive(drive, truth, est, replace(sim_cfg, seed=sim_cfg.seed + s), ekf_cfg, camera=camera,
                             odom_hz=50.0 if args.odom else 0.0)
                   for s in range(args.seeds)]
            final = np.array([r.final_error_m for r in res])
            mx = np.array([r.max_error_m for r in res])
            yaw = np.array([r.max_yaw_error_rad for r in res])
            rows.append((drive.name, label, res[0].path_length_m, np.median(final), final.max(),
                         np.median(mx), mx.max(), np.degrees(np.median(yaw)), np.degrees(yaw.max())))
    if args.markdown:
        print("| drive | sensor offset | path m | final err m (median / worst) | max err m (median / worst) "
              "| max yaw err deg (median / worst) |")
        print("|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.3f} / {r[4]:.3f} | {r[5]:.3f} / {r[6]:.3f} "
                  f"| {r[7]:.2f} / {r[8]:.2f} |")
    else:
        for r in rows:
            print(f"{r[0]:<14} {r[1]:<16} path {r[2]:6.2f} m  final {r[3]:.3f}/{r[4]:.3f} m  "
                  f"max {r[5]:.3f}/{r[6]:.3f} m  yaw {r[7]:.2f}/{r[8]:.2f} deg  (median/worst of {args.seeds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
