"""Glass-to-glass in sim: a camera frame's capture (render) time to the moment the
headset page has drawn it, with the whole sim dataflow running.

The shipped sim dataflow (dataflows/sim.yml) runs under `dora run` with one
change: the scripted operator is replaced by the WebXR node (nodes/xr/xr_webxr.py,
HTTPS on a free local port, IWER served for the emulated headset), wired to
teleop/state and to one camera, ``cameras/top_front`` (640x480 as shipped).
Headless Chromium with IWER (emulated Quest 3) opens the page, pairs, enters VR
and watches the main camera panel for ``--seconds``; tests/browser/camera_driver.mjs
drives it.

Printed: latency from the frame's ``capture_ns`` to the end of the XR frame
that drew it, measured two ways side by side: on the page's clock (page and
dataflow share this host's clock) and by the xr node from the page's ``shown``
reports mapped through its clock estimate (diagnostics, as recorded); median
and p95; the rate at which the page drew new camera frames, its XR frame rate,
and the camera's publish rate in the recording; with the machine's load.

    python benchmarks/glass_to_glass.py [--seconds 20] [--direct]

``--direct`` leaves the dataflow out: the xr node runs alone, fed 640x480 JPEG
frames (as the cameras send them) at 30 Hz straight from a thread (capture_ns =
when the frame was made, before it was encoded), which
shows what the page and the xr node sustain by themselves.

Needs chromium at /usr/bin/chromium and the npm packages of tests/browser.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BROWSER = REPO / "tests" / "browser"
IWER = BROWSER / "node_modules" / "iwer" / "build" / "iwer.module.js"
TOKEN = "glass-to-glass"
CAMERA = "top_front"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dataflow(tmp: Path, port: int, run_dir: Path) -> Path:
    flow = yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())
    for node in flow["nodes"]:
        node["path"] = str((REPO / "dataflows" / node["path"]).resolve())
        if node["id"] == "xr":
            node["path"] = str(REPO / "nodes" / "xr" / "xr_webxr.py")
            node["args"] = shlex.join(["--host", "127.0.0.1", "--port", str(port), "--cert-dir", str(tmp / "cert"),
                                       "--token", TOKEN, "--emulator-js", str(IWER)])
            node.pop("env", None)
            node["inputs"] = {"state": "teleop/state",
                              CAMERA: {"source": f"cameras/{CAMERA}", "queue_size": 1}}
            node["input_types"] = {"state": "teledora/msgs/v1/TeleopState", CAMERA: "std/media/v1/Image"}
        if node["id"] == "renderer":
            node["args"] = "--cameras none --viewer off"
        if node["id"] == "recorder":
            node.setdefault("env", {})["TELEDORA_RUN_DIR"] = str(run_dir)
    path = tmp / "sim_glass_to_glass.yml"
    path.write_text(yaml.safe_dump(flow, sort_keys=False))
    return path


def wait_port(port: int, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.5)
    return False


def pct(values: list[float]) -> str:
    if not values:
        return "n/a"
    a = np.asarray(values)
    return f"median {np.median(a):.1f} ms, p95 {np.percentile(a, 95):.1f} ms (n={len(a)})"


def direct(seconds: float) -> int:
    """The xr node and the page alone, fed at 30 Hz."""
    import threading

    import pyarrow as pa

    from teledora.fakes.emulated_headset import run_headset
    from teledora.operators.contract.compressed_image import encode_jpeg
    from teledora.operators.contract.messages import decode, image_metadata

    yy, xx = np.mgrid[0:480, 0:640]
    base = np.stack([xx % 256, yy % 256, (xx + yy) % 256], axis=-1).astype(np.uint8)

    def feed(xr, stop: threading.Event) -> None:
        k = 0
        while not stop.is_set():
            k += 1
            img = np.roll(base, k * 4, axis=1)
            capture = time.time_ns()
            meta = image_metadata(width=640, height=480, encoding="jpeg", camera=CAMERA, stamp_ns=capture,
                                  fx=320.0, fy=320.0, cx=319.5, cy=239.5)
            # encoded once after capture, as the cameras send a frame
            xr.push(CAMERA, pa.array(encode_jpeg(img)), {**meta, "capture_ns": capture})
            stop.wait(1 / 30)

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        run = run_headset(BROWSER / "camera_driver.mjs", Path(tmp), IWER, {}, args=[str(seconds)], feed=feed,
                          timeout_s=seconds + 120)
    load_after = os.getloadavg()
    watched = next((s for s in run.steps if s["step"] == "watched"), None)
    if watched is None:
        print(run.stdout[-2000:], run.stderr[-2000:], file=sys.stderr)
        return 1
    shown = [s for s in watched["shown"] if s["camera"] == CAMERA]
    page_ms = [(s["page_ns"] - int(s["capture_ns"])) / 1e6 for s in shown]
    view = json.loads(decode("Diagnostics", run.xr.outputs["diagnostics"][-1])["details_json"])["camera_view"][CAMERA]
    print(f"# glass-to-glass, xr node and page alone (fed 640x480 at 30 Hz): {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; headless Chromium + IWER")
    print(f"capture -> drawn on the page (page clock = host clock): {pct(page_ms)}")
    print(f"xr node's view: median {view['median_ms']} ms, p95 {view['p95_ms']} ms; sent {view['sent']}, shown "
          f"{view['shown']}, skipped {view['skipped']}; split (medians): in the xr node {view['in_node_median_ms']} ms, "
          f"sent -> drawn {view['to_page_median_ms']} ms")
    print(f"page: {len(shown) / watched['seconds']:.1f} new camera frames drawn per second, XR frames "
          f"{watched['xr_fps']:.1f}/s over {watched['seconds']:.1f} s")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--direct", action="store_true", help="the xr node and the page alone, fed at 30 Hz")
    args = ap.parse_args()
    if not IWER.exists() or not Path("/usr/bin/chromium").exists():
        print("needs /usr/bin/chromium and `npm ci` in tests/browser", file=sys.stderr)
        return 2
    if args.direct:
        return direct(args.seconds)
    tmp = Path(tempfile.mkdtemp(prefix="teledora-g2g-"))
    run_dir = tmp / "run"
    port = free_port()
    flow = dataflow(tmp, port, run_dir)
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", MUJOCO_GL="egl",
               TELEDORA_RECORDER_MAX_LAG_S="120", TELEDORA_RECORDER_TIMEOUT_S="60", RUST_BACKTRACE="0")
    load_before = os.getloadavg()
    log = open(tmp / "dora.log", "w")
    proc = subprocess.Popen([str(BIN / "dora"), "run", str(flow)], cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
    steps: list[dict] = []
    try:
        if not wait_port(port, 90):
            print(f"the xr node did not start; see {tmp / 'dora.log'}", file=sys.stderr)
            return 1
        driver = subprocess.run(["node", str(BROWSER / "camera_driver.mjs"), f"https://127.0.0.1:{port}", TOKEN,
                                 str(args.seconds)], cwd=BROWSER, capture_output=True, text=True,
                                timeout=args.seconds + 120)
        steps = [json.loads(line) for line in driver.stdout.splitlines() if line.startswith("{")]
        load_during = os.getloadavg()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    watched = next((s for s in steps if s["step"] == "watched"), None)
    if watched is None:
        print(f"the page did not report: {driver.stdout[-2000:]} {driver.stderr[-2000:]}", file=sys.stderr)
        return 1

    shown = [s for s in watched["shown"] if s["camera"] == CAMERA]
    page_ms = [(s["page_ns"] - int(s["capture_ns"])) / 1e6 for s in shown if "page_ns" in s]

    from teledora.operators.contract.messages import decode
    from teledora.recording import RunReader

    reader = RunReader(run_dir)
    node_view = None
    for m in reader.iter_topic("xr__diagnostics"):
        details = json.loads(decode("Diagnostics", m.value)["details_json"])
        if details.get("camera_view", {}).get(CAMERA):
            node_view = details["camera_view"][CAMERA]
    frames = [m for m in reader.iter_topic(f"cameras__{CAMERA}")]
    stamps = sorted(json.loads(m.metadata).get("capture_ns", 0) for m in frames)
    cam_hz = (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / 1e9) if len(stamps) > 1 else float("nan")
    other = [m for m in reader.iter_topic("cameras__chest")]

    print(f"# glass-to-glass, sim: {os.cpu_count()} CPUs, load average {load_before[0]:.2f} before, "
          f"{load_during[0]:.2f} at the end of the run; {CAMERA} 640x480, full sim dataflow, headless Chromium + IWER")
    print(f"capture -> drawn on the page (page clock = host clock): {pct(page_ms)}")
    if node_view:
        print(f"capture -> drawn, xr node's clock-mapped view (last 600 frames): median {node_view['median_ms']} ms, "
              f"p95 {node_view['p95_ms']} ms; sent {node_view['sent']}, shown {node_view['shown']}, "
              f"skipped (replaced before sending) {node_view['skipped']}")
        print(f"  split (medians): capture -> xr node {node_view['to_node_median_ms']} ms, in the xr node (waiting for "
              f"the page's answer; a JPEG frame is forwarded as it is) {node_view['in_node_median_ms']} ms, sent -> drawn {node_view['to_page_median_ms']} ms")
    seconds = watched["seconds"]
    print(f"page: {len(shown) / seconds:.1f} new camera frames drawn per second, XR frames {watched['xr_fps']:.1f}/s "
          f"over {seconds:.1f} s")
    print(f"cameras/{CAMERA} published {cam_hz:.2f} Hz over the recording ({len(stamps)} frames); "
          f"cameras/chest {len(other)} frames")
    return 0


if __name__ == "__main__":
    sys.exit(main())
