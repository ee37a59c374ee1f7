"""The camera panels and the heads-up line in a real browser: headless Chromium +
IWER (emulated Quest 3) opens the WebXR page from a live xr_webxr node fed with
camera images, enters VR, and the test checks what the page drew: the pixel at
the centre of the main panel is the colour of the frame the page reported drawn,
frames are sent only as fast as they are drawn, the HUD shows the e-stop in the
frame after the state arrived, and a switched-off panel gets no more frames.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from tests.browser.browser_needs import HERE, IWER, NEEDS_BROWSER
from teledora.fakes.emulated_headset import run_headset
from teledora.fakes.wired_node import WiredNode
from teledora.operators.contract.messages import decode, image_metadata

pytestmark = NEEDS_BROWSER

W, H = 160, 120


def colour(k: int) -> tuple[int, int, int]:
    return ((k * 53) % 200 + 40, (k * 97) % 200 + 40, 128)


class Feeder:
    """Pushes flat-colour frames of three cameras into the xr node at 30 Hz, like the cameras node."""

    def __init__(self) -> None:
        self.colour_at: dict[int, tuple[int, int, int]] = {}  # capture_ns -> colour

    def __call__(self, xr: WiredNode, stop: threading.Event) -> None:
        k = 0
        while not stop.is_set():
            k += 1
            for cam in ("top_front", "chest", "left_wrist"):
                capture = time.time_ns()
                c = colour(k) if cam != "left_wrist" else (255, 255, 255)
                self.colour_at[capture] = c
                img = np.empty((H, W, 3), np.uint8)
                img[:] = c
                meta = image_metadata(width=W, height=H, encoding="rgb8", camera=cam, stamp_ns=capture,
                                      fx=100.0, fy=100.0, cx=79.5, cy=59.5)
                xr.push(cam, pa.array(img.reshape(-1)), {**meta, "capture_ns": capture})
            stop.wait(1 / 30)


def test_camera_panels_and_hud_in_vr(tmp_path: Path) -> None:
    feeder = Feeder()
    run = run_headset(HERE / "camera_driver.mjs", tmp_path, IWER, {"pose_timeout_s": 5.0, "input_timeout_s": 5.0},
                      feed=feeder)
    names = [s["step"] for s in run.steps]
    assert run.returncode == 0 and "done" in names, f"driver failed: {run.stdout}\n{run.stderr}"

    # drawn in the VR scene: the main panel's centre pixel is the colour of the frame reported drawn
    shown = [s for s in run.step("drawn")["shown"] if s["camera"] == "top_front" and s["pixel"]]
    assert len(shown) >= 15
    matched = 0
    for s in shown:
        want = feeder.colour_at[int(s["capture_ns"])]
        got = s["pixel"][:3]
        assert max(abs(a - b) for a, b in zip(got, want)) <= 12, (s, want)
        matched += 1
    assert len({tuple(s["pixel"][:3]) for s in shown}) >= 5, "the texture did not change from frame to frame"
    frames = [s["frame"] for s in shown]
    assert frames == sorted(frames) and len(set(frames)) == len(frames)  # one new frame per XR frame at most

    # the HUD: latched within one XR frame of the state's arrival, and says so
    est = run.step("estop")
    change = next(c for c in est["changes"] if c["latched"])
    hud = next(h for h in est["hud"] if h["latched"])
    assert 0 <= hud["frame"] - change["frame"] <= 1, (change, hud)
    assert "E-STOP LATCHED" in est["text"] and "link" in est["text"]

    # switching: the left wrist panel off -> no more of its frames; the main panel shows the chest camera
    sw = run.step("switched")
    assert sw["main"] == "chest" and len(sw["chest"]) >= 5
    assert sw["after"].get("left_wrist", 0) == sw["before"].get("left_wrist", 0)
    assert sw["after"]["chest"] > sw["before"].get("chest", 0)

    # never faster than displayed: at most one frame per camera was ever unacknowledged
    diag = decode("Diagnostics", run.xr.outputs["diagnostics"][-1])
    view = json.loads(diag["details_json"])["camera_view"]
    for cam, figures in view.items():
        assert 0 <= figures["sent"] - figures["shown"] <= 1, (cam, figures)
    assert view["top_front"]["skipped"] > 0 or view["top_front"]["sent"] >= 15
    assert view["top_front"]["median_ms"] is not None and view["top_front"]["median_ms"] > 0
