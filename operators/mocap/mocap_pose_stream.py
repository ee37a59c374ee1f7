"""From NatNet datagrams to ``MocapPose`` messages for one rigid body.

:class:`MocapPoseStream` is the pure core of the hardware ``mocap`` node: it
is fed every datagram with its host arrival time and returns the poses to
publish. It tracks the server's NatNet version (from SERVER_INFO), resolves
the robot's rigid body by id or by name (from MODEL_DEF), keeps the Motive →
host clock mapping (echo replies and transmit stamps), converts Motive's frame
into the world frame, and counts what it sees: frames, frame-number gaps
(dropped frames), invalid tracking, rejected packets.

Rules: a frame where the body is not tracked (or absent) yields a pose with
``tracking_valid = False`` and NaN position/orientation, never the last good
pose; a frame older than the newest one seen is rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from teledora.operators.mocap.mocap_frames import MocapFrameTransform
from teledora.operators.mocap.natnet_clock import MotiveClockMapper
from teledora.operators.mocap.natnet_frame import FrameOfData, parse_frame_of_data
from teledora.operators.mocap.natnet_model_def import parse_model_def
from teledora.operators.mocap.natnet_protocol import (
    MessageId,
    NatNetProtocolError,
    NatNetVersionError,
    ServerInfo,
    check_version,
    parse_echo_response,
    parse_server_info,
    split_packet,
)

NAN3 = [math.nan] * 3
NAN4 = [math.nan] * 4


class MocapStreamError(NatNetProtocolError):
    """A datagram is well-formed but cannot be used now (e.g. before SERVER_INFO)."""


@dataclass(frozen=True)
class RigidBodySelector:
    """Which rigid body is the robot: by Motive id, by name, or both (id wins)."""

    id: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.id is None and not self.name:
            raise ValueError("select the robot's rigid body by id or by name")


@dataclass
class StreamCounters:
    """What the stream has seen so far."""

    frames: int = 0
    poses_valid: int = 0
    poses_invalid: int = 0
    body_missing: int = 0
    dropped_frames: int = 0
    stale_frames: int = 0
    rejected: int = 0
    rejected_by_reason: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        self.rejected += 1
        key = reason.split(":")[0]
        self.rejected_by_reason[key] = self.rejected_by_reason.get(key, 0) + 1


@dataclass
class HandleResult:
    """Poses to publish and human-readable notices (for the node's log)."""

    poses: list[dict[str, Any]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


class MocapPoseStream:
    """Turns NatNet datagrams into MocapPose message dicts.

    Args:
        selector: The robot's rigid body.
        transform: Motive → world / rigid body → base_link transform.
        frame_id: Frame name written into each pose (the profile's world frame).
    """

    def __init__(self, selector: RigidBodySelector, transform: MocapFrameTransform, frame_id: str) -> None:
        self.selector = selector
        self.transform = transform
        self.frame_id = frame_id
        self.server: ServerInfo | None = None
        self.clock: MotiveClockMapper | None = None
        self.body_id: int | None = selector.id
        self.body_name: str = selector.name or ""
        self.last_frame_number: int | None = None
        self.version_error: str | None = None
        self.counters = StreamCounters()
        self.models_changed = False

    @property
    def connected(self) -> bool:
        return self.server is not None

    def handle(self, data: bytes, arrival_ns: int) -> HandleResult:
        """Processes one datagram received at host time ``arrival_ns``.

        Raises:
            NatNetProtocolError: the datagram is rejected (the caller counts
                and logs it via :meth:`reject`); the stream state is unchanged.
        """
        packet = split_packet(data)
        mid = packet.message_id
        if mid == MessageId.FRAME_OF_DATA:
            return self._frame(packet.payload, arrival_ns)
        if mid == MessageId.SERVER_INFO:
            return self._server_info(packet.payload)
        if mid == MessageId.MODEL_DEF:
            return self._model_def(packet.payload)
        if mid == MessageId.ECHO_RESPONSE:
            sent, server_ticks = parse_echo_response(packet.payload)
            if self.clock is not None:
                self.clock.add_echo(sent, server_ticks, arrival_ns)
            return HandleResult()
        if mid in (MessageId.MESSAGE_STRING, MessageId.RESPONSE):
            text = packet.payload.split(b"\0", 1)[0].decode("utf-8", errors="replace")
            return HandleResult(notices=[f"Motive says: {text}"] if text else [])
        if mid == MessageId.UNRECOGNIZED_REQUEST:
            return HandleResult(notices=["Motive did not recognise a request"])
        raise MocapStreamError(f"unexpected message id {mid}")

    def reject(self, reason: str) -> None:
        """Counts a rejected datagram."""
        self.counters.reject(reason)

    def _server_info(self, payload: bytes) -> HandleResult:
        info = parse_server_info(payload)
        self.server = info
        self.clock = MotiveClockMapper(info.high_res_clock_frequency_hz)
        self.last_frame_number = None  # a (re)connected server restarts its frame numbers
        version = ".".join(map(str, info.natnet_version))
        try:
            check_version(info.natnet_version)
            self.version_error = None
        except NatNetVersionError as exc:
            self.version_error = str(exc)
            return HandleResult(notices=[f"connected to {info.app_name} but {exc}"])
        return HandleResult(
            notices=[
                f"connected to {info.app_name} {'.'.join(map(str, info.app_version))}, NatNet {version}, "
                f"clock {info.high_res_clock_frequency_hz} Hz, "
                f"{'multicast ' + info.multicast_group if info.is_multicast else 'unicast'}"
            ]
        )

    def _require_version(self) -> tuple[int, int, int, int]:
        if self.server is None:
            raise MocapStreamError("no SERVER_INFO yet: cannot tell the NatNet version")
        if self.version_error is not None:
            raise NatNetVersionError(self.version_error)
        return self.server.natnet_version

    def _model_def(self, payload: bytes) -> HandleResult:
        bodies = parse_model_def(payload, self._require_version())
        self.models_changed = False
        by_name = {b.name: b.id for b in bodies}
        by_id = {b.id: b.name for b in bodies}
        if self.selector.id is not None:
            self.body_name = by_id.get(self.selector.id, self.body_name)
            return HandleResult()
        if self.selector.name in by_name:
            new_id = by_name[self.selector.name]
            changed = new_id != self.body_id
            self.body_id = new_id
            return HandleResult(notices=[f"rigid body {self.selector.name!r} is id {new_id}"] if changed else [])
        return HandleResult(notices=[f"rigid body {self.selector.name!r} not in Motive's models {sorted(by_name)}"])

    def _stamp(self, frame: FrameOfData, arrival_ns: int) -> int:
        assert self.clock is not None
        self.clock.add_transmit(arrival_ns, frame.stamp_transmit)
        if frame.stamp_camera_mid_exposure > 0 and self.clock.has_estimate:
            return self.clock.to_host_ns(frame.stamp_camera_mid_exposure)
        return arrival_ns

    def _frame(self, payload: bytes, arrival_ns: int) -> HandleResult:
        frame = parse_frame_of_data(payload, self._require_version())
        if self.last_frame_number is not None and frame.frame_number <= self.last_frame_number:
            self.counters.stale_frames += 1
            raise MocapStreamError(
                f"stale frame: number {frame.frame_number} after {self.last_frame_number} (out of order or repeated)"
            )
        if self.last_frame_number is not None:
            self.counters.dropped_frames += frame.frame_number - self.last_frame_number - 1
        self.last_frame_number = frame.frame_number
        self.counters.frames += 1
        self.models_changed = self.models_changed or frame.tracked_models_changed
        if self.body_id is None:
            return HandleResult()  # name not resolved yet: nothing to say about the robot
        stamp = self._stamp(frame, arrival_ns)
        body = next((b for b in frame.rigid_bodies if b.id == self.body_id), None)
        msg: dict[str, Any] = {
            "stamp_ns": int(stamp),
            "frame_id": self.frame_id,
            "rigid_body_id": int(self.body_id),
            "name": self.body_name,
            "position": NAN3,
            "orientation": NAN4,
            "tracking_valid": False,
            "mean_error_m": math.nan,
            "frame_number": int(frame.frame_number),
        }
        if body is None:
            self.counters.body_missing += 1
            self.counters.poses_invalid += 1
            return HandleResult(poses=[msg])
        msg["mean_error_m"] = float(body.mean_error_m)
        if not body.tracking_valid:
            self.counters.poses_invalid += 1
            return HandleResult(poses=[msg])
        try:
            p, q = self.transform.base_pose(body.position, body.orientation_xyzw)
        except ValueError as exc:
            self.counters.poses_invalid += 1
            self.counters.reject(f"bad rigid body pose: {exc}")
            return HandleResult(poses=[msg])
        msg.update(position=p.tolist(), orientation=q.tolist(), tracking_valid=True)
        self.counters.poses_valid += 1
        return HandleResult(poses=[msg])

    def status(self) -> dict[str, Any]:
        """Counters and state for diagnostics details."""
        c = self.counters
        out: dict[str, Any] = {
            "connected": self.connected,
            "rigid_body_id": self.body_id if self.body_id is not None else -1,
            "rigid_body_name": self.body_name,
            "frames": c.frames,
            "poses_valid": c.poses_valid,
            "poses_invalid": c.poses_invalid,
            "body_missing": c.body_missing,
            "dropped_frames": c.dropped_frames,
            "stale_frames": c.stale_frames,
            "rejected_by_reason": dict(c.rejected_by_reason),
            "last_frame_number": self.last_frame_number if self.last_frame_number is not None else -1,
        }
        if self.server is not None:
            out["server_natnet_version"] = ".".join(map(str, self.server.natnet_version))
        if self.version_error:
            out["version_error"] = self.version_error
        if self.clock is not None and self.clock.has_estimate:
            off = self.clock.offset()
            out.update(
                clock_offset_ns=off.offset_ns,
                clock_uncertainty_ns=off.uncertainty_ns,
                clock_source=off.source,
                clock_drift_ppm=off.drift_ppm,
            )
        return out
