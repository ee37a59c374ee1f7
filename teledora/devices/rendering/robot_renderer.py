"""The renderer's work between dora and the camera rig: apply the newest valid
states, render each camera when it is due, publish images and diagnostics,
refresh the optional window. Used by the renderer node and by `teledora video`
(which feeds it a recording instead of live messages).
"""

from __future__ import annotations

import time
from typing import Any, Mapping

from teledora.devices.rendering.camera_rig import CameraRig
from teledora.operators.model.joint_state_mapping import (
    JointStateError,
    JointStateMapping,
    PoseState,
    PublisherWatch,
    qpos_addresses,
)
from teledora.operators.rendering.camera_intrinsics import (
    CAMERA_NAMES,
    FrameSchedule,
    RendererConfig,
)
from teledora.operators.rendering.camera_rendering import camera_frame
from teledora.operators.rendering.object_poses import free_body_qpos_addresses, write_object_poses
from teledora.operators.rendering.pose_sources import PoseSources, joint_groups
from teledora.runtime.node_io import NodeIO

OUTPUTS = CAMERA_NAMES + ("diagnostics",)
STATE_INPUTS = {"joint_states": "JointState", "lift": "LiftState", "odom": "Odometry", "ground_truth": "GroundTruth"}
# Joint states are all applied (an arm may publish alone: keeping only the newest
# message could starve the other arm); for the rest only the newest counts.
LATEST_ONLY = {"lift", "odom", "ground_truth", "tick", "objects"}
# the sim's free objects (ObjectPoses): posed in the render model, sim only
OBJECTS_INPUT = "objects"


class RobotRenderer:
    """The renderer's state handling and output, driven by the node's event loop."""

    def __init__(self, io: NodeIO, config: RendererConfig, rig: CameraRig, profile: Any, window: Any = None,
                 jpeg_quality: int | None = None) -> None:
        self.io = io
        self.jpeg_quality = jpeg_quality  # None: raw RGB frames; else each frame sent as a JPEG
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
        self.object_addresses = free_body_qpos_addresses(rig.model)
        self.objects: Mapping[str, Any] | None = None
        self._objects_version = 0
        self._applied_objects = 0
        self._view_period_ns = int(1e9 / config.window_rate_hz)
        self._next_view_ns = 0

    # ---------------------------------------------------------------- inputs
    def on_input(self, event: Mapping[str, Any]) -> None:
        source = event["id"]
        if source == OBJECTS_INPUT:
            msg = self.io.decode(event, "ObjectPoses")
            if msg is not None:
                self.objects = msg
                self._objects_version += 1
            return
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
        """Renders the due cameras (at most ``max_renders_per_cycle``) and
        refreshes the window when due, applying the newest valid pose first; a
        step with nothing due leaves the model as it is (no kinematics)."""
        missing = self.pose.missing_groups()
        if missing:
            self.io.diag.set_status("warn", f"waiting for first valid state of {missing}")
            return
        self.io.diag.set_status("ok", f"rendering {sorted(self.rig.cameras)}; window {self.window_state}")
        due = self.schedule.due(now_ns)[: self.config.max_renders_per_cycle]
        if not due and not self._window_due(now_ns):
            return  # states come at 50-90 Hz, frames far less often: kinematics only for a frame drawn
        if self.pose.version != self._applied_version or self._objects_version != self._applied_objects:
            self.pose.write(self.rig.data.qpos)
            if self.objects is not None:
                unknown = write_object_poses(self.rig.data.qpos, self.object_addresses, self.objects)
                if unknown:
                    self.io.reject(f"objects: no free body to pose, or an invalid pose, for {unknown}")
            self.rig.forward()
            self._applied_version = self.pose.version
            self._applied_objects = self._objects_version
        self._refresh_window(now_ns)
        for name in due:
            self._render(name, now_ns)

    def _window_due(self, now_ns: int) -> bool:
        return self.window_factory is not None and self.window_state != "closed" and now_ns >= self._next_view_ns

    def _refresh_window(self, now_ns: int) -> None:
        if not self._window_due(now_ns):
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
        value, meta = camera_frame(image, name, self.rig.intrinsics[name], self.pose.stamp_ns, self.io.clock(),
                                   self.pose.oldest_stamp_ns(), self.jpeg_quality)
        self.io.send_raw(name, value, meta)
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
