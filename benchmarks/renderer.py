"""Renderer speed: frames/s per camera and state-to-pixels latency.

Part 1 renders each of the five cameras of the room scene at 640x480 with the
shipped settings (no shadows, no multisampling, buffer sized to the camera) and,
interleaved frame by frame, with MuJoCo's defaults (shadows, 4x multisampling,
1280x960 buffer), and prints the per-frame median / p99 and the ratio.

Part 2 measures state-to-pixels: a JointState arrives as an Arrow message, the
renderer node's own code decodes and checks it, writes qpos, runs forward
kinematics, renders one camera and hands the image to dora (a collector here).
It also times state handling alone, which is what a control input waits for
when it arrives during a render.

    MUJOCO_GL=egl python benchmarks/renderer.py [--frames 30]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np

from teledora import models
from teledora.runtime.node_io import NodeIO
from teledora.models.config_files import load_renderer_config
from teledora.devices.rendering.camera_rig import CameraRig
from teledora.devices.rendering.robot_renderer import RobotRenderer
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.operators.contract.messages import encode


def _stats(samples_s: list[float]) -> tuple[float, float]:
    ms = np.asarray(samples_s) * 1e3
    return float(np.median(ms)), float(np.percentile(ms, 99))


class _Collector:
    def __init__(self) -> None:
        self.sent = 0
        self.t_sent = 0.0

    def send_output(self, output, value, metadata=None) -> None:
        if output != "diagnostics":
            self.sent += 1
            self.t_sent = time.perf_counter()

    def log(self, level, message) -> None:
        pass


def _rig(mujoco_defaults: bool) -> CameraRig:
    config = load_renderer_config()
    cams = [dataclasses.replace(config.cameras[c], enabled=True, width=640, height=480) for c in CAMERA_NAMES]
    if mujoco_defaults:
        config = dataclasses.replace(config, shadows=True, multisamples=4)
    rig = CameraRig(models.path(config.model.path), config, cams)
    if mujoco_defaults:
        rig.model.vis.global_.offwidth, rig.model.vis.global_.offheight = 1280, 960
        rig.model.vis.quality.shadowsize = 4096
    for name, v in models.load_profile().home_q().items():
        rig.data.qpos[rig.model.joint(name).qposadr[0]] = v
    rig.forward()
    return rig


def frames_per_camera(frames: int) -> dict[str, tuple[tuple[float, float], tuple[float, float]]]:
    """Per camera: ((median, p99) shipped, (median, p99) MuJoCo defaults), frames
    of the two settings interleaved so that both see the same machine load."""
    shipped, defaults = _rig(False), _rig(True)
    out = {}
    for cam in CAMERA_NAMES:
        shipped.render(cam), defaults.render(cam)  # first frames build contexts, upload textures
        a, b = [], []
        for _ in range(frames):
            for rig, samples in ((shipped, a), (defaults, b)):
                t0 = time.perf_counter()
                rig.render(cam)
                samples.append(time.perf_counter() - t0)
        out[cam] = (_stats(a), _stats(b))
    shipped.close()
    defaults.close()
    return out


def state_to_pixels(frames: int, camera: str) -> tuple[tuple[float, float], tuple[float, float]]:
    config = load_renderer_config()
    cam = dataclasses.replace(config.cameras[camera], enabled=True, rate_hz=1e6)
    config = dataclasses.replace(config, cameras={camera: cam})
    rig = CameraRig(models.path(config.model.path), config, [cam])
    profile = models.load_profile()
    collector = _Collector()
    clock = [0]
    io = NodeIO(collector, "bench", clock=lambda: clock[0])
    app = RobotRenderer(io, config, rig, profile)
    names = list(profile.arm_joint_names)
    lift = encode("LiftState", {"stamp_ns": 1, "height_m": 0.3, "velocity_m_s": 0.0, "homed": True})
    odom = encode("Odometry", {"stamp_ns": 1, "frame_id": "odom", "child_frame_id": "base_link", "x": 0.0, "y": 0.0,
                               "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0})
    app.on_input({"id": "lift", "value": lift, "metadata": {}})
    app.on_input({"id": "odom", "value": odom, "metadata": {}})
    rng = np.random.default_rng(0)
    total, handling = [], []
    for i in range(frames + 1):
        js = encode("JointState", {"stamp_ns": i + 2, "names": names, "position": rng.uniform(-0.5, 0.5, 14),
                                   "velocity": [], "effort": []})
        clock[0] += 10**9
        t0 = time.perf_counter()
        app.on_input({"id": "joint_states", "value": js, "metadata": {}})
        t1 = time.perf_counter()
        app.step(clock[0])
        if i:  # the first one includes context creation
            total.append(collector.t_sent - t0)
            handling.append(t1 - t0)
    rig.close()
    return _stats(total), _stats(handling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=30)
    args = parser.parse_args()
    print(f"# renderer benchmark: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"MUJOCO_GL={os.environ.get('MUJOCO_GL')}, {args.frames} frames per camera, 640x480, "
          f"load average {os.getloadavg()[0]:.1f}")
    both = frames_per_camera(args.frames)
    print("| camera | shipped median ms | p99 ms | frames/s | MuJoCo defaults median ms | p99 ms | frames/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for cam in CAMERA_NAMES:
        (m1, p1), (m2, p2) = both[cam]
        print(f"| {cam} | {m1:.1f} | {p1:.1f} | {1e3 / m1:.0f} | {m2:.1f} | {p2:.1f} | {1e3 / m2:.1f} | {m2 / m1:.1f}x |")
    for cam in ("chest", "left_wrist"):
        (tm, tp), (hm, hp) = state_to_pixels(args.frames, cam)
        print(f"state-to-pixels {cam}: median {tm:.1f} ms, p99 {tp:.1f} ms; "
              f"state handling alone: median {hm * 1e3:.0f} us, p99 {hp * 1e3:.0f} us")


if __name__ == "__main__":
    main()
