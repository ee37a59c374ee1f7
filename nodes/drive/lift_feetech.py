"""lift node, Feetech variant: the STS3095 lift servo (id 11, left bus), velocity mode.

Same inputs, outputs and logic as the sim variant (:mod:`teledora.nodes.drive.lift_sim`,
:mod:`teledora.operators.drive.lift_step`): homing into
the floor stop at start, then velocity commands bounded by the command limits,
with the driver's clamp, floor guard, soft limits and 1 s watchdog. Args:
``--config`` drive.yaml, ``--port`` / ``--baud-rate`` override the left bus;
env ``TELEDORA_PROFILE`` the robot profile (command caps).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import (
    DRIVE,
    add_config_arg,
    load_drive_config,
    load_node_profile,
)
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.lift_axis import HomingPhase, LiftAxisConfig
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.drive.lift_step import LiftStep

from teledora.devices.drive.feetech_bus import add_left_bus_args, left_bus_from_args
from teledora.devices.drive.feetech_lift import FeetechLift
from teledora.devices.device import stopped_on_exit
from teledora.devices.drive.lift_device import LiftDevice, LiftGoal
from teledora.runtime.node_io import NodeIO, make_node, node_id


def run(io: NodeIO, lift: LiftDevice, config: LiftAxisConfig, limits: LiftCommandLimits,
        clock: Callable[[], int]) -> None:
    """The event loop: homes the axis, then each ``tick`` drives it at the
    newest ``lift_cmd`` and publishes ``state``. The lift is left holding
    however it ends (device errors are re-raised after that)."""
    with stopped_on_exit(lift, io, "lift"):
        lift.connect()
        step = LiftStep(config, limits, lift.read().raw_position)
        lift.write(LiftGoal.of_homing(step.start()))
        step.wait_poll_period(clock())
        io.diag.set_status("warn", "homing")
        while (batch := io.next_batch()) is not None:
            for event in io.newest(batch, {"lift_cmd", "tick"}):
                if event.get("type") != "INPUT":
                    continue  # STOP / INPUT_CLOSED: finish the stream first
                if event["id"] == "lift_cmd":
                    msg = io.decode(event, "LiftCommand")
                    if msg is None:
                        continue
                    try:
                        bounded = step.command(msg, clock())
                    except CommandRejected as exc:
                        io.reject(f"lift_cmd: {exc}")
                        continue
                    if bounded.clamps:
                        io.clamp(f"lift_cmd: {bounded.describe()}")
                elif event["id"] == "tick":
                    now = clock()
                    if step.homing_active:
                        if step.poll_due(now):
                            r = lift.read()
                            action = step.homing_poll(r.raw_position, r.raw_current, now)
                            lift.write(LiftGoal.of_homing(action))
                            if action.phase is HomingPhase.DONE:
                                io.diag.set_status("ok", "homed")
                                io.log("info", f"lift homed after {step.homing.polls} polls")
                            elif action.phase is HomingPhase.FAILED:
                                io.diag.set_status("error", f"homing failed: {step.homing.failure}")
                                io.diag.error(step.homing.failure)
                                io.log("error", f"lift homing failed: {step.homing.failure}; lift disabled")
                        io.send("state", "LiftState", step.unhomed_state(now))
                    elif step.homed:
                        r = lift.read()
                        alive = step.commands_fresh(now) and not io.recording_hold(now)
                        tick = step.drive(now, r.raw_position, r.raw_velocity, alive)
                        if tick.goal_raw is not None:
                            lift.write(LiftGoal(velocity_raw=tick.goal_raw))
                        io.send("state", "LiftState", tick.state)
                        io.diag.details = {**tick.details, **lift.diagnostics_details()}
            io.diag.details["limits"] = limits.counts()
            io.publish_diagnostics()


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    add_left_bus_args(parser)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    bus = left_bus_from_args(args, config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    limits = LiftCommandLimits.from_profile(load_node_profile())
    run(io, FeetechLift(bus, config.lift.servo_id), config.lift, limits, clock)


if __name__ == "__main__":
    main()
