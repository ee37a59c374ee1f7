"""cameras node, hardware variant: the robot's five USB cameras read with OpenCV (V4L2).

One capture thread per camera (teledora.devices.cameras.v4l2_capture) requests
MJPEG at the size and rate of cameras.yaml, stamps each frame when it reaches
the host and holds the last couple of seconds of frames; this loop publishes
every new frame once, in order, as the camera's own JPEG bytes (nothing is
decoded on the robot).

Inputs: ``tick`` (dora timer: paces the loop between frames). Outputs:
``chest``, ``top_front``, ``top_back``, ``left_wrist``, ``right_wrist`` (one
JPEG per message, flat uint8, with image metadata and ``encoding: "jpeg"``;
``stamp_ns`` and ``capture_ns`` are the capture time), ``calibration`` (CameraCalibration per enabled camera, from cameras.yaml,
at start and every ``calibration_period_s``) and ``diagnostics``.

A camera that is missing, unplugged or silent for ``stale_after_s`` is named in
an ``error`` diagnostics message (and the log, once per loss) while the others
keep streaming; it is tried again every ``reconnect_period_s``. A frame that is
no whole JPEG of the size its header names is refused, counted (diagnostics
``rejected``, reason ``bad_image``) and logged once per reason; frames that
fell out of the capture's hold before this loop took them are counted as
``dropped``.

Args: ``--config`` cameras YAML, ``--cameras a,b`` to read only those,
``--device NAME=SOURCE`` (repeatable) to read a camera from another device,
file or URL.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Sequence

import pyarrow as pa
import yaml

from teledora.devices.cameras.v4l2_capture import CameraStream
from teledora.models.config_files import load_cameras_config
from teledora.operators.cameras.camera_config import (
    CalibrationClock,
    CamerasConfig,
    PhysicalCamera,
    calibration_message,
)
from teledora.operators.contract.compressed_image import JPEG
from teledora.operators.contract.messages import image_metadata
from teledora.operators.errors import ConfigError
from teledora.operators.rendering.camera_intrinsics import DISTORTION_MODEL
from teledora.runtime.node_io import NodeIO, make_node, node_id

SOURCE = "v4l2"
POLL_S = 0.005


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cameras_v4l2", description=__doc__.splitlines()[0])
    p.add_argument("--config", default=os.environ.get("CAMERAS_CONFIG"))
    p.add_argument("--cameras", default=os.environ.get("CAMERAS_ONLY"), help="comma-separated subset")
    p.add_argument("--device", action="append", default=[], metavar="NAME=SOURCE",
                   help="read camera NAME from SOURCE (device, file or URL) instead of its configured device")
    return p.parse_args(argv)


def chosen(config: CamerasConfig, names: str | None, overrides: Sequence[str]) -> dict[str, tuple[PhysicalCamera, str]]:
    """The cameras to read and the source of each."""
    cams = config.enabled_cameras if names is None else []
    if names is not None:
        for n in (c.strip() for c in names.split(",") if c.strip()):
            if n not in config.cameras:
                raise ConfigError(f"unknown camera {n!r}; configured {sorted(config.cameras)}")
            cams.append(config.cameras[n])
    sources = {c.name: c.device for c in cams}
    for item in overrides:
        name, sep, source = item.partition("=")
        if not sep or name not in sources:
            raise ConfigError(f"--device {item!r}: expected NAME=SOURCE for one of {sorted(sources)}")
        sources[name] = source
    return {c.name: (c, sources[c.name]) for c in cams}


def frame_metadata(cam: PhysicalCamera, width: int, height: int, stamp_ns: int, source: str) -> dict[str, Any]:
    meta = image_metadata(width=width, height=height, encoding=JPEG, camera=cam.name, stamp_ns=stamp_ns,
                          fx=cam.fx, fy=cam.fy, cx=cam.cx, cy=cam.cy)
    meta.update(distortion_model=DISTORTION_MODEL, distortion=list(cam.distortion), frame_id=f"{cam.name}_optical",
                capture_ns=int(stamp_ns), device=source)
    return meta


class CameraPublisher:
    """Publishes each camera's new frames, calibration and health."""

    def __init__(self, io: NodeIO, config: CamerasConfig, cameras: dict[str, tuple[PhysicalCamera, str]],
                 streams: dict[str, CameraStream]) -> None:
        self.io, self.config, self.cameras, self.streams = io, config, cameras, streams
        self.last_seq = dict.fromkeys(streams, -1)
        self.published = dict.fromkeys(streams, 0)
        self.skipped = dict.fromkeys(streams, 0)  # captured, then out of the hold before publishing
        self.rejected = dict.fromkeys(streams, 0)
        self._rejection_logged: set[str] = set()
        self.calibration = CalibrationClock(config.calibration_period_s)
        self._reported: dict[str, str] = {}
        self.stale_ns = int(config.stale_after_s * 1e9)

    def step(self, now_ns: int) -> None:
        for name, stream in self.streams.items():
            cam, source = self.cameras[name]
            for frame in stream.since(self.last_seq[name]):
                if self.last_seq[name] >= 0:
                    self.skipped[name] += frame.seq - self.last_seq[name] - 1
                self.last_seq[name] = frame.seq
                value = pa.array(frame.jpeg, type=pa.uint8())  # the camera's bytes, as delivered
                self.io.send_raw(name, value, frame_metadata(cam, frame.width, frame.height, frame.stamp_ns, source))
                self.published[name] += 1
        self.io.diag.dropped = sum(self.skipped.values())
        if self.calibration.due(now_ns):
            for name, (cam, source) in self.cameras.items():
                msg = calibration_message(name, SOURCE, source, cam.intrinsics(), cam.rate_hz, cam.mount, now_ns)
                self.io.send("calibration", "CameraCalibration", msg)

    def health(self, now_ns: int) -> list[str]:
        """Why each missing camera is missing (logged once per loss); sets the diagnostics."""
        problems, details = [], {}
        for name, stream in self.streams.items():
            st = stream.status()
            for _ in range(st.rejected - self.rejected[name]):
                self.io.diag.reject(st.last_rejection, "bad_image")
            if st.rejected > self.rejected[name] and st.last_rejection not in self._rejection_logged:
                self._rejection_logged.add(st.last_rejection)  # once per reason: a broken camera sends 30 a second
                self.io.log("warn", st.last_rejection)
            self.rejected[name] = st.rejected
            why = st.error
            if not why and (st.last_frame_ns is None or now_ns - st.last_frame_ns > self.stale_ns):
                why = f"camera {name}: no frame for more than {self.config.stale_after_s:g} s"
                if st.last_frame_ns is None and st.state == "opening":
                    why = st.last_rejection  # still opening: a fault only if its frames are refused
            if why:
                problems.append(why)
                if self._reported.get(name) != why:
                    self.io.log("error", why)
            self._reported[name] = why
            details[name] = {"state": st.state if not why else "missing", "frames": st.frames,
                             "published": self.published[name], "skipped": self.skipped[name],
                             "rejected": st.rejected, "reconnects": st.reconnects,
                             "size": list(st.size) if st.size else None, "error": why, "device": self.cameras[name][1]}
        self.io.diag.details = {"cameras": details}
        if problems:
            self.io.diag.set_status("error", "; ".join(problems))
            self.io.diag.last_error = problems[-1]
        else:
            self.io.diag.set_status("ok", f"streaming {sorted(self.streams)}")
        return problems


def main(argv: Sequence[str] | None = None, node: Any = None, *, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    node = make_node(node)
    io = NodeIO(node, node_id("cameras"), clock=clock)
    try:
        config = load_cameras_config(args.config)
        cameras = chosen(config, args.cameras, args.device)
    except (ConfigError, OSError, yaml.YAMLError) as exc:
        io.fail_start("cameras", exc)
    streams = {name: CameraStream(name, source, cam.width, cam.height, cam.rate_hz, cam.fourcc,
                                  config.reconnect_period_s, clock=clock)
               for name, (cam, source) in cameras.items()}
    for s in streams.values():
        s.start()
    pub = CameraPublisher(io, config, cameras, streams)
    try:
        while True:
            batch = io.next_batch(POLL_S)
            if batch is None or any(e["type"] == "STOP" for e in batch):
                break
            now = clock()
            pub.step(now)
            if io.diag.due(now):
                pub.health(now)
            io.publish_diagnostics()
        pub.health(clock())
        io.publish_diagnostics(force=True)
    finally:
        for s in streams.values():
            s.stop()


if __name__ == "__main__":
    main()
