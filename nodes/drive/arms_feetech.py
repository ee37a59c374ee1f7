"""arms node, Feetech variant: both AM-ARM200 follower arms on their STS buses.

Inputs: ``joint_commands`` (JointCommands, name-addressed; q_ref of any subset
of the 14 arm and gripper joints; only the newest of a burst is used) and
``tick`` (dora timer). Outputs: ``servo_targets`` (JointCommands: the goal
positions actually written to the servos this tick, after clamping to the
calibrated range and current protection, converted back to model joint
radians, so they sit on the 4096-tick grid like the sim variant's; status
"hold" while a current hold is active, else "ok"), ``joint_states``
(JointState by model joint name; effort is left empty, servo currents are in
diagnostics) and ``diagnostics``.

Each tick reads position, velocity and current of the 7 servos of each arm in
one SYNC_READ, publishes the joint states, runs the driver's current
protection (gripper holds at 500 mA, other joints freeze at 1,800 mA, 20
consecutive reads over 2,000 mA on any servo release all torque and stop the
node with an error) and writes the goal positions with one SYNC_WRITE per bus.
Connecting never moves an arm: the servos are given their present position
as goal before torque comes on, and nothing else is written until the first
``joint_commands`` arrives. When the stream ends (``dora stop``, or upstream
gone) torque stays on and the arms hold their last goal.

Args: ``--config`` drive.yaml, ``--calibration`` calibration YAML (default
from drive.yaml), ``--left-port`` / ``--right-port`` override the buses,
``--sides left,right`` selects the arms present.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import DRIVE, add_config_arg, load_calibration, load_drive_config
from teledora.runtime.node_io import NodeIO, make_node, newest_per_input, next_batch, node_id
from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError
from teledora.operators.drive import feetech_protocol as fp
from teledora.operators.drive.current_protection import CurrentHoldLimiter, OvercurrentTrip
from teledora.operators.drive.drive_config import ArmsConfig, DriveConfig
from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.drive.servo_calibration import (
    ServoCalibration,
    gripper_rad_from_raw,
    gripper_raw_from_rad,
    joint_rad_from_raw,
    joint_raw_from_rad,
    joint_velocity_rad_s,
)

_READ = ["Present_Position", "Present_Velocity", "Present_Current"]


class OvercurrentTripError(RuntimeError):
    """A servo stayed over the trip current; all arm torque was released."""


class ArmServos:
    """One arm's seven servos on its bus, in model joint names and radians."""

    def __init__(self, side: str, bus: FeetechBus, arms: ArmsConfig, cals: dict[str, ServoCalibration]) -> None:
        self.side = side
        self.bus = bus
        self.arms = arms
        self.joints = [f"{side}_{j}" for j in arms.servo_ids]
        missing = [j for j in self.joints if j not in cals]
        if missing:
            raise FeetechBusError(f"calibration has no record for {missing}")
        self.cal = {j: cals[j] for j in self.joints}
        self.ids = {j: arms.servo_ids[j[len(side) + 1 :]] for j in self.joints}
        self.gripper = f"{side}_gripper"

    def connect(self) -> None:
        """Pings, puts the servos in position mode with the driver's PID, holds the present pose."""
        self.bus.connect()
        p, i, d = self.arms.pid
        for joint, sid in self.ids.items():
            try:
                self.bus.ping(sid)
            except FeetechBusError as exc:
                raise FeetechBusError(f"{joint} (servo {sid}) not found on {self.bus.port}: {exc}") from exc
            self.bus.write(sid, "Torque_Enable", 0)
            offset = self.bus.read(sid, "Homing_Offset")
            if offset != self.cal[joint].homing_offset:
                raise FeetechBusError(
                    f"{joint} (servo {sid}) homing offset {offset} differs from the calibration file "
                    f"({self.cal[joint].homing_offset}); run `teledora calibrate`"
                )
            self.bus.write(sid, "Operating_Mode", fp.OPERATING_MODE_POSITION)
            self.bus.write(sid, "P_Coefficient", p)
            self.bus.write(sid, "I_Coefficient", i)
            self.bus.write(sid, "D_Coefficient", d)
        present = self.bus.sync_read(self.ids.values(), ["Present_Position"])
        self.bus.sync_write("Goal_Position", {sid: present[sid]["Present_Position"] for sid in self.ids.values()})
        self.bus.sync_write("Torque_Enable", dict.fromkeys(self.ids.values(), 1))

    def read(self, ma_per_raw: float) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
        """Positions (rad), velocities (rad/s) and currents (mA) by joint name."""
        raw = self.bus.sync_read(self.ids.values(), _READ)
        pos, vel, cur = {}, {}, {}
        for joint, sid in self.ids.items():
            r, cal = raw[sid], self.cal[joint]
            pos[joint] = self.rad_from_raw(joint, r["Present_Position"])
            vel[joint] = 0.0 if joint == self.gripper else joint_velocity_rad_s(cal, r["Present_Velocity"])
            cur[joint] = r["Present_Current"] * ma_per_raw
        return pos, vel, cur

    def write_goals(self, goals_rad: dict[str, float]) -> dict[str, float]:
        """Writes the goals of this arm's joints (one SYNC_WRITE); returns what was
        written, converted back from the raw goal positions to radians."""
        raw, written = {}, {}
        for joint, q in goals_rad.items():
            if joint not in self.ids:
                continue
            cal = self.cal[joint]
            if joint == self.gripper:
                raw[self.ids[joint]] = gripper_raw_from_rad(cal, q, self.arms.gripper_closed_rad, self.arms.gripper_open_direction)
            else:
                raw[self.ids[joint]] = joint_raw_from_rad(cal, q)
            written[joint] = self.rad_from_raw(joint, raw[self.ids[joint]])
        if raw:
            self.bus.sync_write("Goal_Position", raw)
        return written

    def rad_from_raw(self, joint: str, raw: float) -> float:
        """Model joint value (rad) of a raw servo position of ``joint``."""
        cal = self.cal[joint]
        if joint == self.gripper:
            return gripper_rad_from_raw(cal, raw, self.arms.gripper_closed_rad, self.arms.gripper_open_direction)
        return joint_rad_from_raw(cal, raw)

    def release(self) -> None:
        if self.bus.connected:
            self.bus.sync_write("Torque_Enable", dict.fromkeys(self.ids.values(), 0))

    def close(self) -> None:
        self.bus.close()


def run_arms(io: NodeIO, arms: list[ArmServos], config: DriveConfig, clock: Callable[[], int]) -> None:
    """Runs the arms event loop until the stream ends (re-raises errors after releasing torque)."""
    cp = config.current_protection
    grippers = [a.gripper for a in arms]
    closed = config.arms.gripper_closed_rad
    # closure angle grows when closing, so the gripper opens in the negative direction
    grip_limiter = CurrentHoldLimiter(cp.gripper_hold_ma, cp.release_margin_rad, cp.gripper_hold_close_step_rad,
                                      open_direction=dict.fromkeys(grippers, -1.0), limits=dict.fromkeys(grippers, (0.0, closed)))
    joint_limiter = CurrentHoldLimiter(cp.joint_freeze_ma, cp.release_margin_rad)
    trip = OvercurrentTrip(cp.trip_ma, cp.trip_consecutive_reads)
    known = [j for a in arms for j in a.joints]
    goals: dict[str, float] = {}
    try:
        for a in arms:
            a.connect()
        while (batch := next_batch(io.node)) is not None:
            for event in newest_per_input(batch, {"joint_commands", "tick"}):
                if event.get("type") != "INPUT":
                    continue
                if event["id"] == "joint_commands":
                    msg = io.decode(event, "JointCommands")
                    if msg is None:
                        continue
                    try:
                        require_joint_names(msg["names"], known, subset_ok=True)
                    except MessageError as exc:
                        io.reject(f"joint_commands: {exc}")
                        continue
                    goals.update({n: float(q) for n, q in zip(msg["names"], msg["q_ref"])})
                elif event["id"] == "tick":
                    now = clock()
                    pos, vel, cur = {}, {}, {}
                    for a in arms:
                        p, v, c = a.read(cp.ma_per_raw)
                        pos.update(p), vel.update(v), cur.update(c)
                    io.send("joint_states", "JointState", {
                        "stamp_ns": now, "names": known, "position": [pos[j] for j in known],
                        "velocity": [vel[j] for j in known], "effort": [],
                    })
                    tripped = trip.update(cur)
                    if tripped is not None:
                        raise OvercurrentTripError(
                            f"{tripped.name}: {tripped.current_ma:.0f} mA > {cp.trip_ma:.0f} mA for "
                            f"{tripped.consecutive_reads} consecutive reads; arm torque released"
                        )
                    if goals:
                        grip = grip_limiter.limit({j: q for j, q in goals.items() if j in grippers}, pos, cur)
                        rest = joint_limiter.limit({j: q for j, q in goals.items() if j not in grippers}, pos, cur)
                        limited = {**rest, **grip}
                        written: dict[str, float] = {}
                        for a in arms:
                            written.update(a.write_goals(limited))
                        names = [j for j in known if j in written]
                        holding = bool(grip_limiter.holds or joint_limiter.holds)
                        io.send("servo_targets", "JointCommands", {
                            "stamp_ns": now, "names": names, "q_ref": [written[j] for j in names],
                            "dq_ref": [0.0] * len(names), "status": "hold" if holding else "ok",
                        })
                    io.diag.details = {
                        "current_ma": {j: round(c, 1) for j, c in cur.items()},
                        "holds": sorted([*grip_limiter.holds, *joint_limiter.holds]),
                        "bus": BusStats.totals([a.bus.stats for a in arms]),
                    }
                    for msg_text in grip_limiter.events + joint_limiter.events:
                        io.log("warn", msg_text)
                    grip_limiter.events.clear(), joint_limiter.events.clear()
            io.publish_diagnostics()
    except Exception as exc:
        io.diag.set_status("error", f"arms stopped: {exc}")
        io.diag.error(str(exc))
        io.log("error", f"arms stopped: {exc}")
        for a in arms:
            try:
                a.release()
            except Exception as rel_exc:
                io.log("error", f"could not release {a.side} arm torque: {rel_exc}")
        io.publish_diagnostics(force=True)
        for a in arms:
            a.close()
        raise
    for a in arms:
        a.close()  # torque stays on: the arms hold their last goal
    io.publish_diagnostics(force=True)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    parser.add_argument("--calibration", default=None, help="calibration YAML (path or shipped name)")
    parser.add_argument("--left-port", default=None)
    parser.add_argument("--right-port", default=None)
    parser.add_argument("--sides", default="left,right")
    parser.add_argument("--timeout-s", type=float, default=None)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    cals = load_calibration(args.calibration or config.arms.calibration).servos
    arms = []
    for side in [s.strip() for s in args.sides.split(",") if s.strip()]:
        bus_cfg = config.buses[side]
        port = getattr(args, f"{side}_port") or bus_cfg.port
        arms.append(ArmServos(side, FeetechBus(port, bus_cfg.baud_rate, args.timeout_s or bus_cfg.timeout_s), config.arms, cals))
    io = NodeIO(make_node(node), node_id("arms"), clock)
    run_arms(io, arms, config, clock)


if __name__ == "__main__":
    main()
