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

Every command passes the arms' command limits first
(:class:`~teledora.operators.drive.arm_command_limits.ArmCommandLimits`): a
non-finite or absurd value rejects it whole; a position outside its joint's
range (the model's, cut to the calibrated one) is clamped and counted.

Args: ``--config`` drive.yaml, ``--calibration`` calibration YAML (default
from drive.yaml), ``--left-port`` / ``--right-port`` override the buses,
``--sides left,right`` selects the arms present; env ``TELEDORA_PROFILE`` the
robot profile (model and command limits).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import (
    DRIVE,
    add_config_arg,
    load_calibration,
    load_drive_config,
    load_node_profile,
)
from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.current_protection import (
    CurrentHoldLimiter,
    OvercurrentTrip,
)
from teledora.operators.drive.drive_config import DriveConfig
from teledora.operators.errors import DeviceError

from teledora import models
from teledora.devices.device import stopped_on_exit
from teledora.devices.drive.feetech_arms import ArmServos, FeetechArms
from teledora.devices.drive.feetech_bus import FeetechBus
from teledora.runtime.node_io import NodeIO, make_node, node_id


class OvercurrentTripError(DeviceError, RuntimeError):
    """A servo stayed over the trip current; all arm torque was released."""


def run_arms(io: NodeIO, arms: FeetechArms, config: DriveConfig, limits: ArmCommandLimits,
             clock: Callable[[], int]) -> None:
    """Runs the arms event loop until the stream ends; after an error the arms'
    torque is released and the error re-raised, at a normal end they hold.
    ``limits`` bounds every ``joint_commands`` before its goals are kept."""
    cp = config.current_protection
    grippers = arms.grippers
    closed = config.arms.gripper_closed_rad
    # closure angle grows when closing, so the gripper opens in the negative direction
    grip_limiter = CurrentHoldLimiter(cp.gripper_hold_ma, cp.release_margin_rad, cp.gripper_hold_close_step_rad,
                                      open_direction=dict.fromkeys(grippers, -1.0), limits=dict.fromkeys(grippers, (0.0, closed)))
    joint_limiter = CurrentHoldLimiter(cp.joint_freeze_ma, cp.release_margin_rad)
    trip = OvercurrentTrip(cp.trip_ma, cp.trip_consecutive_reads)
    known = arms.joints
    goals: dict[str, float] = {}
    with stopped_on_exit(arms, io, "arms"):
        arms.connect()
        while (batch := io.next_batch()) is not None:
            for event in io.newest(batch, {"joint_commands", "tick"}):
                if event.get("type") != "INPUT":
                    continue
                if event["id"] == "joint_commands":
                    msg = io.decode(event, "JointCommands")
                    if msg is None:
                        continue
                    try:
                        require_joint_names(msg["names"], known, subset_ok=True)
                        bounded = limits.bound(msg["names"], msg["q_ref"], msg["dq_ref"])
                    except (MessageError, CommandRejected) as exc:
                        io.reject(f"joint_commands: {exc}")
                        continue
                    if io.recording_hold(clock()):
                        continue  # safe stop: the arms keep their last goals
                    if bounded.clamps:
                        io.clamp(f"joint_commands: {bounded.describe()}")
                    goals.update({n: float(q) for n, q in zip(msg["names"], bounded.value[0])})
                elif event["id"] == "tick":
                    now = clock()
                    pos, vel, cur = arms.read()
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
                        written = arms.write({**rest, **grip})
                        names = [j for j in known if j in written]
                        holding = bool(grip_limiter.holds or joint_limiter.holds)
                        io.send("servo_targets", "JointCommands", {
                            "stamp_ns": now, "names": names, "q_ref": [written[j] for j in names],
                            "dq_ref": [0.0] * len(names), "status": "hold" if holding else "ok",
                        })
                    io.diag.details = {
                        "current_ma": {j: round(c, 1) for j, c in cur.items()},
                        "holds": sorted([*grip_limiter.holds, *joint_limiter.holds]),
                        "limits": limits.counts(),
                        **arms.diagnostics_details(),
                    }
                    for msg_text in grip_limiter.events + joint_limiter.events:
                        io.log("warn", msg_text)
                    grip_limiter.events.clear(), joint_limiter.events.clear()
            io.publish_diagnostics()


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
    profile = load_node_profile()
    arms = []
    for side in [s.strip() for s in args.sides.split(",") if s.strip()]:
        bus_cfg = config.buses[side]
        port = getattr(args, f"{side}_port") or bus_cfg.port
        arms.append(ArmServos(side, FeetechBus(port, bus_cfg.baud_rate, args.timeout_s or bus_cfg.timeout_s), config.arms, cals,
                              profile.arms[side].gripper))
    device = FeetechArms(arms, config.current_protection.ma_per_raw)
    # the model's joint ranges (read from its MJCF: no MuJoCo), cut to what each servo was calibrated to reach
    limits = ArmCommandLimits.from_mjcf(models.path(profile.model).read_text(), profile).narrowed(device.joint_ranges_rad())
    io = NodeIO(make_node(node), node_id("arms"), clock)
    run_arms(io, device, config, limits, clock)


if __name__ == "__main__":
    main()
