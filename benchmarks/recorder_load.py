"""Recorder load and burst benchmarks.

    python benchmarks/recorder_load.py offline            # per-message cost, no dora
    python benchmarks/recorder_load.py burst              # 10,000 messages as fast as possible, under dora
    python benchmarks/recorder_load.py load --duration 60 # sim dataflow + two 640x480 cameras at 30 Hz
    python benchmarks/recorder_load.py load --cameras-only  # the two cameras and the recorder alone
    python benchmarks/recorder_load.py load --frames rgb8   # the cameras send raw RGB (0.92 MB a frame)

``offline`` feeds the recorder's event loop directly and prints the median and
p99 cost per message for small contract messages, 640x480 RGB images and
640x480 JPEG frames (as the cameras send them).
``burst`` runs a producer that sends 10,000 messages in a tight loop to the
recorder, once with the dora default backpressure queue and once with
``queue_size: 10000``, and prints what each recorded. ``load`` runs the sim
dataflow plus a synthetic two-camera node, compares what was published with
what was recorded, and prints the recorder's CPU use and disk throughput.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WIDTH, HEIGHT = 640, 480


# --------------------------------------------------------------------------- nodes run by dora


def camera_node() -> None:
    """Two synthetic 640x480 cameras at 30 Hz, JPEG frames (or raw RGB with
    BENCH_FRAMES=rgb8); writes its send counts at the end."""
    from dora import Node

    from teledora.operators.contract.messages import image_metadata

    duration_s = float(os.environ.get("BENCH_DURATION_S", "60"))
    rate_hz = float(os.environ.get("BENCH_RATE_HZ", "30"))
    encoding = os.environ.get("BENCH_FRAMES", "jpeg")
    cameras = ("chest", "top_front")
    frames = _frames(encoding, 30)
    node = Node()
    sent = dict.fromkeys(cameras, 0)
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < duration_s:
        for cam in cameras:
            meta = image_metadata(width=WIDTH, height=HEIGHT, encoding=encoding, camera=cam, stamp_ns=time.time_ns(), fx=500, fy=500, cx=320, cy=240)
            meta["seq"] = sent[cam]
            node.send_output(cam, pa.array(frames[k % len(frames)]), meta)
            sent[cam] += 1
        k += 1
        time.sleep(max(0.0, start + k / rate_hz - time.monotonic()))
    Path(os.environ["BENCH_COUNTS"]).write_text(json.dumps(sent))


def _frames(encoding: str, n: int) -> list[np.ndarray]:
    """``n`` distinct 640x480 frames: flat raw RGB, or JPEGs of a detailed picture (tens of kB each)."""
    if encoding == "rgb8":
        return [np.full(WIDTH * HEIGHT * 3, k * 8, dtype=np.uint8) for k in range(n)]
    from teledora.fakes.mjpeg_camera import FakeMjpegCamera

    camera = FakeMjpegCamera(WIDTH, HEIGHT, textured=True)
    return [np.frombuffer(camera.jpeg(k), np.uint8) for k in range(n)]


def burst_node() -> None:
    """Sends N LiftCommand messages as fast as it can."""
    from dora import Node

    from teledora.operators.contract.messages import encode

    n = int(os.environ.get("BENCH_BURST", "10000"))
    node = Node()
    t0 = time.perf_counter()
    for i in range(n):
        node.send_output("out", encode("LiftCommand", {"stamp_ns": time.time_ns(), "velocity_m_s": float(i)}), {"seq": i})
    print(f"burst sent {n} in {time.perf_counter() - t0:.2f} s", flush=True)


# --------------------------------------------------------------------------- offline


class _FeedNode:
    def __init__(self, events: list[dict]) -> None:
        self.events = events
        self.i = 0
        self.marks: list[float] = []

    def next(self, timeout=None):
        self.marks.append(time.perf_counter())
        if self.i >= len(self.events):
            return None
        ev = self.events[self.i]
        self.i += 1
        return ev

    def drain(self):
        return []

    def try_recv(self):
        return None

    def send_output(self, *a, **k):
        pass

    def log(self, *a, **k):
        pass


def _per_message_us(events: list[dict]) -> list[float]:
    from teledora.nodes.recording import recorder
    node = _FeedNode(events)
    with tempfile.TemporaryDirectory() as tmp:
        stdout = sys.stdout
        sys.stdout = open(os.devnull, "w")
        try:
            recorder.main(["--run-dir", str(Path(tmp) / "run")], node=node)
        finally:
            sys.stdout.close()
            sys.stdout = stdout
    marks = node.marks
    return [(b - a) * 1e6 for a, b in zip(marks[1:-1], marks[2:-1])]


def offline(n: int) -> None:
    from teledora.operators.contract.messages import encode, image_metadata

    now = dt.datetime.now(dt.timezone.utc)
    small = [
        {"type": "INPUT", "id": "teleop__lift_cmd", "value": encode("LiftCommand", {"stamp_ns": i, "velocity_m_s": 0.1}), "metadata": {"timestamp": now, "seq": i}}
        for i in range(n)
    ]
    frame = pa.array(np.zeros(WIDTH * HEIGHT * 3, dtype=np.uint8))
    meta = image_metadata(width=WIDTH, height=HEIGHT, encoding="rgb8", camera="chest", stamp_ns=1, fx=1, fy=1, cx=1, cy=1)
    images = [{"type": "INPUT", "id": "renderer__chest", "value": frame, "metadata": dict(meta, timestamp=now)} for _ in range(max(n // 20, 50))]
    jpegs = _frames("jpeg", 30)
    jpeg_meta = dict(meta, encoding="jpeg")
    jpeg_events = [{"type": "INPUT", "id": "cameras__chest", "value": pa.array(jpegs[i % 30]),
                    "metadata": dict(jpeg_meta, timestamp=now)} for i in range(max(n // 20, 50))]
    results = {}
    for name, events in (("small contract message", small), ("640x480 rgb8 image", images),
                         (f"640x480 jpeg ({np.mean([len(j) for j in jpegs]) / 1e3:.0f} kB)", jpeg_events)):
        us = _per_message_us(events)
        us.sort()
        med, p99, mean = statistics.median(us), us[int(0.99 * (len(us) - 1))], statistics.fmean(us)
        results[name] = mean
        print(
            f"{name:24s} n={len(us):6d}  median {med:8.1f} us  p99 {p99:9.1f} us  mean (flushes included) {mean:8.1f} us"
            f"  -> {1e6 / mean:7.0f} msg/s on one core"
        )
    ratio = results["640x480 rgb8 image"] / results["small contract message"]
    mb_s = WIDTH * HEIGHT * 3 / results["640x480 rgb8 image"]
    print(f"image / small mean cost ratio: {ratio:.1f}x; image throughput {mb_s:.0f} MB/s")


# --------------------------------------------------------------------------- dora runs


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, MUJOCO_GL="egl", **extra)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _recorder_entry(topics: dict[str, str], queue_size: int | None) -> dict:
    inputs = {}
    for topic, source in topics.items():
        spec = {"source": source, "queue_policy": "backpressure"}
        if queue_size:
            spec["queue_size"] = queue_size
        inputs[topic] = spec
    return {"id": "recorder", "path": str(REPO / "nodes" / "recording" / "recorder.py"), "inputs": inputs, "outputs": ["diagnostics"]}


def burst(n: int) -> None:
    from teledora.recording import RunReader

    for label, queue_size in (("default backpressure queue", None), ("queue_size: 10000", 10000)):
        with tempfile.TemporaryDirectory() as tmp:
            flow = {
                "nodes": [
                    {"id": "burst", "path": str(Path(__file__).resolve()), "args": "burst-node", "outputs": ["out"]},
                    _recorder_entry({"burst__out": "burst/out"}, queue_size),
                ]
            }
            path = Path(tmp) / "burst.yml"
            path.write_text(yaml.safe_dump(flow))
            run = Path(tmp) / "run"
            out = subprocess.run([str(BIN / "dora"), "run", str(path)], cwd=tmp, env=_env(TELEDORA_RUN_DIR=str(run), BENCH_BURST=str(n)), capture_output=True, text=True, timeout=300)
            sent_line = next((line for line in out.stdout.splitlines() if "burst sent" in line), "?")
            table = RunReader(run).read_topic("burst__out").table
            seqs = [json.loads(m)["seq"] for m in table.column("metadata").to_pylist()]
            drops = out.stdout.count("hard cap") + out.stderr.count("hard cap")
            print(
                f"{label:28s} recorded {table.num_rows:6d}/{n}  lost {n - table.num_rows:6d}  "
                f"in order: {seqs == sorted(seqs)}  dora drop reports: {drops}  ({sent_line.split('stdout')[-1].strip()})"
            )


def load(duration_s: float, keep: Path | None, with_sim: bool = True, frames: str = "jpeg") -> None:
    from teledora.recording import RunReader

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            tmp, tmp_path = str(keep), keep
        src = REPO / "dataflows" / "sim.yml"
        flow = yaml.safe_load(src.read_text())
        if not with_sim:  # cameras and recorder only
            flow["nodes"] = [n for n in flow["nodes"] if str(n.get("path", "")).endswith("recorder.py")]
            flow["nodes"][0]["inputs"] = {}
        for node in flow["nodes"]:
            p = node.get("path")
            if p and not os.path.isabs(p) and (src.parent / p).exists():
                node["path"] = str((src.parent / p).resolve())
        rec = next(n for n in flow["nodes"] if str(n.get("path", "")).endswith("recorder.py"))
        for spec in rec["inputs"].values():
            spec["queue_size"] = max(int(spec.get("queue_size", 0)), 10000)
        flow["nodes"].append({"id": "cameras", "path": str(Path(__file__).resolve()), "args": "camera-node", "outputs": ["chest", "top_front"]})
        for cam in ("chest", "top_front"):
            rec["inputs"][f"cameras__{cam}"] = {"source": f"cameras/{cam}", "queue_policy": "backpressure", "queue_size": 300}
        (tmp_path / "types").symlink_to((src.parent / "types").resolve(), target_is_directory=True)
        path = tmp_path / "load.yml"
        path.write_text(yaml.safe_dump(flow, sort_keys=False))
        run, counts_file = tmp_path / "run", tmp_path / "sent.json"
        env = _env(TELEDORA_RUN_DIR=str(run), BENCH_DURATION_S=str(duration_s), BENCH_COUNTS=str(counts_file),
                   BENCH_FRAMES=frames)
        log = open(tmp_path / "dora.log", "w")
        proc = subprocess.Popen([str(BIN / "dora"), "run", str(path)], cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + duration_s + 240
        while not counts_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        time.sleep(3.0)  # let the recorder drain its queues
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        log.close()
        text = (tmp_path / "dora.log").read_text()
        reader = RunReader(run)
        sent = json.loads(counts_file.read_text()) if counts_file.exists() else {}
        m = reader.manifest
        if not m.get("complete"):
            print("recorder did not close the run; dora log tail:\n" + "\n".join(text.splitlines()[-40:]))
            return
        span_s = (m["end_ns"] - m["start_ns"]) / 1e9
        print(f"run {span_s:.1f} s recorded, {m.get('bytes', 0) / 1e6:.0f} MB, recorder CPU {m.get('recorder_cpu_s')} s")
        print(f"recorder CPU: {100 * m.get('recorder_cpu_s', 0) / span_s:.1f} % of one core; disk {m.get('bytes', 0) / 1e6 / span_s:.1f} MB/s")
        for cam, n in sent.items():
            got = reader.read_topic(f"cameras__{cam}").table.num_rows
            print(f"camera {cam:10s} published {n:5d} recorded {got:5d} {'OK' if got == n else 'LOST ' + str(n - got)}")
        if not with_sim:
            print(f"cameras alone: {len(reader.topics)} topics")
            return
        xr = reader.read_topic("xr__controllers").table
        xr_seq = [v[0]["seq"] for v in xr.column("value").to_pylist()]
        contiguous = xr_seq == list(range(xr_seq[0], xr_seq[0] + len(xr_seq))) if xr_seq else False
        print(f"xr/controllers recorded {len(xr_seq)}, seq contiguous: {contiguous}")
        recorder_drops = [line for line in text.splitlines() if "recorder:" in line and ("hard cap" in line or "Discarding" in line)]
        print(f"dora drop reports on recorder inputs: {len(recorder_drops)}")
        print(f"recorder gaps: {m.get('gaps')}; topics: {len(reader.topics)}; messages: {sum(v['count'] for v in m['topics'].values())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["offline", "burst", "load", "camera-node", "burst-node"])
    ap.add_argument("--n", type=int, default=10000, help="messages (offline, burst)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of camera load (load)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the load run's files in this directory")
    ap.add_argument("--cameras-only", action="store_true", help="load: record the two cameras without the sim dataflow")
    ap.add_argument("--frames", choices=["jpeg", "rgb8"], default="jpeg", help="load: what the cameras send")
    args = ap.parse_args()
    {"offline": lambda: offline(args.n), "burst": lambda: burst(args.n),
     "load": lambda: load(args.duration, args.keep, not args.cameras_only, args.frames),
     "camera-node": camera_node, "burst-node": burst_node}[args.mode]()


if __name__ == "__main__":
    main()
