"""The capture threads against a fake camera that OpenCV really opens (an MJPEG
stream on 127.0.0.1, teledora.fakes.mjpeg_camera): frames arrive as the
camera's own JPEG bytes, stamped at capture; a frame cut short is refused and
counted; an unplugged camera is reported and comes back, a missing one does
not stop the others."""

from __future__ import annotations

import time

import pytest

from teledora.devices.cameras.v4l2_capture import CameraStream
from teledora.fakes.mjpeg_camera import FakeMjpegCamera, frame_number
from teledora.operators.contract.compressed_image import decode_jpeg


def _wait(pred, timeout_s: float = 10.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def fake():
    cam = FakeMjpegCamera(width=160, height=120, rate_hz=25.0)
    cam.plug()
    yield cam
    cam.unplug()


def _stream(source: str, name: str = "chest") -> CameraStream:
    return CameraStream(name, source, 160, 120, 25.0, "MJPG", reconnect_period_s=0.2)


def test_frames_pass_through_undecoded_numbered_and_stamped_at_capture(fake) -> None:
    s = _stream(fake.url)
    s.start()
    try:
        first = s.wait(-1, 10.0)
        assert first is not None and (first.width, first.height) == (160, 120)
        frames = [first]
        while len(frames) < 6:
            f = s.wait(frames[-1].seq, 5.0)
            assert f is not None
            frames.append(f)
        stamps = [f.stamp_ns for f in frames]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
        numbers = [frame_number(decode_jpeg(f.jpeg, f.width, f.height)) for f in frames]
        assert all((b - a) % 256 >= 1 for a, b in zip(numbers, numbers[1:])), numbers  # newer frames
        for f, n in zip(frames, numbers):  # the camera's bytes, not a re-encoding
            assert f.jpeg.dtype.name == "uint8" and f.jpeg.tobytes() == fake.jpeg(n)
        # stamped when grabbed: the newest frame is no older than the fake's frame period allows
        assert time.time_ns() - s.latest().stamp_ns < 2e9
        assert s.status().state == "streaming" and s.status().size == (160, 120)
    finally:
        s.stop()


def test_unplug_is_reported_and_the_camera_comes_back(fake) -> None:
    s = _stream(fake.url)
    s.start()
    try:
        assert s.wait(-1, 10.0) is not None
        fake.unplug()
        assert _wait(lambda: s.status().state == "missing")
        st = s.status()
        assert "chest" in st.error and fake.url in st.error
        seq = s.latest().seq
        time.sleep(0.5)
        assert s.latest(seq) is None  # nothing new while unplugged
        fake.plug()
        assert s.wait(seq, 10.0) is not None, s.status()
        assert s.status().state == "streaming" and s.status().reconnects >= 1
    finally:
        s.stop()


def test_a_missing_camera_does_not_stop_the_others(fake) -> None:
    good = _stream(fake.url, "chest")
    gone = _stream("/dev/teledora_cam_does_not_exist", "left_wrist")
    good.start()
    gone.start()
    try:
        assert _wait(lambda: gone.status().state == "missing")
        assert "left_wrist" in gone.status().error and "cannot open" in gone.status().error
        first = good.wait(-1, 10.0)
        assert first is not None and good.wait(first.seq, 5.0) is not None
        assert gone.latest() is None
    finally:
        good.stop()
        gone.stop()


def test_a_frame_cut_short_is_refused_and_counted_and_the_next_whole_frame_streams(fake) -> None:
    s = _stream(fake.url)
    s.start()
    try:
        first = s.wait(-1, 10.0)
        assert first is not None
        fake.cut_short = 3
        assert _wait(lambda: s.status().rejected == 3)
        st = s.status()
        assert "chest" in st.last_rejection and "cut short" in st.last_rejection
        latest = s.latest().seq
        f = s.wait(latest, 5.0)
        assert f is not None and f.jpeg.tobytes() == fake.jpeg(frame_number(decode_jpeg(f.jpeg, 160, 120)))
        assert s.status().state == "streaming"
    finally:
        s.stop()
