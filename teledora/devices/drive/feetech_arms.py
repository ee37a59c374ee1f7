"""Both AM-ARM200 follower arms on their Feetech STS buses, in model joint names and radians.

:class:`FeetechArms` is the arms node's device. Connecting never moves an arm:
the servos are given their present position as goal before torque comes on.
Each read is one SYNC_READ per bus (positions, velocities, currents by joint
name), each write one SYNC_WRITE per bus (goal positions). At a normal end the
arms hold their last goal (torque stays on); after an error their torque is
released.
"""

from __future__ import annotations

from teledora.devices.device import Device
from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError
from teledora.operators.drive import feetech_protocol as fp
from teledora.operators.drive.drive_config import ArmsConfig
from teledora.operators.drive.servo_calibration import (
    ServoCalibration,
    gripper_rad_from_raw,
    gripper_raw_from_rad,
    joint_rad_from_raw,
    joint_range_rad,
    joint_raw_from_rad,
    joint_velocity_rad_s,
)

_READ = ["Present_Position", "Present_Velocity", "Present_Current"]

ArmReading = tuple[dict[str, float], dict[str, float], dict[str, float]]


class ArmServos:
    """One arm's seven servos on its bus, in model joint names and radians."""

    def __init__(self, side: str, bus: FeetechBus, arms: ArmsConfig, cals: dict[str, ServoCalibration], gripper: str) -> None:
        self.side = side
        self.bus = bus
        self.arms = arms
        self.joints = [f"{side}_{j}" for j in arms.servo_ids]
        missing = [j for j in self.joints if j not in cals]
        if missing:
            raise FeetechBusError(f"calibration has no record for {missing}")
        self.cal = {j: cals[j] for j in self.joints}
        self.ids = {j: arms.servo_ids[j[len(side) + 1 :]] for j in self.joints}
        if gripper not in self.joints:  # the profile's gripper joint must be one of drive.yaml's servos
            raise FeetechBusError(f"gripper {gripper!r} is none of the arm's servo joints {self.joints}")
        self.gripper = gripper

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

    def joint_ranges_rad(self) -> dict[str, tuple[float, float]]:
        """Each joint's calibrated range in model radians (the gripper: open to closed)."""
        return {j: (0.0, self.arms.gripper_closed_rad) if j == self.gripper else joint_range_rad(self.cal[j])
                for j in self.joints}

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


class FeetechArms(Device):
    """The arms present (one :class:`ArmServos` per side) as one device.

    ``read`` returns positions (rad), velocities (rad/s) and currents (mA) by
    joint name; ``write`` takes goal positions (rad) by joint name and returns
    what was written, converted back from the raw goals.

    Args:
        arms: The arms, in model joint order.
        ma_per_raw: Current register scale (mA per unit).
    """

    def __init__(self, arms: list[ArmServos], ma_per_raw: float) -> None:
        self.arms = arms
        self.ma_per_raw = ma_per_raw
        self.joints = [j for a in arms for j in a.joints]
        self.grippers = [a.gripper for a in arms]

    def connect(self) -> None:
        for a in self.arms:
            a.connect()

    def read(self) -> ArmReading:
        pos: dict[str, float] = {}
        vel: dict[str, float] = {}
        cur: dict[str, float] = {}
        for a in self.arms:
            p, v, c = a.read(self.ma_per_raw)
            pos.update(p), vel.update(v), cur.update(c)
        return pos, vel, cur

    def joint_ranges_rad(self) -> dict[str, tuple[float, float]]:
        """The calibrated range (rad) of every joint present."""
        return {j: r for a in self.arms for j, r in a.joint_ranges_rad().items()}

    def write(self, goals_rad: dict[str, float]) -> dict[str, float]:
        written: dict[str, float] = {}
        for a in self.arms:
            written.update(a.write_goals(goals_rad))
        return written

    def stop(self) -> None:
        """Nothing to command: torque stays on and the arms hold their last goal."""

    def stop_after_error(self) -> None:
        """Releases the torque of every arm, trying each even if one fails.

        Raises:
            FeetechBusError: naming each arm whose torque could not be released.
        """
        failures = []
        for a in self.arms:
            try:
                a.release()
            except Exception as exc:
                failures.append(f"could not release {a.side} arm torque: {exc}")
        if failures:
            raise FeetechBusError("; ".join(failures))

    def diagnostics_details(self) -> dict[str, dict[str, int]]:
        return {"bus": BusStats.totals([a.bus.stats for a in self.arms])}

    def close(self) -> None:
        for a in self.arms:
            a.close()
