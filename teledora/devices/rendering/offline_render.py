"""The robot's cameras rendered offline from a recorded run, at any instant.

A sim run records every state the cameras need (the sim's ground truth, or the
arms', lift's and base's reports, and the free objects' poses), so its camera
images can be made again after the run, at exactly the times a video or a
dataset wants, however slowly the live cameras ran. :class:`RecordedStateRenderer`
reads those states, checks each message as the live cameras do (a rejected one
is counted and never used), and for a time ``t`` sets the kinematic model to
the states interpolated at ``t`` (:mod:`teledora.operators.rendering.pose_tracks`)
and renders every camera.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Iterable

import numpy as np

from teledora.devices.rendering.camera_rig import CameraRig, resolve_model
from teledora.operators.contract.messages import MessageError, decode
from teledora.operators.errors import TeledoraError
from teledora.operators.model.joint_state_mapping import JointStateError, JointStateMapping, qpos_addresses
from teledora.operators.rendering.camera_intrinsics import RendererConfig
from teledora.operators.rendering.object_poses import free_body_qpos_addresses
from teledora.operators.rendering.pose_sources import PoseSources, joint_groups
from teledora.operators.rendering.pose_tracks import PoseTracks
from teledora.recording.run_reader import RunReader

# input name -> (message kind, recorded (node, output) candidates, first present wins)
STATE_SOURCES = {
    "ground_truth": ("GroundTruth", [("sim", "ground_truth")]),
    "joint_states": ("JointState", [("arms", "joint_states")]),
    "lift": ("LiftState", [("lift", "state")]),
    "odom": ("Odometry", [("base", "odom")]),
}
OBJECT_SOURCES = [("sim", "objects")]
OWN_SOURCE = {"arms": "joint_states", "lift": "lift", "base": "odom"}
GROUP_KINDS = {"left_arm": "arms", "right_arm": "arms", "lift": "lift", "base": "base"}


class OfflineRenderError(TeledoraError, RuntimeError):
    """The run lacks the states to render its cameras."""


def _topic_of(reader: RunReader, candidates: list[tuple[str, str]]) -> str | None:
    sources = reader.sources()
    for want in candidates:
        for topic, src in sorted(sources.items()):
            if src == want and reader.read_topic(topic).table.num_rows:
                return topic
    return None


def _rows(reader: RunReader, topic: str) -> Iterable[tuple[Any, int | None]]:
    for msg in reader.iter_topic(topic):
        yield msg.value, msg.stamp_ns if msg.stamp_ns is not None else (msg.dora_ns or msg.recv_ns)


class RecordedStateRenderer:
    """Every camera of the render model, posed from a run's recorded states.

    Args:
        reader: The run.
        config: Renderer settings (model, cameras and their intrinsics).
        profile: The robot profile (arm joints, lift offset).
        cameras: Names of the cameras to render (default: every configured one,
            enabled or not).
        size: (width, height) for every camera instead of its configured size.

    Raises:
        OfflineRenderError: a joint group has no recorded state at all.
    """

    def __init__(self, reader: RunReader, config: RendererConfig, profile: Any,
                 cameras: Iterable[str] | None = None, size: tuple[int, int] | None = None) -> None:
        os.environ.setdefault("MUJOCO_GL", "egl")  # before the first mujoco.Renderer
        names = list(cameras) if cameras is not None else list(config.cameras)
        unknown = sorted(set(names) - set(config.cameras))
        if unknown:
            raise OfflineRenderError(f"unknown cameras {unknown}; configured {sorted(config.cameras)}")
        topics = {name: _topic_of(reader, cands) for name, (_, cands) in STATE_SOURCES.items()}
        # the sim's own state where it was recorded (what the live sim cameras use), else the reports
        sources = {g: "ground_truth" if topics["ground_truth"] else own for g, own in OWN_SOURCE.items()}
        for group, source in sources.items():
            if topics[source] is None:
                raise OfflineRenderError(f"run has no state for {group} (no {source} topic, no ground truth)")
        settings = []
        for name in names:
            s = dataclasses.replace(config.cameras[name], enabled=True)
            if size is not None:
                s = dataclasses.replace(s, width=int(size[0]), height=int(size[1]))
            settings.append(s)
        self.config = dataclasses.replace(config, sources=sources, cameras={s.name: s for s in settings})
        self.rig = CameraRig(resolve_model(self.config.model.path), self.config, settings)
        self.cameras = {s.name: (s.width, s.height) for s in settings}
        mapping = JointStateMapping(qpos_addresses(self.rig.model), joint_groups(profile, self.config))
        self.mapping = mapping
        self.rejected = 0
        self.first_rejection = ""
        self.tracks = PoseTracks(wrapping_joints=[self.config.model.base_joints[2]])
        pose_sources = PoseSources(mapping, self.config, profile.lift_height_to_joint, lambda text: None)
        for name in sorted({s for s in sources.values()}):
            kind = STATE_SOURCES[name][0]
            for value, stamp in _rows(reader, topics[name]):
                try:
                    msg = decode(kind, value)
                    groups = pose_sources.groups_from(name, msg)
                except (MessageError, JointStateError) as exc:
                    self._reject(f"{topics[name]}: {exc}")
                    continue
                if groups:
                    self.tracks.add_groups(groups, msg.get("stamp_ns") or stamp)
        self.objects = free_body_qpos_addresses(self.rig.model)
        objects_topic = _topic_of(reader, OBJECT_SOURCES)
        if objects_topic is not None:
            for value, _ in _rows(reader, objects_topic):
                try:
                    msg = decode("ObjectPoses", value)
                except MessageError as exc:
                    self._reject(f"{objects_topic}: {exc}")
                    continue
                refused = self.tracks.add_objects(msg)
                if refused:
                    self._reject(f"{objects_topic}: no valid pose for {refused}")
        for name in self.tracks.objects:
            if name not in self.objects:
                self._reject(f"{objects_topic}: the render model has no free body {name!r}")
        missing = [g for g in mapping.groups if g not in self.tracks.groups]
        if missing:
            raise OfflineRenderError(f"the run never had a valid state for {missing}"
                                     + (f" (first rejection: {self.first_rejection})" if self.first_rejection else ""))
        start = self.tracks.start_ns(mapping.groups)
        assert start is not None
        self.start_ns = start
        self.end_ns = self.tracks.end_ns()
        self.renders = 0
        self.render_s = 0.0

    def _reject(self, why: str) -> None:
        self.rejected += 1
        self.first_rejection = self.first_rejection or why

    def pose_at(self, t_ns: int) -> None:
        """Sets the model to the recorded states at ``t_ns`` (kinematics only)."""
        qpos = self.rig.data.qpos
        self.mapping.write(qpos, self.tracks.joints_at(t_ns))
        for name, (pos, quat) in self.tracks.objects_at(t_ns).items():
            adr = self.objects.get(name)
            if adr is not None:  # an object the render model lacks is not drawn
                qpos[adr:adr + 3] = pos
                qpos[adr + 3:adr + 7] = quat
        self.rig.forward()

    def render(self, t_ns: int, cameras: Iterable[str] | None = None) -> dict[str, np.ndarray]:
        """(H, W, 3) RGB images of ``cameras`` (default all) at ``t_ns``."""
        t0 = time.perf_counter()
        self.pose_at(t_ns)
        out = {name: self.rig.render(name) for name in (cameras if cameras is not None else self.cameras)}
        self.render_s += time.perf_counter() - t0
        self.renders += len(out)
        return out

    @property
    def frames_per_s(self) -> float:
        """Rendering throughput so far (camera images per second)."""
        return self.renders / self.render_s if self.render_s > 0 else 0.0

    def close(self) -> None:
        self.rig.close()

    def __enter__(self) -> "RecordedStateRenderer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
