"""lift node, sim variant: the driver's lift logic against a simulated STS3095.

The simulated servo (:mod:`teledora.devices.drive.sim_lift`) has a floor stop
(height 0) and a top stop a little above 600 mm, a 12-bit wrapped position
readout and a stall current at the stops, so homing, unwrapping and the guards
run exactly as on hardware. The sim node drives the model's ``vertical_move``
joint to ``height_m - 0.3``.

Inputs: ``lift_cmd`` (LiftCommand, m/s, up positive; only the newest of a
burst is used) and ``tick`` (a dora timer). Outputs: ``state`` (LiftState:
height_m, 0 at the homed floor; velocity_m_s; homed) and ``diagnostics``. At
start the axis homes into the floor stop (``homed`` false, ``height_m`` 0 until
done); then each tick drives it at the newest command. The decisions (homing,
command limits, the watchdog, a recording hold stopping the lift, the
driver's clamp, floor guard and soft limits) are
:mod:`teledora.operators.drive.lift_step`. The Feetech variant has the same
id, inputs and outputs.

Args: ``--config`` drive.yaml (the lift starts at its ``lift_sim.start_height_mm``),
``--start-height-mm`` overrides that start height; env ``TELEDORA_PROFILE`` the robot profile
(command caps).
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

from teledora.devices.drive.sim_lift import SimLiftServo
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
    parser.add_argument("--start-height-mm", type=float, default=None, help="overrides lift_sim.start_height_mm")
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    limits = LiftCommandLimits.from_profile(load_node_profile())
    start_mm = config.lift_sim.start_height_mm if args.start_height_mm is None else args.start_height_mm
    run(io, SimLiftServo(config.lift, start_mm, clock), config.lift, limits, clock)


if __name__ == "__main__":
    main()
