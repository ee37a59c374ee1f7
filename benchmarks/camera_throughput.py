"""Five cameras at 640x480 and 30 fps through the robot's capture path into the recorder.

    python benchmarks/camera_throughput.py --duration 20

Starts one fake MJPEG camera per camera on 127.0.0.1 (teledora.fakes.mjpeg_camera,
textured frames so each JPEG is about the size a camera's view of a room gives),
then ``dora run`` of the hardware cameras node (nodes/cameras/cameras_v4l2.py,
the same OpenCV capture path as a V4L2 device) and the recorder. After
``--duration`` seconds the cameras are unplugged, the recorder drains, and the
dataflow stops. Prints per camera: frames sent by the camera, received and
published by the node, stored by the recorder, drops (sent - stored), and
capture -> disk latency p50 / p99 (capture: the node's ``capture_ns``; disk:
when the topic file first reached the end of the record batch holding the
frame, polled every 5 ms, so the figure includes the recorder's flush
interval); then the cameras node's CPU (user + system, over the streaming
window) and the bytes a second written for the five cameras, with the
machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CAMERAS = ("chest", "top_front", "top_back", "left_wrist", "right_wrist")
WIDTH, HEIGHT, RATE_HZ = 640, 480, 30.0
POLL_S = 0.005


def _pids_running(needle: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FileWatch(threading.Thread):
    """Notes when each watched file grows: (time ns, size) at every change."""

    def __init__(self, paths: dict[str, Path]) -> None:
        super().__init__(daemon=True)
        self.paths = paths
        self.samples: dict[str, list[tuple[int, int]]] = {k: [] for k in paths}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.time_ns()
            for key, path in self.paths.items():
                try:
                    size = path.stat().st_size
                except OSError:
                    continue
                s = self.samples[key]
                if not s or s[-1][1] != size:
                    s.append((now, size))
            time.sleep(POLL_S)


def disk_times(run: Path, topic: str, samples: list[tuple[int, int]]) -> list[int | None]:
    """Per stored row of ``topic``: when the file first held the end of its record batch."""
    from teledora.operators.recording.batch_checksums import END_OF_STREAM, SCHEMA_ROWS, parse_index
    from teledora.recording.run_dir import INDEX_SUFFIX

    entries, _ = parse_index((run / f"{topic}.arrow{INDEX_SUFFIX}").read_bytes())
    times: list[int | None] = []
    for e in entries:
        if e is None or e.rows in (0, SCHEMA_ROWS, END_OF_STREAM):
            continue
        t = next((t for t, size in samples if size >= e.end), None)
        times += [t] * e.rows
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of streaming")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality of the fake cameras' frames")
    ap.add_argument("--keep", type=Path, default=None, help="keep the run here")
    args = ap.parse_args()

    from teledora import models
    from teledora.fakes.mjpeg_camera import FakeMjpegCamera
    from teledora.recording import RunReader

    fakes = {c: FakeMjpegCamera(WIDTH, HEIGHT, RATE_HZ, textured=True, quality=args.quality) for c in CAMERAS}
    for fake in fakes.values():
        for n in range(256):  # encode every frame before timing starts
            fake.jpeg(n)
        fake.plug()
    mean_jpeg = np.mean([len(f.jpeg(n)) for f in fakes.values() for n in range(256)])

    tmp_ctx = tempfile.TemporaryDirectory()
    tmp = args.keep or Path(tmp_ctx.name)
    tmp.mkdir(parents=True, exist_ok=True)
    config = models.load_yaml("alohamini2/cameras.yaml")
    config["camera_defaults"]["rate_hz"] = RATE_HZ
    (tmp / "cameras.yaml").write_text(yaml.safe_dump(config))
    devices = " ".join(f"--device {c}={f.url}" for c, f in fakes.items())
    rec_inputs = {f"cameras__{c}": {"source": f"cameras/{c}", "queue_policy": "backpressure", "queue_size": 1000}
                  for c in CAMERAS}
    for extra in ("calibration", "diagnostics"):
        rec_inputs[f"cameras__{extra}"] = {"source": f"cameras/{extra}", "queue_policy": "backpressure"}
    flow = {"nodes": [
        {"id": "cameras", "path": str(REPO / "nodes" / "cameras" / "cameras_v4l2.py"),
         "args": f"--config {tmp / 'cameras.yaml'} {devices}", "inputs": {"tick": "dora/timer/millis/100"},
         "outputs": list(CAMERAS) + ["calibration", "diagnostics"]},
        {"id": "recorder", "path": str(REPO / "nodes" / "recording" / "recorder.py"), "inputs": rec_inputs,
         "outputs": ["status", "diagnostics"]},
    ]}
    (tmp / "cameras.yml").write_text(yaml.safe_dump(flow, sort_keys=False))
    run = tmp / "run"
    env = dict(os.environ, TELEDORA_RUN_DIR=str(run), TELEDORA_RECORDER_GUARD="off")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    watch = FileWatch({c: run / f"cameras__{c}.arrow" for c in CAMERAS})
    load_before = os.getloadavg()
    with open(tmp / "dora.log", "w") as log:
        proc = subprocess.Popen([str(BIN / "dora"), "run", str(tmp / "cameras.yml")], cwd=tmp, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        watch.start()
        deadline = time.monotonic() + 60
        while not all(f.frames_sent for f in fakes.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2.0)  # past the start
        node_pids = _pids_running(str(REPO / "nodes" / "cameras" / "cameras_v4l2.py"))
        cpu0, t0 = sum(_cpu_s(p) for p in node_pids), time.monotonic()
        time.sleep(args.duration)
        cpu1, t1 = sum(_cpu_s(p) for p in node_pids), time.monotonic()
        load_during = os.getloadavg()
        for fake in fakes.values():
            fake.unplug()  # the camera stops: what it sent is the count to find on disk
        time.sleep(3.0)  # the node publishes its last frames, the recorder drains and flushes
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    watch.stop.set()
    watch.join()

    reader = RunReader(run)
    from teledora.operators.contract.messages import decode

    diags = [decode("Diagnostics", m.value) for m in reader.iter_topic("cameras__diagnostics")]
    last_diag = diags[-1] if diags else None
    details = json.loads(last_diag["details_json"]).get("cameras", {}) if last_diag else {}
    print(f"five cameras {WIDTH}x{HEIGHT} at {RATE_HZ:g} fps, JPEG quality {args.quality}, "
          f"mean frame {mean_jpeg / 1e3:.1f} kB, {args.duration:g} s streaming")
    print(f"{'camera':12s} {'sent':>6s} {'received':>8s} {'stored':>6s} {'drops':>5s} {'MB/s':>6s}"
          f" {'capture->disk p50':>18s} {'p99':>8s}")
    total_bytes, span_s = 0, None
    for cam, fake in fakes.items():
        table = reader.read_topic(f"cameras__{cam}").table
        metas = [json.loads(m) for m in table.column("metadata").to_pylist()]
        sizes = [len(v) for v in table.column("value").to_pylist()]
        total_bytes += sum(sizes)
        captures = [m["capture_ns"] for m in metas]
        on_disk = disk_times(run, f"cameras__{cam}", watch.samples[cam])
        lat = np.array([(d - c) / 1e6 for c, d in zip(captures, on_disk) if d is not None])
        span = (captures[-1] - captures[0]) / 1e9 if len(captures) > 1 else float("nan")
        span_s = span if span_s is None else max(span_s, span)
        received = details.get(cam, {}).get("frames", "?")  # captured and passed the JPEG check
        print(f"{cam:12s} {fake.frames_sent:6d} {received!s:>8s} {len(metas):6d} {fake.frames_sent - len(metas):5d}"
              f" {sum(sizes) / 1e6 / span:6.2f} {np.percentile(lat, 50):15.1f} ms {np.percentile(lat, 99):5.1f} ms")
    node_cpu = (cpu1 - cpu0) / (t1 - t0)
    print(f"all five: {total_bytes / 1e6 / span_s:.2f} MB/s of frames to disk; cameras node CPU "
          f"{node_cpu:.3f} of a core (pids {node_pids}); load average {load_before[0]:.1f} before, "
          f"{load_during[0]:.1f} during, {os.cpu_count()} CPUs")
    if last_diag is not None:
        print(f"cameras node: frames skipped (out of the capture hold) {last_diag['dropped']}, "
              f"refused (no whole JPEG) {last_diag['rejected']}")
    tmp_ctx.cleanup()


if __name__ == "__main__":
    main()
