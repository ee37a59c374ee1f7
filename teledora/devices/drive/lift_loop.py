"""Event loop shared by the lift node's sim and Feetech variants.

At start the node homes the axis with the driver's procedure (drive down until
the floor stop stalls the servo, release, settle, zero). Then each ``tick``
reads the servo, turns the newest ``lift_cmd`` (LiftCommand, m/s, up positive)
into a goal velocity with the driver's clamp, floor guard and soft limits, and
publishes ``state`` (LiftState: height_m = driver mm / 1000, 0 at the homed
floor; velocity_m_s; homed). While homing, ``homed`` is false and ``height_m``
is 0. A command older than the watchdog timeout (drive.yaml
``lift.watchdog_timeout_s``) stops the lift. Every command passes the lift's
command limits first
(:class:`~teledora.operators.drive.lift_command_limits.LiftCommandLimits`):
a non-finite or absurd one is rejected and the last valid command stands,
one over the profile's lift speed cap is clamped to it.
"""

from __future__ import annotations

from typing import Callable

from teledora.devices.device import stopped_on_exit
from teledora.devices.drive.lift_device import LiftDevice, LiftGoal
from teledora.runtime.node_io import NodeIO
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.drive.lift_axis import HomingAction, HomingPhase, LiftAxis, LiftAxisConfig, LiftHoming


def _goal(action: HomingAction) -> LiftGoal:
    """What a homing step writes to the servo."""
    return LiftGoal(velocity_raw=action.goal_velocity_raw, torque=action.torque_enable)


def run_lift(io: NodeIO, lift: LiftDevice, config: LiftAxisConfig, limits: LiftCommandLimits,
             clock: Callable[[], int]) -> None:
    """Runs the lift event loop until the input stream ends; the lift is left
    holding however the loop ends (device errors are re-raised after that).
    ``limits`` bounds every ``lift_cmd`` (homing or not) before it is used."""
    watchdog = CommandWatchdog(config.watchdog_timeout_s)
    poll_ns = int(config.home_poll_period_s * 1e9)
    with stopped_on_exit(lift, io, "lift"):
        lift.connect()
        first = lift.read()
        axis = LiftAxis(config, first.raw_position)
        homing = LiftHoming(axis)
        lift.write(_goal(homing.start(first.raw_position)))
        next_poll = clock() + poll_ns
        velocity_cmd = 0.0
        last_goal: int | None = None
        ignored = 0
        io.diag.set_status("warn", "homing")
        while (batch := io.next_batch()) is not None:
            for event in io.newest(batch, {"lift_cmd", "tick"}):
                if event.get("type") != "INPUT":
                    continue
                if event["id"] == "lift_cmd":
                    msg = io.decode(event, "LiftCommand")
                    if msg is None:
                        continue
                    try:
                        bounded = limits.bound(msg["velocity_m_s"])
                    except CommandRejected as exc:
                        io.reject(f"lift_cmd: {exc}")
                        continue
                    if bounded.clamps:
                        io.clamp(f"lift_cmd: {bounded.describe()}")
                    if homing.phase is HomingPhase.DONE:
                        velocity_cmd = bounded.value
                        watchdog.feed(clock(), msg["stamp_ns"])
                    else:
                        ignored += 1
                elif event["id"] == "tick":
                    now = clock()
                    if homing.phase in (HomingPhase.DRIVING_DOWN, HomingPhase.SETTLING):
                        if now >= next_poll:
                            r = lift.read()
                            action = homing.poll(r.raw_position, r.raw_current, now)
                            lift.write(_goal(action))
                            next_poll = now + poll_ns
                            if action.phase is HomingPhase.DONE:
                                io.diag.set_status("ok", "homed")
                                io.log("info", f"lift homed after {homing.polls} polls")
                            elif action.phase is HomingPhase.FAILED:
                                io.diag.set_status("error", f"homing failed: {homing.failure}")
                                io.diag.error(homing.failure)
                                io.log("error", f"lift homing failed: {homing.failure}; lift disabled")
                        io.send("state", "LiftState", {"stamp_ns": now, "height_m": 0.0, "velocity_m_s": 0.0, "homed": False})
                    elif homing.phase is HomingPhase.DONE:
                        r = lift.read()
                        height_mm = axis.update(r.raw_position)
                        alive = not watchdog.expired(now) and not io.recording_hold(now)
                        goal = axis.velocity_goal_raw(velocity_cmd if alive else 0.0)
                        if goal != last_goal:
                            lift.write(LiftGoal(velocity_raw=goal))
                            last_goal = goal
                        io.send("state", "LiftState", {
                            "stamp_ns": now, "height_m": height_mm / 1000.0,
                            "velocity_m_s": axis.velocity_m_s(r.raw_velocity), "homed": True,
                        })
                        io.diag.details = {"height_mm": height_mm, "goal_velocity_raw": goal, "watchdog_trips": watchdog.trips,
                                           "ignored_while_homing": ignored, **lift.diagnostics_details()}
            io.diag.details["limits"] = limits.counts()
            io.publish_diagnostics()
