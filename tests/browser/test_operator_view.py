"""What the operator sees, read from the rendered pixels: headless Chromium with IWER
(emulated Quest 3) opens the WebXR page from a live xr node wired to teleop and the
episodes node, fed flat-colour camera images, enters VR and goes through the states
paired, paused, recording, latched, link lost and refused. In each, a screenshot of
the VR view and one of the flat page: the heads-up line's text stands at least 4.5:1
against its fill and its frame at least 3:1 against what surrounds it (WCAG contrast
ratio from the pixels), the controls act exactly where they may, and the state is
named in words. Depth: a ray ends at the camera panel it meets, and where the control
panel lies in front of the main camera it is drawn over it. The main camera spans at
least 60 deg, centred at eye height; the HUD's text stands at least 1.5 deg high.

With TELEDORA_DOC_IMAGES=<dir> the screenshots are also written there, downscaled
(the pictures in docs/xr.md)."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from tests.browser.browser_needs import HERE, IWER, NEEDS_BROWSER
from teledora.fakes.emulated_headset import run_headset
from teledora.fakes.wired_node import WiredNode
from teledora.operators.contract.messages import image_metadata

pytestmark = NEEDS_BROWSER

MAIN = (40, 160, 90)
WRIST = {"left_wrist": (200, 200, 60), "right_wrist": (60, 200, 220)}
RAY = (153, 204, 255)
PANEL_FILL = (0x1b, 0x1b, 0x1f)


def feed(xr: WiredNode, stop: threading.Event) -> None:
    """Flat-colour frames of the main and both wrist cameras at 10 Hz."""
    w, h = 160, 120
    while not stop.is_set():
        for cam, c in (("top_front", MAIN), *WRIST.items()):
            capture = time.time_ns()
            img = np.empty((h, w, 3), np.uint8)
            img[:] = c
            meta = image_metadata(width=w, height=h, encoding="rgb8", camera=cam, stamp_ns=capture,
                                  fx=100.0, fy=100.0, cx=79.5, cy=59.5)
            xr.push(cam, pa.array(img.reshape(-1)), {**meta, "capture_ns": capture})
        stop.wait(0.1)


def luminance(rgb) -> float:
    c = np.asarray(rgb, float) / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2])


def contrast(a, b) -> float:
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def pixels(img: np.ndarray, rect) -> np.ndarray:
    x0, y0, x1, y1 = (int(round(v)) for v in rect)
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    return img[y0 + 2:y1 - 1, x0 + 2:x1 - 1].reshape(-1, 3)


def fill_and_text(img: np.ndarray, rect):
    """A row's fill (its commonest colour) and its text (the commonest of the colours far from the fill:
    the solid cores of the glyphs, not their anti-aliased edges)."""
    px = [tuple(int(v) for v in p) for p in pixels(img, rect)]
    fill = Counter(px).most_common(1)[0][0]
    ratio = {q: contrast(q, fill) for q in set(px)}
    top = max(ratio.values())
    far = [p for p in px if ratio[p] >= 0.8 * top]
    return fill, Counter(far).most_common(1)[0][0], len(far)


def at(img: np.ndarray, xy) -> tuple[int, int, int]:
    x, y = (int(round(v)) for v in xy)
    return tuple(int(v) for v in img[y, x])


def near(img, xy, colour, tol=24, r=3) -> bool:
    x, y = (int(round(v)) for v in xy)
    patch = img[y - r:y + r + 1, x - r:x + r + 1].reshape(-1, 3).astype(int)
    return bool((np.abs(patch - np.asarray(colour)).max(axis=1) <= tol).any())


def check_hud(img: np.ndarray, geo: dict, where: str) -> dict:
    """The HUD's contrast read from a screenshot: both rows' text on their fill, the frame on what surrounds it."""
    out = {}
    for row in ("row1", "row2"):
        fill, text, n = fill_and_text(img, geo[row])
        out[row] = contrast(fill, text)
        assert n >= 20, (where, row, "no text found")
        assert out[row] >= 4.5, (where, row, fill, text, out[row])
    frame = [at(img, p) for p in geo["frame"]]
    outside = [at(img, p) for p in geo["outside"]]
    out["frame"] = min(contrast(f, o) for f in frame for o in outside)
    assert out["frame"] >= 3, (where, frame, outside)
    if geo.get("chip"):
        fill, text, _ = fill_and_text(img, geo["chip"])
        out["chip"] = contrast(fill, text)
        assert out["chip"] >= 4.5, (where, "chip", fill, text)
    return out


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    work = tmp_path_factory.mktemp("operator_view")
    shots = work / "shots"
    shots.mkdir()
    run = run_headset(HERE / "operator_view.mjs", work, IWER, {"pose_timeout_s": 5.0, "input_timeout_s": 5.0},
                      args=[str(shots)], feed=feed, timeout_s=400.0,
                      episodes_args=["--task", "pick the cube", "--port", "0", "--discard-confirm-s", "30"])
    names = [s["step"] for s in run.steps]
    assert run.returncode == 0 and "done" in names and "page_error" not in names, f"{run.stdout}\n{run.stderr}"
    docs = os.environ.get("TELEDORA_DOC_IMAGES")
    if docs:
        for png in shots.glob("*.png"):
            if png.stem.startswith(("vr_", "page_")):
                im = Image.open(png).convert("RGB")
                im.thumbnail((960, 960))
                im.save(Path(docs) / f"xr_{png.stem}.png", optimize=True)
    return run, shots


STATES = {"paired": "live", "paused": "paused", "recording": "live", "latched": "latched",
          "link_lost": "linkLost", "refused": "notPaired"}
WORDS = {"paired": "ARMS LIVE", "paused": "ARMS PAUSED", "recording": "ARMS LIVE", "latched": "E-STOP LATCHED",
         "link_lost": "LINK LOST", "refused": "NOT PAIRED"}


def load(shots: Path, name: str) -> np.ndarray:
    return np.asarray(Image.open(shots / f"{name}.png").convert("RGB"))


@pytest.mark.parametrize("name", list(STATES))
def test_hud_contrast_words_and_controls_per_state(view, name):
    run, shots = view
    step = next(s for s in run.steps if s["step"] == "state" and s["name"] == name)
    assert step["key"] == STATES[name] and WORDS[name] in step["hud"]["title"]
    check_hud(load(shots, f"vr_{name}"), step["vr"], f"vr {name}")
    check_hud(load(shots, f"page_{name}"), step["flat"], f"page {name}")
    dom, panel = step["dom"], step["panel"]
    if name in ("link_lost", "refused"):
        assert not any(dom.values()) and not any(v for k, v in panel.items() if k != "recentre")
        assert panel["recentre"]  # the view can still be put right
    else:
        assert dom["estop"] and dom["pause"] and panel["estop"]
        assert panel["release"] == (name == "latched") and dom["release"] == (name == "latched")
        assert panel["pause"] == (name != "latched")
    if name == "recording":
        assert step["hud"]["chip"]["recording"] and "REC episode 1" in step["hud"]["chip"]["text"]
    if name == "refused":
        assert "another client" in step["hud"]["details"]  # the reason, not only the two words
    if name == "latched":
        assert "LATCHED" in step["estopLabel"]


def test_states_look_different_in_the_vr_view(view):
    """The title row's fill differs between states (colour adds to the words), recording aside (a chip)."""
    run, shots = view
    fills = {}
    for name in ("paired", "paused", "latched", "link_lost", "refused"):
        step = next(s for s in run.steps if s["step"] == "state" and s["name"] == name)
        fills[name] = fill_and_text(load(shots, f"vr_{name}"), step["vr"]["row1"])[0]
    for a in fills:
        for b in fills:
            if a < b:
                assert max(abs(x - y) for x, y in zip(fills[a], fills[b])) > 40, (a, b, fills)


def test_a_ray_ends_at_the_camera_panel_it_meets(view):
    run, shots = view
    ray = run.step("ray")
    img = load(shots, "depth_ray")
    assert any(near(img, p, RAY) for p in ray["before"]), "the ray is not drawn before the panel"
    for p in ray["beyond"]:
        assert not near(img, p, RAY), ("the ray shows through the camera panel", p)
        assert near(img, p, MAIN, tol=30)


def test_the_nearer_panel_is_drawn_over_the_farther(view):
    run, shots = view
    img = load(shots, "depth_overlap")
    probes = run.step("overlap")["probes"]
    assert all(p["onMain"] and p["panelDistance"] < p["mainDistance"] for p in probes)  # a real overlap
    for p in probes:
        got = at(img, p["px"])
        assert max(abs(a - b) for a, b in zip(got, PANEL_FILL)) <= 12, (p, got)


def test_the_main_camera_is_wide_and_at_eye_height_and_the_hud_legible(view):
    run, _ = view
    layout = run.step("layout")
    assert layout["main"]["wide"] >= 60 and abs(layout["main"]["elevation"]) <= 1.0
    assert min(layout["hudDeg"]) >= 1.5
    assert layout["scale"] >= 1.0
