"""Per-message cost of the estimation path, measured side by side.

Times (interleaved, same process): one flow fusion of the onboard estimator
(correction, validity check, prediction, EKF update), one gyro fusion, a bare
prediction step, packing + parsing the OPTICAL_FLOW MAVLink 2 message the
ArduPilot bridge sends, and encoding + decoding the PoseEstimate Arrow message.
Prints median and p99 in microseconds and each median as a ratio of the flow
fusion's.

    python benchmarks/ekf.py [--n 20000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

os.environ.setdefault("MAVLINK20", "1")
from pymavlink.dialects.v20 import ardupilotmega as mavlink  # noqa: E402

from teledora.models.config_files import load_estimation_config, load_profile  # noqa: E402
from teledora.operators.estimation.flow_model import FlowModel  # noqa: E402
from teledora.operators.estimation.flow_odometry import FlowOdometry  # noqa: E402
from teledora.operators.contract.messages import decode, encode  # noqa: E402


class _Sink:
    def write(self, buf: bytes) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="samples per case")
    args = ap.parse_args(argv)
    cfg = load_estimation_config()
    model = FlowModel(cfg.flow_sensor)
    odo = FlowOdometry(model, cfg.ekf, load_profile().odom_frame)
    raw = model.sensor_flow(model.body_flow(0.08, 0.01, 0.3, 0.05))
    tx = mavlink.MAVLink(_Sink(), srcSystem=1, srcComponent=191)
    rx = mavlink.MAVLink(None)
    rng = np.random.default_rng(0)
    stamp = [0]

    def flow_fusion() -> None:
        stamp[0] += 10_000_000
        odo.on_flow(stamp[0], raw + rng.normal(0, 0.02, 2), 200, 0.05)

    def gyro_fusion() -> None:
        stamp[0] += 10_000_000
        odo.on_gyro(stamp[0], (0.0, 0.0, 0.3))

    def prediction() -> None:
        stamp[0] += 10_000_000
        odo.ekf.predict_to(stamp[0])

    def mavlink_flow() -> None:
        msg = mavlink.MAVLink_optical_flow_message(stamp[0] // 1000, 0, 0, 0, 0.0, 0.0, 200, 0.05,
                                                   float(raw[0]), float(raw[1]))
        rx.parse_buffer(msg.pack(tx))

    def arrow_pose() -> None:
        decode("PoseEstimate", encode("PoseEstimate", odo.pose()))

    cases = {"flow fusion (on_flow)": flow_fusion, "gyro fusion (on_gyro)": gyro_fusion,
             "EKF prediction step": prediction, "OPTICAL_FLOW pack+parse": mavlink_flow,
             "PoseEstimate encode+decode": arrow_pose}
    times: dict[str, list[int]] = {k: [] for k in cases}
    for _ in range(200):  # warm-up
        for f in cases.values():
            f()
    for _ in range(args.n):
        for name, f in cases.items():
            t0 = time.perf_counter_ns()
            f()
            times[name].append(time.perf_counter_ns() - t0)
    ref = float(np.median(times["flow fusion (on_flow)"]))
    print(f"{'case':<28} {'median us':>10} {'p99 us':>9} {'ratio':>7}   (n={args.n}, interleaved)")
    for name, t in times.items():
        a = np.asarray(t) / 1000.0
        print(f"{name:<28} {np.median(a):10.1f} {np.percentile(a, 99):9.1f} {np.median(t) / ref:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
