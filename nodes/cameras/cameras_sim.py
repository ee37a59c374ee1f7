"""cameras node, sim variant: the robot's cameras rendered offscreen by MuJoCo from
the reported states (the same rig and code as the renderer's window, with no window).

Inputs: ``joint_states`` (JointState), ``lift`` (LiftState), ``odom`` (Odometry),
or instead, with ``--pose-source ground_truth`` (as in the sim dataflows),
``ground_truth`` (GroundTruth: the sim's own arm joints, lift and base, one
message at 50 Hz in place of about 190 state messages a second; a camera sees
the robot itself, not its reports); ``objects`` (ObjectPoses, the scene's free
bodies); ``tick`` (dora timer: wakes the loop so due cameras render). Outputs: ``chest``,
``top_front``, ``top_back``, ``left_wrist``, ``right_wrist`` (each render as one
JPEG, flat uint8 with image metadata and ``encoding: "jpeg"``, the form the
robot's cameras send; ``capture_ns`` is the render time), ``calibration``
(CameraCalibration per rendered camera, at start and every
``calibration_period_s`` of cameras.yaml) and ``diagnostics``.

Each camera renders at its renderer.yaml ``rate_hz``; nothing is published
until every joint group has had a valid state (as in the renderer). Renders
are best effort: the process lowers its own CPU priority, on every thread
(``nice`` +10, or ``CAMERAS_NICE``), so that on a busy machine the control nodes keep the CPU
and the cameras fall behind their rate instead (late frames are skipped).

Args: ``--config`` renderer YAML, ``--cameras-config`` cameras YAML,
``--model`` MJCF, ``--cameras a,b`` to render only those, ``--jpeg-quality``
(1-100, default 90, ``CAMERAS_JPEG_QUALITY``), ``--pose-source
reports|ground_truth`` (``reports``, the default, follows ``sources:`` of the
renderer YAML; ``ground_truth`` poses every group from ``ground_truth``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any, Callable, Sequence

import yaml

from teledora import models
from teledora.devices.rendering.camera_rig import CameraRig, resolve_model
from teledora.devices.rendering.robot_renderer import LATEST_ONLY, RobotRenderer
from teledora.models.config_files import load_cameras_config, load_renderer_config
from teledora.operators.cameras.camera_config import CalibrationClock, calibration_message
from teledora.operators.rendering.renderer_options import chosen_cameras
from teledora.runtime.cpu_priority import lower_priority
from teledora.runtime.node_io import NodeIO, make_node, node_id

SOURCE = "sim"
NICE = 10
POSE_SOURCES = ("reports", "ground_truth")
JPEG_QUALITY = 90  # a 640x480 render in about 40 kB, within a few levels of 255 of the pixels


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="cameras_sim", description=__doc__.splitlines()[0])
    p.add_argument("--config", default=os.environ.get("RENDERER_CONFIG"))
    p.add_argument("--cameras-config", default=os.environ.get("CAMERAS_CONFIG"))
    p.add_argument("--model", default=os.environ.get("RENDERER_MODEL"))
    p.add_argument("--cameras", default=os.environ.get("RENDERER_CAMERAS"), help="comma-separated subset")
    p.add_argument("--jpeg-quality", type=int, default=int(os.environ.get("CAMERAS_JPEG_QUALITY", JPEG_QUALITY)),
                   choices=range(1, 101), metavar="1-100", help="JPEG quality of the published frames")
    p.add_argument("--pose-source", choices=POSE_SOURCES, default="reports",
                   help="reports: the renderer YAML's sources; ground_truth: every group from the ground_truth input")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, *, clock: Callable[[], int] = time.time_ns,
         rig: CameraRig | None = None) -> None:
    args = parse_args(argv)
    node = make_node(node)  # connect before anything can fail (dora 1.1.0 aborts the start otherwise)
    io = NodeIO(node, node_id("cameras"), clock=clock)
    raw_nice = os.environ.get("CAMERAS_NICE", str(NICE))
    try:
        # software rendering yields to the control loop; dora's threads (started by make_node) too
        lower_priority(int(raw_nice))
    except ValueError:
        io.log("warn", f"CAMERAS_NICE={raw_nice!r} is not a whole number of steps >= 0: priority left as it is")
    owns_rig = rig is None
    try:
        config = load_renderer_config(args.config)
        if args.pose_source == "ground_truth":
            config = dataclasses.replace(config, sources={group: "ground_truth" for group in config.sources})
        mounts = load_cameras_config(args.cameras_config)
        os.environ.setdefault("MUJOCO_GL", "egl")  # before the first mujoco.Renderer
        if rig is None:
            model_path = resolve_model(args.model or config.model.path, io.log)
            rig = CameraRig(model_path, config, chosen_cameras(config, args.cameras))
        app = RobotRenderer(io, config, rig, models.load_profile(), None, jpeg_quality=args.jpeg_quality)
    except (ValueError, OSError, RuntimeError, yaml.YAMLError) as exc:
        io.fail_start("cameras", exc)
    calibration = CalibrationClock(mounts.calibration_period_s)
    stopping = False
    try:
        while True:
            batch = io.next_batch(0.1)
            if batch is None:
                break
            for event in io.newest(batch, LATEST_ONLY):
                if event["type"] == "INPUT":
                    app.on_input(event)
                elif event["type"] == "STOP":
                    stopping = True
            if not stopping:
                app.step(clock())
                if calibration.due(clock()):
                    for name, cam in rig.cameras.items():
                        msg = calibration_message(name, SOURCE, "mujoco", rig.intrinsics[name], cam.rate_hz,
                                                  mounts.cameras[name].mount, clock())
                        io.send("calibration", "CameraCalibration", msg)
            app.publish_diagnostics()
        app.publish_diagnostics(force=True)
    finally:
        app.close(close_rig=owns_rig)


if __name__ == "__main__":
    main()
