"""The hardware cameras node against fake cameras that OpenCV opens (MJPEG
streams on 127.0.0.1, the same cv2.VideoCapture path as a V4L2 device): each
frame is published as the camera's JPEG bytes, unchanged, with its capture
stamp; a frame cut short is refused and counted; calibration comes from the
config, an unplugged camera is an `error` while the other keeps streaming, and
it streams again once plugged back."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.fakes.mjpeg_camera import FakeMjpegCamera, frame_number
from teledora.nodes.cameras import cameras_v4l2 as node_module
from teledora.operators.contract.messages import decode, decode_image

TICK_S = 0.02


class TickingNode(MockNode):
    """``ticks`` dora timer events, one every TICK_S of real time; ``actions[i]()``
    runs before tick ``i``. Keeps each output's metadata too."""

    def __init__(self, ticks: int, actions: dict[int, Callable[[], None]] | None = None) -> None:
        super().__init__([("tick", pa.array([], pa.null()))] * ticks)
        self.actions = actions or {}
        self.n = 0
        self.meta: dict[str, list[dict[str, Any]]] = {}
        self.sent_at: dict[str, list[int]] = {}

    def next(self, timeout: float | None = None):
        if self.n in self.actions:
            self.actions.pop(self.n)()
        self.n += 1
        time.sleep(TICK_S)
        return super().next(timeout)

    def drain(self):
        return []

    def send_output(self, output_id, data, metadata=None) -> None:
        super().send_output(output_id, data, metadata)
        self.meta.setdefault(output_id, []).append(dict(metadata or {}))
        self.sent_at.setdefault(output_id, []).append(time.time_ns())


def _diagnostics(node: TickingNode) -> list[dict]:
    return [decode("Diagnostics", v) for v in node.outputs.get("diagnostics", [])]


@pytest.fixture
def cams():
    a, b = FakeMjpegCamera(160, 120, 25.0), FakeMjpegCamera(160, 120, 25.0)
    a.plug()
    b.plug()
    yield a, b
    a.unplug()
    b.unplug()


def test_frames_calibration_and_an_unplugged_camera(cams) -> None:
    chest, wrist = cams
    # tick 100 (~2 s): the wrist camera is unplugged; tick 250: plugged back
    node = TickingNode(400, {100: wrist.unplug, 250: wrist.plug})
    node_module.main(["--cameras", "chest,left_wrist", "--device", f"chest={chest.url}",
                      "--device", f"left_wrist={wrist.url}"], node=node)

    # images: the camera's own JPEG bytes (never decoded), stamped at capture (before it was sent)
    frames = node.outputs["chest"]
    assert len(frames) > 50
    numbers = [frame_number(decode_image(v, m)) for v, m in zip(frames, node.meta["chest"])]
    for value, meta, sent, n in zip(frames, node.meta["chest"], node.sent_at["chest"], numbers):
        assert meta["encoding"] == "jpeg" and (meta["width"], meta["height"]) == (160, 120)
        assert value.to_numpy().tobytes() == chest.jpeg(n)  # byte-identical to what the camera sent
        assert meta["camera"] == "chest" and meta["device"] == chest.url
        assert meta["capture_ns"] == meta["stamp_ns"] <= sent
    assert all((b - a) % 256 >= 1 for a, b in zip(numbers, numbers[1:])), "a frame was published twice"
    stamps = [m["capture_ns"] for m in node.meta["chest"]]
    assert stamps == sorted(stamps)

    # calibration from cameras.yaml, for both cameras, at start and periodically
    cal = [decode("CameraCalibration", v) for v in node.outputs["calibration"]]
    assert {c["camera"] for c in cal} == {"chest", "left_wrist"}
    assert sum(c["camera"] == "chest" for c in cal) >= 3  # ~8 s at a 2 s period
    chest_cal = next(c for c in cal if c["camera"] == "chest")
    assert chest_cal["parent_frame"] == "vertical_link" and chest_cal["source"] == "v4l2"
    assert chest_cal["fx"] == 320.0 and list(chest_cal["mount_xyz"]) == pytest.approx([-0.00022576, -0.06901636, 0.44798544])

    # the wrist camera: streamed, went missing (an error naming it) while the chest streamed on, came back
    diags = _diagnostics(node)
    errors = [d for d in diags if d["level"] == "error"]
    assert errors and all("left_wrist" in d["message"] and "chest" not in d["message"].split("left_wrist")[0]
                          for d in errors), [d["message"] for d in errors]
    missing_at = [json.loads(d["details_json"])["cameras"]["chest"]["published"] for d in errors]
    assert max(missing_at) > min(missing_at), "the chest camera kept publishing while the wrist was missing"
    assert diags[-1]["level"] == "ok", diags[-1]["message"]
    wrist_details = json.loads(diags[-1]["details_json"])["cameras"]["left_wrist"]
    assert wrist_details["reconnects"] >= 1
    wrist_stamps = [m["capture_ns"] for m in node.meta["left_wrist"]]
    gaps = [b - a for a, b in zip(wrist_stamps, wrist_stamps[1:])]
    assert max(gaps) > 1e9 and len(wrist_stamps) > 50  # the outage, and frames on both sides of it
    assert any("left_wrist" in str(log) for log in node.logs)


def test_a_camera_that_is_not_there_is_an_error_from_the_start(cams) -> None:
    chest, _ = cams
    node = TickingNode(120)
    node_module.main(["--cameras", "chest,top_back", "--device", f"chest={chest.url}",
                      "--device", "top_back=/dev/teledora_cam_not_plugged"], node=node)
    assert len(node.outputs["chest"]) > 20 and "top_back" not in node.outputs
    last = _diagnostics(node)[-1]
    assert last["level"] == "error" and "top_back" in last["message"] and "/dev/teledora_cam_not_plugged" in last["message"]


def test_bad_device_override_is_refused() -> None:
    with pytest.raises(SystemExit, match="NAME=SOURCE"):
        node_module.main(["--cameras", "chest", "--device", "nose=/dev/video0"], node=TickingNode(1))


def test_frames_cut_short_are_refused_counted_and_logged_once(cams) -> None:
    chest, _ = cams

    def break_camera() -> None:
        chest.cut_short = 5

    node = TickingNode(150, {40: break_camera})
    node_module.main(["--cameras", "chest", "--device", f"chest={chest.url}"], node=node)
    for value, meta in zip(node.outputs["chest"], node.meta["chest"]):
        decode_image(value, meta)  # every published frame is whole
    diags = _diagnostics(node)
    assert diags[-1]["rejected"] == 5
    assert json.loads(diags[-1]["details_json"])["rejected_by_reason"] == {"bad_image": 5}
    assert any(d["level"] == "warn" and "cut short" in d["message"] for d in diags)
    warnings = [log for log in node.logs if "cut short" in str(log)]
    assert len(warnings) == 1, warnings


class SlowNode(TickingNode):
    """A loop held up for 0.2 s per turn: several frames arrive between two turns."""

    def next(self, timeout: float | None = None):
        time.sleep(0.2)
        return super().next(timeout)


def test_a_loop_held_up_between_frames_still_publishes_every_frame_in_order(cams) -> None:
    chest, _ = cams
    node = SlowNode(20)
    node_module.main(["--cameras", "chest", "--device", f"chest={chest.url}"], node=node)
    numbers = [frame_number(decode_image(v, m)) for v, m in zip(node.outputs["chest"], node.meta["chest"])]
    assert len(numbers) > 40  # ~4 s at 25 fps, taken about five at a time
    assert all((b - a) % 256 == 1 for a, b in zip(numbers, numbers[1:])), numbers
    details = json.loads(_diagnostics(node)[-1]["details_json"])["cameras"]["chest"]
    assert details["skipped"] == 0 and details["published"] == len(numbers)
