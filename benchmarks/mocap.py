"""Motion capture ingest and evaluation: costs and clock-mapping accuracy.

1. Parse cost: FRAME_OF_DATA with 1 rigid body vs a busy frame (20 bodies,
   100 labeled markers), and the full datagram → MocapPose (+ contract encode)
   step, against the 8.33 ms frame period at 120 Hz.
2. Loopback stamping: the fake Motive streams at 120 Hz on 127.0.0.1 to the
   node's backend and stream logic (no dora); each pose's stamp is compared
   with the frame's true mid-exposure host time, for three stampings side by
   side: echo-mapped (what the node does), transmit-stamp-mapped (fallback),
   and the naive arrival time.
3. Evaluation cost of a 10-minute run (estimate 50 Hz, truth 120 Hz):
   interpolate vs nearest association, with the lag search, and with the
   distance travelled summed over raw steps (``--path-step 0``) instead of
   the decimated path.

    python benchmarks/mocap.py [--seconds 5] [--repeat 2000] [--only parse|loopback|eval]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from teledora.fakes.motive import FakeMotive  # noqa: E402

from teledora.devices.mocap.natnet_client import NatNetClient  # noqa: E402
from teledora.models.config_files import load_mocap_config, load_profile  # noqa: E402
from teledora.operators.mocap import natnet_frame as nf  # noqa: E402
from teledora.operators.mocap import natnet_protocol as nn  # noqa: E402
from teledora.operators.contract.messages import encode  # noqa: E402
from teledora.operators.mocap.mocap_frames import MocapFrameTransform  # noqa: E402
from teledora.operators.mocap.mocap_pose_stream import MocapPoseStream, RigidBodySelector  # noqa: E402
from teledora.operators.estimation.odometry_evaluation import EvaluationConfig, evaluate_odometry  # noqa: E402
from teledora.operators.estimation.trajectory_association import Trajectory  # noqa: E402

V41 = (4, 1, 0, 0)
MOCAP = load_mocap_config()
PERIOD_US = 1e6 / 120


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return out


def parse_costs(repeat: int) -> None:
    body = nf.RigidBodySample(1, (1.0, 0.2, -2.0), (0.0, 0.0, 0.0, 1.0), 0.0002, True)
    small = nn.split_packet(nf.build_frame_of_data(nf.FrameOfData(1, (body,)), V41)).payload
    many = tuple(nf.RigidBodySample(i, (1.0, 0.2, -2.0), (0.0, 0.0, 0.0, 1.0), 0.0002, True) for i in range(20))
    markers = tuple(nf.LabeledMarker(i, (0.1, 0.2, 0.3), 0.014) for i in range(100))
    busy = nn.split_packet(nf.build_frame_of_data(nf.FrameOfData(1, many, labeled_markers=markers), V41)).payload
    stream = MocapPoseStream(RigidBodySelector(id=1), MocapFrameTransform(MOCAP.frame), load_profile().world_frame)
    stream.handle(nn.build_server_info(nn.ServerInfo("Motive", (3, 1, 0, 0), V41, 10_000_000, 1511, False, "0.0.0.0")), 0)
    counter = iter(range(1, 10**9))

    def full_step() -> None:
        k = next(counter)
        data = nf.build_frame_of_data(nf.FrameOfData(k, (body,), stamp_camera_mid_exposure=k, stamp_transmit=k + 1), V41)
        for pose in stream.handle(data, k).poses:
            encode("MocapPose", pose)

    rows = [
        ("parse 1 body", timed(lambda: nf.parse_frame_of_data(small, V41), repeat), len(small)),
        ("parse 20 bodies+100 markers", timed(lambda: nf.parse_frame_of_data(busy, V41), repeat), len(busy)),
        ("datagram->MocapPose+encode", timed(full_step, repeat), len(small) + 4),
    ]
    print("## parse cost (µs)")
    for name, us, size in rows:
        med = statistics.median(us)
        print(f"{name:30s} {size:5d} B  median {med:7.1f}  p99 {pct(us, 99):7.1f}  "
              f"= {100 * med / PERIOD_US:.2f}% of the 120 Hz period")
    print(f"busy/small parse ratio: {statistics.median(rows[1][1]) / statistics.median(rows[0][1]):.1f}x")


def loopback(seconds: float) -> None:
    with FakeMotive(exposure_to_transmit_s=0.004) as fake:
        backend = NatNetClient(replace(MOCAP.natnet, server_address="127.0.0.1", command_port=fake.command_port,
                                       local_address="127.0.0.1"))
        backend.connect()
        backend.write(nn.build_connect("bench", V41))
        backend.keep_alive()
        stream = MocapPoseStream(RigidBodySelector(id=3), MocapFrameTransform(MOCAP.frame), load_profile().world_frame)
        transmit_only = MocapPoseStream(RigidBodySelector(id=3), MocapFrameTransform(MOCAP.frame), load_profile().world_frame)
        fake.wait_for_client()
        n = int(seconds * 120)
        poses = [((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))] * n
        sender = threading.Thread(target=fake.stream, args=(poses,), kwargs={"period_s": 1 / 120})
        sender.start()
        echo_rtt, stamps, plain, arrivals = [], {}, {}, {}
        next_echo = 0.0
        drain_until = None
        while True:
            now = time.monotonic()
            if not sender.is_alive():
                drain_until = drain_until or now + 0.3
                if now > drain_until:
                    break
            if stream.connected and now >= next_echo:
                backend.write(nn.build_echo_request(time.time_ns()))
                next_echo = now + 0.1
            for arrival, data in backend.read(0.002):
                pkt = nn.split_packet(data)
                if pkt.message_id == nn.MessageId.ECHO_RESPONSE:
                    sent, _ = nn.parse_echo_response(pkt.payload)
                    echo_rtt.append((arrival - sent) / 1e3)
                if pkt.message_id in (nn.MessageId.SERVER_INFO, nn.MessageId.FRAME_OF_DATA):
                    transmit_only_poses = transmit_only.handle(data, arrival).poses
                    for p in transmit_only_poses:
                        plain[p["frame_number"]] = p["stamp_ns"]
                for p in stream.handle(data, arrival).poses:
                    stamps[p["frame_number"]] = p["stamp_ns"]
                    arrivals[p["frame_number"]] = arrival
        sender.join()
        backend.close()
    truth = {s.frame_number: s.exposure_host_ns for s in fake.sent}
    warm = [k for k in stamps if k > 24]  # after the first echoes
    rows = [
        ("echo-mapped mid-exposure", [(stamps[k] - truth[k]) / 1e3 for k in warm]),
        ("transmit-mapped", [(plain[k] - truth[k]) / 1e3 for k in warm if k in plain]),
        ("arrival time (naive)", [(arrivals[k] - truth[k]) / 1e3 for k in warm]),
    ]
    print(f"\n## loopback stamping, {len(warm)} frames at 120 Hz (stamp - true exposure, µs)")
    for name, err in rows:
        print(f"{name:26s} median {statistics.median(err):8.1f}  p99 {pct(err, 99):8.1f}  "
              f"max|e| {max(abs(e) for e in err):8.1f}")
    print(f"echo round trip: median {statistics.median(echo_rtt):.1f} µs, p99 {pct(echo_rtt, 99):.1f} µs "
          f"({len(echo_rtt)} echoes)")
    naive = statistics.median(abs(e) for e in rows[2][1])
    mapped = statistics.median(abs(e) for e in rows[0][1])
    print(f"naive/echo median |error| ratio: {naive / max(mapped, 1e-3):.0f}x")


def eval_costs() -> None:
    minutes = 10
    t_truth = np.arange(0, minutes * 60, 1 / 120)
    t_est = np.arange(0.5, minutes * 60 - 0.5, 1 / 50)

    def traj(t: np.ndarray, lag: float = 0.0) -> Trajectory:
        s = t - lag
        x, y = 2 * np.sin(0.2 * s), np.sin(0.4 * s)
        yaw = np.arctan2(0.4 * np.cos(0.4 * s), 0.4 * np.cos(0.2 * s))
        return Trajectory.from_planar((t * 1e9).astype(np.int64), x, y, yaw)

    truth, est = traj(t_truth), traj(t_est, lag=0.03)
    print(f"\n## evaluation of a {minutes}-minute run ({len(est)} estimate, {len(truth)} truth samples)")
    results = {}
    for name, cfg in (
        ("interpolate, se2", EvaluationConfig()),
        ("interpolate, se2, raw path", EvaluationConfig(path_min_step_m=0.0)),
        ("nearest, se2", EvaluationConfig(association="nearest")),
        ("interpolate, se2, lag search", EvaluationConfig(estimate_lag=True, max_lag_s=0.2, lag_step_s=0.01)),
    ):
        t0 = time.perf_counter()
        r = evaluate_odometry(est, truth, cfg).summary()
        results[name] = time.perf_counter() - t0
        print(f"{name:30s} {results[name]:6.2f} s  APE rmse {r['ape_m']['rmse'] * 1e3:7.3f} mm  "
              f"lag {r['association']['lag_s'] * 1e3:6.2f} ms")
    print(f"lag search / fixed lag time ratio: {results['interpolate, se2, lag search'] / results['interpolate, se2']:.0f}x")
    print(f"decimated / raw path time ratio: {results['interpolate, se2'] / results['interpolate, se2, raw path']:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="loopback streaming time")
    ap.add_argument("--repeat", type=int, default=2000, help="parse repetitions")
    ap.add_argument("--only", choices=("parse", "loopback", "eval"), default=None, help="run one section")
    args = ap.parse_args()
    if args.only in (None, "parse"):
        parse_costs(args.repeat)
    if args.only in (None, "loopback"):
        loopback(args.seconds)
    if args.only in (None, "eval"):
        eval_costs()


if __name__ == "__main__":
    main()
