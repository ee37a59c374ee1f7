"""The ArduPilot bridge: optical flow in, EKF3 pose out, over one MAVLink link.

The bridge drives :class:`~teledora.devices.estimation.mavlink_link.ArduPilotLink`
with the :class:`~teledora.operators.estimation.autopilot_session.AutopilotSession`
state machine: it (re)opens the link, waits for the autopilot's heartbeat,
makes sure the EKF has an origin (SET_GPS_GLOBAL_ORIGIN when there is no GPS),
requests LOCAL_POSITION_NED, ATTITUDE and EKF_STATUS_REPORT streams, forwards
each flow report as OPTICAL_FLOW (plus DISTANCE_SENSOR), keeps a TIMESYNC
mapping of autopilot time onto the host clock and turns LOCAL_POSITION_NED
into PoseEstimate dicts stamped on the host clock. A lost link is reopened.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping

from teledora.devices.estimation.mavlink_link import ArduPilotLink, LinkError
from teledora.operators.estimation.ardupilot_frames import PoseCovariance, odom_from_ned, position_ok
from teledora.operators.estimation.ardupilot_bridge_config import (
    MSG_ATTITUDE,
    MSG_EKF_STATUS_REPORT,
    MSG_LOCAL_POSITION_NED,
    BridgeConfig,
)
from teledora.operators.estimation.autopilot_session import Action, AutopilotSession, LinkState
from teledora.operators.estimation.distance_sensor import distance_report
from teledora.operators.estimation.mavlink_clock import MavlinkClock

MAV_CMD_SET_MESSAGE_INTERVAL, MAV_CMD_REQUEST_MESSAGE = 511, 512
MSG_GPS_GLOBAL_ORIGIN = 49
MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, MAV_STATE_ACTIVE = 18, 8, 4
MAV_DISTANCE_SENSOR_UNKNOWN, MAV_SENSOR_ROTATION_PITCH_270 = 4, 25


class ArduPilotBridge:
    """Flow in, pose out, over one :class:`ArduPilotLink`, driven by :class:`AutopilotSession`.

    Args:
        config: Bridge settings.
        link: The MAVLink backend.
        frame_id: Frame of the published poses (the profile's odom frame).
        clock: Host time in ns.
    """

    def __init__(self, config: BridgeConfig, link: ArduPilotLink, frame_id: str,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.config = config
        self.frame_id = frame_id
        self.link = link
        self.clock = clock
        self.session = AutopilotSession(config.session)
        self.mav_clock = MavlinkClock()
        self.cov = PoseCovariance(config.position_std_m, config.yaw_std_rad, config.lost_position_std_m)
        self.ekf_flags = 0
        self.attitude: Any = None
        self.flows_sent = 0
        self.flows_dropped = 0
        self.poses = 0
        self.last_error = ""
        self._boot_ms0 = clock() // 1_000_000

    # -- flow in ---------------------------------------------------------------------------
    def on_flow(self, msg: Mapping[str, Any]) -> bool:
        """Forwards one OpticalFlow message; False (counted as dropped) while the link is not up."""
        if self.session.state not in (LinkState.CONFIGURING, LinkState.STREAMING):
            self.flows_dropped += 1
            return False
        quality = max(0, min(255, int(msg["quality"])))
        try:
            self.link.write("optical_flow", int(msg["stamp_ns"]) // 1000, 0, 0, 0, 0.0, 0.0, quality,
                            float(msg["ground_distance_m"]), float(msg["flow_rate_x"]), float(msg["flow_rate_y"]))
            if self.config.send_distance_sensor:
                d = distance_report(float(msg["ground_distance_m"]), *self.config.distance_sensor_range_m,
                                    self.config.distance_sensor_std_m)
                self.link.write("distance_sensor", self._boot_ms(), d.min_distance_cm, d.max_distance_cm,
                                d.current_distance_cm, MAV_DISTANCE_SENSOR_UNKNOWN, 0, MAV_SENSOR_ROTATION_PITCH_270,
                                d.covariance_cm2)
        except LinkError as exc:
            self._lose(str(exc))
            self.flows_dropped += 1
            return False
        self.flows_sent += 1
        return True

    def _boot_ms(self) -> int:
        return (self.clock() // 1_000_000 - self._boot_ms0) & 0xFFFFFFFF

    # -- session ---------------------------------------------------------------------------
    def _lose(self, reason: str) -> None:
        self.last_error = reason
        self.session.lost(self.clock(), reason)
        self.link.close()
        self.mav_clock.reset()

    def _do(self, step: Any, now: int) -> None:
        c = self.config
        s = self.session
        if step.action is Action.RECONNECT:
            self.link.close()
            try:
                self.link.connect()
            except LinkError as exc:
                self._lose(str(exc))
                return
            s.connected(now)
        elif step.action is Action.SEND_HEARTBEAT:
            self.link.write("heartbeat", MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, 0, 0, MAV_STATE_ACTIVE)
        elif step.action is Action.SEND_TIMESYNC:
            self.link.write("timesync", 0, now)
        elif step.action is Action.REQUEST_ORIGIN:
            self.link.write("command_long", s.target_system, s.target_component, MAV_CMD_REQUEST_MESSAGE, 0,
                            MSG_GPS_GLOBAL_ORIGIN, 0, 0, 0, 0, 0, 0)
        elif step.action is Action.SET_ORIGIN:
            self.link.write("set_gps_global_origin", s.target_system, round(c.origin_lat_deg * 1e7),
                            round(c.origin_lon_deg * 1e7), round(c.origin_alt_m * 1000), now // 1000)
        elif step.action is Action.REQUEST_INTERVAL:
            self.link.write("command_long", s.target_system, s.target_component, MAV_CMD_SET_MESSAGE_INTERVAL, 0,
                            step.msg_id, step.interval_us, 0, 0, 0, 0, 0)

    def poll(self) -> list[dict[str, Any]]:
        """Runs the session, reads everything received; returns new PoseEstimate dicts."""
        poses: list[dict[str, Any]] = []
        now = self.clock()
        try:
            for step in self.session.poll(now):
                self._do(step, now)
            if self.session.state is LinkState.LOST:
                if self.link.is_open:
                    self.link.close()
                    self.mav_clock.reset()
                return poses
            for msg in self.link.read():
                pose = self._handle(msg, self.clock())
                if pose is not None:
                    poses.append(pose)
        except LinkError as exc:
            self._lose(str(exc))
        return poses

    def _handle(self, msg: Any, now: int) -> dict[str, Any] | None:
        kind = msg.get_type()
        s = self.session
        if kind == "HEARTBEAT":
            s.on_heartbeat(msg.get_srcSystem(), msg.get_srcComponent(), msg.autopilot, now)
        elif kind == "TIMESYNC":
            if msg.tc1 == 0:  # the autopilot asks for our time
                self.link.write("timesync", now, msg.ts1)
            else:  # an answer to ours; a slow or stale one is counted in mav_clock.rejected
                self.mav_clock.add_exchange(msg.ts1, msg.tc1, now)
        elif kind == "GPS_GLOBAL_ORIGIN":
            s.on_origin()
        elif kind == "EKF_STATUS_REPORT":
            s.on_stream_message(MSG_EKF_STATUS_REPORT, now)
            self.ekf_flags = int(msg.flags)
        elif kind == "ATTITUDE":
            s.on_stream_message(MSG_ATTITUDE, now)
            self.attitude = msg
        elif kind == "LOCAL_POSITION_NED":
            s.on_stream_message(MSG_LOCAL_POSITION_NED, now)
            return self._pose(msg, now)
        return None

    def _pose(self, lpn: Any, now: int) -> dict[str, Any] | None:
        if self.attitude is None:
            return None
        vals = [lpn.x, lpn.y, lpn.vx, lpn.vy, self.attitude.yaw, self.attitude.yawspeed]
        if not all(math.isfinite(v) for v in vals):
            self.last_error = "non-finite LOCAL_POSITION_NED/ATTITUDE"
            return None
        odom = odom_from_ned(lpn.x, lpn.y, lpn.vx, lpn.vy, self.attitude.yaw, self.attitude.yawspeed)
        stamp = self.mav_clock.boot_ms_to_host_ns(lpn.time_boot_ms) if self.mav_clock.synced else now
        self.poses += 1
        return {"stamp_ns": int(stamp), "frame_id": self.frame_id, **odom,
                "covariance": self.cov.matrix(position_ok(self.ekf_flags)).reshape(9), "source": "ardupilot"}

    def status(self) -> dict[str, Any]:
        """Counters and link state for diagnostics."""
        s = self.session
        out: dict[str, Any] = {
            "link_state": s.state.value, "connects": s.connects, "link_losses": s.losses, "stream_stalls": s.stream_stalls,
            "origin_known": s.origin_known, "origin_set_by_us": s.origin_set_by_us,
            "flows_sent": self.flows_sent, "flows_dropped": self.flows_dropped, "poses": self.poses,
            "ekf_flags": self.ekf_flags, "position_ok": position_ok(self.ekf_flags),
            "bad_data": self.link.bad_data, "clock_synced": self.mav_clock.synced,
            "timesync_rejected": self.mav_clock.rejected,
        }
        if self.mav_clock.synced:
            out["clock_offset_ns"] = self.mav_clock.offset_ns
            out["clock_round_trip_ns"] = self.mav_clock.round_trip_ns
        return out

    def close(self) -> None:
        self.link.close()
