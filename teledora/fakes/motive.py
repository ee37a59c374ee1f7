"""A fake OptiTrack Motive on 127.0.0.1 that speaks NatNet over UDP.

It answers the command port like Motive does (CONNECT → SERVER_INFO,
REQUEST_MODEL_DEF → MODEL_DEF, ECHO_REQUEST → ECHO_RESPONSE, KEEP_ALIVE
registers the client's data socket) and sends FRAME_OF_DATA packets built
with the project's NatNet encoder to the client. Its high-resolution clock
runs at ``clock_frequency_hz`` from an origin it chooses, so a client has to
map it onto the host clock; every frame sent is recorded with its true
mid-exposure host time for the test to compare against.

MODEL_DEF answers as Motive does: a marker set per rigid body first, then
the rigid bodies, each with three markers and a pivot rotated about Motive's
y axis and tilted about x (``pivot_rotation_xyzw``), which NatNet 4.2 puts
on the wire.

Faults on demand: dropped frames (frame numbers skipped), invalid tracking,
a NatNet version the client does not support, and arbitrary raw datagrams
(truncated or corrupted packets).
"""

from __future__ import annotations

import math
import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_model_def as md
from teledora.operators.mocap import natnet_protocol as nn
@dataclass(frozen=True)
class SentFrame:
    """One frame the fake sent: number, true exposure time on the host clock, validity."""

    frame_number: int
    exposure_host_ns: int
    tracking_valid: bool


class FakeMotive:
    """NatNet server on 127.0.0.1 (ephemeral command port).

    Args:
        natnet_version: Version announced in SERVER_INFO; frames and MODEL_DEF
            use its layout (the 4.1 layout when its major is not 3 or 4).
        rigid_bodies: Rigid-body names and ids announced in MODEL_DEF.
        pivot_rotation_xyzw: Pivot orientation of every described rigid body
            (default: turned 30 degrees about Motive's y axis and tilted 10
            degrees about x, so every quaternion component is non-zero).
        clock_frequency_hz: Motive's high-resolution clock rate.
        exposure_to_transmit_s: Processing latency between mid-exposure and transmit.
        clock: Host clock (ns).
        multicast_group: Stream frames to this group on ``data_port`` (via the
            loopback interface) instead of unicast to the client.
        data_port: Multicast data port.
    """

    def __init__(
        self,
        natnet_version: nn.Version = (4, 1, 0, 0),
        rigid_bodies: dict[str, int] | None = None,
        pivot_rotation_xyzw: tuple[float, float, float, float] | None = None,
        clock_frequency_hz: int = 10_000_000,
        exposure_to_transmit_s: float = 0.004,
        clock: Callable[[], int] = time.time_ns,
        multicast_group: str | None = None,
        data_port: int = 1511,
    ) -> None:
        self.natnet_version = natnet_version
        self.frame_version = natnet_version if natnet_version[0] in nn.SUPPORTED_MAJOR_VERSIONS else (4, 1, 0, 0)
        self.rigid_bodies = rigid_bodies if rigid_bodies is not None else {"alohamini2": 3}
        if pivot_rotation_xyzw is None:  # turned 30 degrees about y, then tilted 10 degrees about x
            cy, sy, cx, sx = math.cos(math.pi / 12), math.sin(math.pi / 12), math.cos(math.pi / 36), math.sin(math.pi / 36)
            pivot_rotation_xyzw = (cy * sx, sy * cx, -sy * sx, cy * cx)
        self.pivot_rotation_xyzw = tuple(float(v) for v in pivot_rotation_xyzw)
        self.frequency_hz = clock_frequency_hz
        self.latency_ns = int(exposure_to_transmit_s * 1e9)
        self.clock = clock
        self.clock_origin_ns = clock() - 3_600_000_000_000  # Motive's clock started an hour ago
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.command_port = self.sock.getsockname()[1]
        self.multicast_group = multicast_group
        self.data_port = data_port
        self.multicast_sock: socket.socket | None = None
        if multicast_group is not None:
            self.multicast_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.multicast_sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
            self.multicast_sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        self.connect_address: tuple[str, int] | None = None
        self.data_address: tuple[str, int] | None = None
        self.requests: list[int] = []
        self.connected = threading.Event()
        self.sent: list[SentFrame] = []
        self._frame_number = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-motive", daemon=True)
        self._thread.start()

    # -- clock ---------------------------------------------------------------
    def ticks(self, host_ns: int) -> int:
        """Motive clock ticks at host time ``host_ns``."""
        return (host_ns - self.clock_origin_ns) * self.frequency_hz // 1_000_000_000

    # -- command port ----------------------------------------------------------
    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if not ready:
                continue
            try:
                data, addr = self.sock.recvfrom(65535)
            except OSError:
                return
            self._answer(data, addr)

    def _answer(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            packet = nn.split_packet(data)
        except nn.NatNetProtocolError:
            return
        with self._lock:
            self.requests.append(packet.message_id)
        mid = packet.message_id
        if mid == nn.MessageId.CONNECT:
            self.connect_address = addr
            group = self.multicast_group or "0.0.0.0"
            info = nn.ServerInfo(
                "Motive", (3, 1, 0, 0), self.natnet_version, self.frequency_hz, self.data_port,
                self.multicast_group is not None, group,
            )
            self._send(nn.build_server_info(info), addr)
            self.connected.set()
        elif mid == nn.MessageId.KEEP_ALIVE:
            self.data_address = addr
        elif mid == nn.MessageId.REQUEST_MODEL_DEF:
            self._send(self.model_def(), addr)
        elif mid == nn.MessageId.ECHO_REQUEST:
            stamp = nn.parse_echo_request(packet.payload)
            self._send(nn.build_echo_response(stamp, self.ticks(self.clock())), addr)
        else:
            self._send(nn.build_packet(nn.MessageId.UNRECOGNIZED_REQUEST), addr)

    def model_def(self) -> bytes:
        """The MODEL_DEF packet this fake answers with (in its NatNet version's layout)."""
        markers = tuple(
            md.RigidBodyMarker(offset, label, f"Marker{label}")
            for label, offset in enumerate([(0.06, 0.0, 0.0), (0.0, 0.0, 0.05), (-0.04, 0.02, -0.03)], start=1)
        )
        bodies = [
            md.RigidBodyDescription(name, rid, -1, (0.0, 0.0, 0.0), self.pivot_rotation_xyzw, markers)  # type: ignore[arg-type]
            for name, rid in self.rigid_bodies.items()
        ]
        sets = [md.MarkerSetDescription(name, tuple(m.name for m in markers)) for name in self.rigid_bodies]
        return md.build_model_def(bodies, self.frame_version, sets)

    def _send(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            self.sock.sendto(data, addr)
        except OSError:
            pass

    def wait_for_client(self, timeout_s: float = 5.0) -> bool:
        """Blocks until a client has connected and registered its data socket."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.connected.is_set() and (self.data_address is not None or self.multicast_sock is not None):
                return True
            time.sleep(0.005)
        return False

    # -- data stream -----------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        """Sends an arbitrary datagram to the client's data socket (or the multicast group)."""
        if self.multicast_sock is not None and self.multicast_group is not None:
            self.multicast_sock.sendto(data, (self.multicast_group, self.data_port))
            return
        addr = self.data_address or self.connect_address
        if addr is None:
            raise RuntimeError("no client connected")
        self._send(data, addr)

    def send_frame(
        self,
        bodies: Sequence[nf.RigidBodySample],
        frame_number: int | None = None,
        tracked_models_changed: bool = False,
    ) -> SentFrame:
        """Sends one FRAME_OF_DATA stamped as if exposed ``exposure_to_transmit_s`` ago."""
        self._frame_number = self._frame_number + 1 if frame_number is None else frame_number
        now = self.clock()
        exposure = now - self.latency_ns
        frame = nf.FrameOfData(
            frame_number=self._frame_number,
            rigid_bodies=tuple(bodies),
            timestamp_s=(exposure - self.clock_origin_ns) / 1e9,
            stamp_camera_mid_exposure=self.ticks(exposure),
            stamp_data_received=self.ticks(now - self.latency_ns // 2),
            stamp_transmit=self.ticks(now),
            tracked_models_changed=tracked_models_changed,
        )
        self.send_raw(nf.build_frame_of_data(frame, self.frame_version))
        valid = all(b.tracking_valid for b in bodies)
        sent = SentFrame(self._frame_number, exposure, valid)
        self.sent.append(sent)
        return sent

    def stream(
        self,
        poses: Iterable[tuple[Sequence[float], Sequence[float]]],
        body_id: int = 3,
        drop: Iterable[int] = (),
        invalid: Iterable[int] = (),
        period_s: float = 0.0,
    ) -> list[SentFrame]:
        """Streams a trajectory of Motive-frame poses (position, quaternion xyzw).

        Frames whose index is in ``drop`` are skipped (their frame numbers are
        lost, as on a lossy network); those in ``invalid`` are sent with
        tracking invalid and a zero pose, as Motive does. ``period_s`` paces
        the stream (0: as fast as possible).
        """
        drop, invalid = set(drop), set(invalid)
        out = []
        for i, (position, quat) in enumerate(poses):
            if i in drop:
                self._frame_number += 1
                continue
            ok = i not in invalid
            body = nf.RigidBodySample(
                body_id, tuple(position) if ok else (0.0, 0.0, 0.0), tuple(quat) if ok else (0.0, 0.0, 0.0, 1.0),
                0.00025 if ok else 0.0, ok,
            )
            out.append(self.send_frame([body]))
            if period_s > 0:
                time.sleep(period_s)
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        self.sock.close()
        if self.multicast_sock is not None:
            self.multicast_sock.close()

    def __enter__(self) -> "FakeMotive":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
