"""renderer node: shows the robot and renders its five cameras from reported states.

Strictly read-only: it subscribes to states and publishes images and
diagnostics, nothing else. Physics is never stepped; qpos is set from the
newest valid states and ``mj_forward`` places bodies and cameras.

Inputs: ``joint_states`` (JointState, arms and grippers), ``lift`` (LiftState),
``odom`` (Odometry), ``ground_truth`` (GroundTruth, an alternative source per
group, chosen in ``sources:`` of the config) and ``tick`` (dora timer at the
render rate). Outputs: ``chest``, ``top_front``, ``top_back``, ``left_wrist``,
``right_wrist`` (flat uint8 RGB with image metadata) and ``diagnostics``.

Nothing is shown or published until every joint group (left arm, right arm,
lift, base) has had one valid state; diagnostics name the missing ones. A
window opens when a display exists (``viewer: auto``), otherwise rendering is
offscreen with ``MUJOCO_GL=egl``. Closing the window ends only the window.
With no window and no cameras (``--cameras none`` on a machine without a
display, as in the headless demo) there is nothing to do: the node sends one
diagnostics message saying so and ends, instead of reading every state.

Args: ``--config`` renderer YAML (default: the shipped alohamini2/renderer.yaml),
``--model`` MJCF to render instead of the configured one, ``--viewer
auto|on|off``, ``--cameras a,b`` to render only those cameras.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Sequence

import yaml
from teledora.models.config_files import load_renderer_config
from teledora.operators.rendering.renderer_options import chosen_cameras, wants_window

from teledora import models
from teledora.devices.rendering.camera_rig import (
    CameraRig,
    passive_viewer,
    resolve_model,
)
from teledora.devices.rendering.robot_renderer import LATEST_ONLY, RobotRenderer
from teledora.runtime.node_io import NodeIO, make_node, node_id


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="renderer", description=__doc__.splitlines()[0])
    p.add_argument("--config", default=os.environ.get("RENDERER_CONFIG"))
    p.add_argument("--model", default=os.environ.get("RENDERER_MODEL"))
    p.add_argument("--viewer", choices=("auto", "on", "off"), default=os.environ.get("RENDERER_VIEWER"))
    p.add_argument("--cameras", default=os.environ.get("RENDERER_CAMERAS"), help="comma-separated subset")
    return p.parse_args(argv)


def main(
    argv: Sequence[str] | None = None,
    node: Any = None,
    *,
    clock: Callable[[], int] = time.time_ns,
    window_factory: Callable[[Any, Any], Any] | None = None,
    rig: CameraRig | None = None,
) -> str:
    """Runs the node; returns the window state (``off``, ``waiting``, ``open``,
    ``closed``). Tests inject ``node``, ``clock``, ``window_factory`` and a
    prebuilt ``rig`` (which the caller then owns and closes)."""
    args = parse_args(argv)
    # Connect to dora before anything can fail: under dora 1.1.0 a node that exits
    # before connecting aborts the start of the whole dataflow.
    node = make_node(node)
    io = NodeIO(node, node_id("renderer"), clock=clock)
    owns_rig = rig is None
    try:
        config = load_renderer_config(args.config)
        window = wants_window(args.viewer or config.viewer, os.environ)
        cameras = chosen_cameras(config, args.cameras)
        if not window and not cameras:
            return _end_idle(io)
        if not window:
            os.environ.setdefault("MUJOCO_GL", "egl")  # before the first mujoco.Renderer
        if rig is None:
            model_path = resolve_model(args.model or config.model.path, io.log)
            rig = CameraRig(model_path, config, cameras)
        factory = (window_factory or passive_viewer) if window else None
        app = RobotRenderer(io, config, rig, models.load_profile(), factory)
    except (ValueError, OSError, RuntimeError, yaml.YAMLError) as exc:
        io.fail_start("renderer", exc)
    stopping = False
    timeout_s = 2.0 / config.window_rate_hz
    try:
        while True:
            batch = io.next_batch(timeout_s)
            if batch is None:
                break
            for event in io.newest(batch, LATEST_ONLY):
                if event["type"] == "INPUT":
                    app.on_input(event)
                elif event["type"] == "STOP":
                    stopping = True  # finish up: drain to the end of the stream, render no more
            if not stopping:
                app.step(clock())
            app.publish_diagnostics()
        app.publish_diagnostics(force=True)
    finally:
        app.close(close_rig=owns_rig)
    return app.window_state


def _end_idle(io: NodeIO) -> str:
    """No window (no display, or ``--viewer off``) and no cameras (``--cameras
    none``, as in the shipped dataflows): nothing would ever be shown or
    published. The node says so in one diagnostics message and ends, so that
    dora stops delivering it the states (about 130 a second in the sim demo)
    that it would only have read and dropped."""
    reason = ("idle: no window and no cameras to render (camera images come from the cameras node); "
              "nothing to do here, so the renderer stops, as intended")
    io.diag.set_status("ok", reason)
    io.diag.details = {"window": "off", "cameras": [], "idle": True}
    io.log("info", reason)
    io.publish_diagnostics(force=True)
    return "off"


def exit_process(window_state: str) -> None:
    """Ends the process once its work is done. After MuJoCo's passive viewer has
    run, interpreter teardown (GLFW) crashed now and then (about 1 in 8 runs
    under Xvfb); the window is gone and everything is sent, so skip teardown."""
    if window_state != "off":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    exit_process(main())
