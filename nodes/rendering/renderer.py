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

Args: ``--config`` renderer YAML (default: the shipped alohamini2/renderer.yaml),
``--model`` MJCF to render instead of the configured one, ``--viewer
auto|on|off``, ``--cameras a,b`` to render only those cameras.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import yaml

from teledora import models
from teledora.models.config_files import load_renderer_config
from teledora.runtime.node_io import NodeIO, make_node, newest_per_input, next_batch, node_id
from teledora.operators.rendering.camera_intrinsics import (
    CAMERA_NAMES,
    CameraSettings,
    FrameSchedule,
    RendererConfig,
    distortion_maps,
)
from teledora.operators.rendering.camera_rendering import (
    camera_frame_metadata,
    camera_scene_option,
    distort_image,
    prepare_camera_model,
    set_render_flags,
)
from teledora.operators.model.joint_state_mapping import (
    JointStateError,
    JointStateMapping,
    PoseState,
    PublisherWatch,
    qpos_addresses,
)
from teledora.operators.rendering.pose_sources import PoseSources, joint_groups
from teledora.operators.rendering.renderer_options import chosen_cameras, wants_window

OUTPUTS = CAMERA_NAMES + ("diagnostics",)
STATE_INPUTS = {"joint_states": "JointState", "lift": "LiftState", "odom": "Odometry", "ground_truth": "GroundTruth"}
# Joint states are all applied (an arm may publish alone: keeping only the newest
# message could starve the other arm); for the rest only the newest counts.
_LATEST_ONLY = {"lift", "odom", "ground_truth", "tick"}


class CameraRig:
    """The kinematic model and one offscreen renderer per image size.

    Reading the model file and owning GL contexts stay here; how the model is
    set up for the cameras is ``operators/rendering/camera_rendering.py``.

    Args:
        model_path: MJCF file holding the robot (and its room).
        config: Renderer settings.
        cameras: The cameras to render; each must exist in the model.
    """

    def __init__(self, model_path: Path, config: RendererConfig, cameras: Sequence[CameraSettings]) -> None:
        import mujoco

        self.mujoco = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(model_path))
        self.data = mujoco.MjData(self.model)
        self.cameras = {c.name: c for c in cameras}
        self.intrinsics = {c.name: c.intrinsics() for c in cameras}
        self._cam_id = prepare_camera_model(self.model, config, cameras, str(model_path))
        self.shadows = config.shadows
        self._renderers: dict[tuple[int, int], Any] = {}  # one GL context per image size
        self._scene_option = camera_scene_option()
        self._maps = {n: distortion_maps(i) for n, i in self.intrinsics.items() if i.distorted}
        mujoco.mj_forward(self.model, self.data)

    def forward(self) -> None:
        """Kinematics only: body, site and camera poses from qpos (no physics step)."""
        self.mujoco.mj_forward(self.model, self.data)

    def render(self, name: str) -> np.ndarray:
        """(H, W, 3) uint8 RGB image of camera ``name`` at the current pose."""
        cam = self.cameras[name]
        key = (cam.width, cam.height)
        if key not in self._renderers:
            self._renderers[key] = self.mujoco.Renderer(self.model, cam.height, cam.width)
        renderer = self._renderers[key]
        renderer.update_scene(self.data, self._cam_id[name], self._scene_option)
        set_render_flags(renderer.scene, self.shadows)
        image = renderer.render()
        if name in self._maps:
            image = distort_image(image, self._maps[name])
        return image

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()


class RendererNode:
    """The renderer's state handling and output, driven by the node's event loop."""

    def __init__(self, io: NodeIO, config: RendererConfig, rig: CameraRig, profile: Any, window: Any = None) -> None:
        self.io = io
        self.config = config
        self.rig = rig
        self.profile = profile
        self.mapping = JointStateMapping(qpos_addresses(rig.model), joint_groups(profile, config))
        self.pose = PoseState(self.mapping)
        self.sources = PoseSources(self.mapping, config, profile.lift_height_to_joint, self._warn)
        self.watch = {name: PublisherWatch(name) for name in STATE_INPUTS}
        self.window_factory = window
        self.window: Any = None
        self.window_state = "off" if window is None else "waiting"
        self.schedule = FrameSchedule(list(rig.cameras.values()), io.clock())
        self.frames = dict.fromkeys(rig.cameras, 0)
        self.render_ms = dict.fromkeys(rig.cameras, 0.0)
        self._applied_version = -1
        self._view_period_ns = int(1e9 / config.window_rate_hz)
        self._next_view_ns = 0

    # ---------------------------------------------------------------- inputs
    def on_input(self, event: Mapping[str, Any]) -> None:
        source = event["id"]
        kind = STATE_INPUTS.get(source)
        if kind is None:
            return
        msg = self.io.decode(event, kind)
        if msg is None:
            return
        warning = self.watch[source].observe(msg["stamp_ns"], event.get("metadata"))
        if warning:
            self._warn(warning)
        try:
            groups = self.sources.groups_from(source, msg)
        except JointStateError as exc:
            self.io.reject(f"input {source!r}: {exc}")
            return
        if groups:
            self.pose.update(groups, msg["stamp_ns"])

    def _warn(self, text: str) -> None:
        """A second publisher or source: kept as the last error and logged."""
        self.io.diag.error(text)
        self.io.log("warn", text)

    # ---------------------------------------------------------------- output
    def step(self, now_ns: int) -> None:
        """Updates the pose if a new valid state came, refreshes the window and
        renders the due cameras (at most ``max_renders_per_cycle``)."""
        missing = self.pose.missing_groups()
        if missing:
            self.io.diag.set_status("warn", f"waiting for first valid state of {missing}")
            return
        if self.pose.version != self._applied_version:
            self.pose.write(self.rig.data.qpos)
            self.rig.forward()
            self._applied_version = self.pose.version
        self.io.diag.set_status("ok", f"rendering {sorted(self.rig.cameras)}; window {self.window_state}")
        self._refresh_window(now_ns)
        for name in self.schedule.due(now_ns)[: self.config.max_renders_per_cycle]:
            self._render(name, now_ns)

    def _refresh_window(self, now_ns: int) -> None:
        if self.window_factory is None or self.window_state == "closed" or now_ns < self._next_view_ns:
            return
        self._next_view_ns = now_ns + self._view_period_ns
        try:
            if self.window is None:
                self.window = self.window_factory(self.rig.model, self.rig.data)
                self.window_state = "open"
            if not self.window.is_running():
                self._close_window("window closed by the user; cameras continue")
                return
            self.window.sync()
        except Exception as exc:  # the window is optional: losing it must not stop the node
            self._close_window(f"window failed ({exc}); cameras continue")

    def _close_window(self, reason: str) -> None:
        self.window_state = "closed"
        self.io.log("info", reason)
        try:
            if self.window is not None:
                self.window.close()
                # the viewer runs its own thread: let it finish before GL state goes away
                deadline = time.monotonic() + 2.0
                while self.window.is_running() and time.monotonic() < deadline:
                    time.sleep(0.01)
        except Exception:
            pass
        self.window = None

    def _render(self, name: str, now_ns: int) -> None:
        t0 = time.perf_counter()
        image = self.rig.render(name)
        self.render_ms[name] = (time.perf_counter() - t0) * 1e3
        self.schedule.rendered(name, now_ns)
        meta = camera_frame_metadata(
            name, self.rig.intrinsics[name], self.pose.stamp_ns, self.io.clock(), self.pose.oldest_stamp_ns()
        )
        self.io.send_raw(name, pa.array(np.ascontiguousarray(image).reshape(-1), type=pa.uint8()), meta)
        self.frames[name] += 1

    def publish_diagnostics(self, force: bool = False) -> None:
        d = self.io.diag
        d.dropped = sum(self.schedule.dropped.values())
        d.details = {
            "missing_groups": self.pose.missing_groups(),
            "frames": dict(self.frames),
            "dropped_frames": dict(self.schedule.dropped),
            "render_ms": {k: round(v, 2) for k, v in self.render_ms.items()},
            "window": self.window_state,
            "second_publishers": [w.warning for w in self.watch.values() if w.warning],
        }
        self.io.publish_diagnostics(force)

    def close(self, close_rig: bool = True) -> None:
        if self.window is not None:
            self._close_window("renderer stopping")
        if close_rig:
            self.rig.close()


def resolve_model(path: str, log: Callable[[str, str], None] | None = None) -> Path:
    """The MJCF to load: a shipped name, a file, or a URDF converted on the fly
    (as `teledora model import` would, into a temporary folder)."""
    p = Path(path)
    p = p if p.is_absolute() or p.exists() else models.path(path)
    if p.suffix.lower() != ".urdf":
        return p
    import tempfile

    from teledora.commands.model import ImportOptions, convert_urdf

    out = Path(tempfile.mkdtemp(prefix="teledora-renderer-")) / f"{p.stem}.xml"
    report = convert_urdf(p, out, ImportOptions())
    for line in report.lines():
        if log is not None and not line.startswith("mesh "):
            log("info", f"URDF import: {line}")
    return out


def passive_viewer(model: Any, data: Any) -> Any:
    import mujoco.viewer

    return mujoco.viewer.launch_passive(model, data, show_left_ui=False, show_right_ui=False)


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
        if not window:
            os.environ.setdefault("MUJOCO_GL", "egl")  # before the first mujoco.Renderer
        if rig is None:
            model_path = resolve_model(args.model or config.model.path, io.log)
            rig = CameraRig(model_path, config, chosen_cameras(config, args.cameras))
        factory = (window_factory or passive_viewer) if window else None
        app = RendererNode(io, config, rig, models.load_profile(), factory)
    except (ValueError, OSError, RuntimeError, yaml.YAMLError) as exc:
        reason = f"renderer could not start: {exc}"
        io.diag.set_status("error", reason)
        io.diag.error(reason)
        io.log("error", reason)
        io.publish_diagnostics(force=True)
        raise SystemExit(reason) from exc
    stopping = False
    timeout_s = 2.0 / config.window_rate_hz
    try:
        while True:
            batch = next_batch(node, timeout_s)
            if batch is None:
                break
            for event in newest_per_input(batch, _LATEST_ONLY):
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
