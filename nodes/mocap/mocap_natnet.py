"""mocap node (hardware): the robot's rigid body from OptiTrack Motive over NatNet.

Inputs: none needed (any input is ignored). Outputs: ``pose`` (MocapPose, one
per Motive frame, ~120 Hz; ``tracking_valid = False`` with NaN pose when Motive
lost the body), ``diagnostics`` (~1 Hz: frames, dropped frames, invalid poses,
rejected packets by reason, clock offset and its source).

The client sends CONNECT to Motive's command port until SERVER_INFO arrives,
registers its data socket with keep-alives (unicast) or joins the multicast
group, asks for MODEL_DEF to resolve the rigid body's name, and sends an echo
request every ``echo_period_s`` to map Motive's clock onto the host clock
(each pose is stamped at its camera mid-exposure time). The packet logic is
:class:`teledora.operators.mocap.mocap_pose_stream.MocapPoseStream`, the
sockets are the device :class:`teledora.devices.mocap.natnet_client.NatNetClient`.

Args: ``--config`` mocap YAML (default: shipped alohamini2/mocap.yaml),
``--server``, ``--command-port``, ``--body-id``, ``--body-name`` override it.
Env: ``TELEDORA_MOCAP_SERVER`` (same as ``--server``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence


from teledora.devices.mocap.natnet_client import NatNetClient
from dataclasses import replace
from teledora.models.config_files import load_mocap_config, load_node_profile
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.mocap import natnet_protocol as nn
from teledora.operators.mocap.mocap_frames import MocapFrameTransform
from teledora.operators.mocap.mocap_pose_stream import MocapPoseStream, RigidBodySelector

LOG_EVERY_N_REJECTIONS = 100  # after the first rejection of a kind, log one in N


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="mocap_natnet", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="mocap YAML (default: shipped)")
    ap.add_argument("--server", default=os.environ.get("TELEDORA_MOCAP_SERVER"), help="Motive address")
    ap.add_argument("--command-port", type=int, default=None)
    ap.add_argument("--body-id", type=int, default=None, help="rigid body streaming id")
    ap.add_argument("--body-name", default=None, help="rigid body name in Motive")
    return ap.parse_args(argv)


class _Every:
    """Fires at most once per period (host-clock ns)."""

    def __init__(self, period_s: float) -> None:
        self.period_ns = int(period_s * 1e9)
        self.last_ns: int | None = None

    def due(self, now_ns: int) -> bool:
        if self.last_ns is None or now_ns - self.last_ns >= self.period_ns:
            self.last_ns = now_ns
            return True
        return False


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    cfg = load_mocap_config(args.config)
    overrides = {"server_address": args.server, "command_port": args.command_port}
    net = replace(cfg.natnet, **{k: v for k, v in overrides.items() if v is not None})
    selector = RigidBodySelector(
        id=args.body_id if args.body_id is not None else cfg.rigid_body.id,
        name=args.body_name if args.body_name is not None else cfg.rigid_body.name,
    )
    stream = MocapPoseStream(selector, MocapFrameTransform(cfg.frame), load_node_profile().world_frame)
    io = NodeIO(make_node(node), node_id("mocap"), clock, ends_with=())  # runs until STOP
    backend = NatNetClient(net, clock)
    backend.connect()
    connect, echo, alive, model = (
        _Every(net.connect_retry_s), _Every(net.echo_period_s), _Every(net.keepalive_period_s), _Every(net.model_def_retry_s)
    )
    logged_offset: int | None = None
    io.diag.set_status("warn", f"waiting for Motive at {net.server_address}:{net.command_port}")
    stopping = False
    try:
        while not stopping:
            for arrival_ns, data in backend.read(net.poll_s):
                try:
                    result = stream.handle(data, arrival_ns)
                except nn.NatNetProtocolError as exc:
                    stream.reject(str(exc))
                    io.diag.reject(str(exc))
                    key = str(exc).split(":")[0]
                    if stream.counters.rejected_by_reason[key] % LOG_EVERY_N_REJECTIONS == 1:
                        io.log("warn", f"rejected datagram ({stream.counters.rejected_by_reason[key]} so far): {exc}")
                    continue
                for note in result.notices:
                    io.log("info", note)
                for pose in result.poses:
                    io.send("pose", "MocapPose", pose)
            now = clock()
            if not stream.connected:
                if connect.due(now):
                    backend.write(nn.build_connect(net.client_name, net.natnet_version))
                    if not net.multicast:
                        backend.keep_alive()
            else:
                if not net.multicast and alive.due(now):
                    backend.keep_alive()
                if echo.due(now):
                    backend.write(nn.build_echo_request(clock()))
                if (stream.body_id is None or stream.models_changed) and model.due(now):
                    backend.write(nn.build_packet(nn.MessageId.REQUEST_MODEL_DEF))
            # only STOP matters here: poll takes what is queued without the timer
            # and timeout error a zero-timeout next costs in dora (docs/mocap.md)
            batch = io.poll()
            stopping = batch is None or any(event.get("type") == "STOP" for event in batch)
            status = stream.status()
            if stream.clock is not None and stream.clock.has_estimate:
                off = stream.clock.offset()
                if logged_offset is None or abs(off.offset_ns - logged_offset) > 1_000_000:
                    io.log("info", f"Motive clock offset {off.offset_ns} ns (±{off.uncertainty_ns} ns, {off.source})")
                    logged_offset = off.offset_ns
            if stream.version_error:
                io.diag.set_status("error", stream.version_error)
            elif not stream.connected:
                pass  # still the "waiting for Motive" status
            elif stream.body_id is None:
                io.diag.set_status("warn", f"rigid body {selector.name!r} not found in Motive's models")
            else:
                io.diag.set_status("ok", f"streaming rigid body {stream.body_id}")
            io.diag.received = stream.counters.frames
            io.diag.dropped = stream.counters.dropped_frames
            io.diag.details = status
            io.publish_diagnostics()
    finally:
        backend.close()
        io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
