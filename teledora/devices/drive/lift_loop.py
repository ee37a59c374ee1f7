"""Event loop shared by the lift node's sim and Feetech variants.

At start the node homes the axis with the driver's procedure (drive down until
the floor stop stalls the servo, release, settle, zero). Then each ``tick``
reads the servo, turns the newest ``lift_cmd`` (LiftCommand, m/s, up positive)
into a goal velocity with the driver's clamp, floor guard and soft limits, and
publishes ``state`` (LiftState: height_m = driver mm / 1000, 0 at the homed
floor; velocity_m_s; homed). While homing, ``homed`` is false and ``height_m``
is 0. A command older than the watchdog timeout (drive.yaml
``lift.watchdog_timeout_s``) stops the lift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from teledora.runtime.node_io import NodeIO, backend_details, newest_per_input, next_batch
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.lift_axis import HomingAction, HomingPhase, LiftAxis, LiftAxisConfig, LiftHoming


@dataclass(frozen=True)
class LiftReading:
    """One poll of the lift servo (register units)."""

    raw_position: int
    raw_velocity: int
    raw_current: int


class LiftBackend(Protocol):
    """The lift servo, simulated or on the bus."""

    def connect(self) -> None:
        """Opens the device and puts the servo in velocity mode."""
        ...

    def read(self) -> LiftReading: ...

    def write_goal_velocity(self, raw: int) -> None: ...

    def set_torque(self, enabled: bool) -> None: ...

    def close(self) -> None: ...


def _apply(backend: LiftBackend, action: HomingAction) -> None:
    if action.torque_enable is not None and not action.torque_enable:
        backend.write_goal_velocity(0 if action.goal_velocity_raw is None else action.goal_velocity_raw)
        backend.set_torque(False)
        return
    if action.torque_enable:
        backend.set_torque(True)
    if action.goal_velocity_raw is not None:
        backend.write_goal_velocity(action.goal_velocity_raw)


def run_lift(io: NodeIO, backend: LiftBackend, config: LiftAxisConfig, clock: Callable[[], int]) -> None:
    """Runs the lift event loop until the input stream ends (re-raises backend errors after stopping)."""
    watchdog = CommandWatchdog(config.watchdog_timeout_s)
    poll_ns = int(config.home_poll_period_s * 1e9)
    backend.connect()
    try:
        first = backend.read()
        axis = LiftAxis(config, first.raw_position)
        homing = LiftHoming(axis)
        _apply(backend, homing.start(first.raw_position))
        next_poll = clock() + poll_ns
        velocity_cmd = 0.0
        last_goal: int | None = None
        ignored = 0
        io.diag.set_status("warn", "homing")
        while (batch := next_batch(io.node)) is not None:
            for event in newest_per_input(batch, {"lift_cmd", "tick"}):
                if event.get("type") != "INPUT":
                    continue
                if event["id"] == "lift_cmd":
                    msg = io.decode(event, "LiftCommand")
                    if msg is None:
                        continue
                    if homing.phase is HomingPhase.DONE:
                        velocity_cmd = msg["velocity_m_s"]
                        watchdog.feed(clock())
                    else:
                        ignored += 1
                elif event["id"] == "tick":
                    now = clock()
                    if homing.phase in (HomingPhase.DRIVING_DOWN, HomingPhase.SETTLING):
                        if now >= next_poll:
                            r = backend.read()
                            action = homing.poll(r.raw_position, r.raw_current, now)
                            _apply(backend, action)
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
                        r = backend.read()
                        height_mm = axis.update(r.raw_position)
                        alive = not watchdog.expired(now)
                        goal = axis.velocity_goal_raw(velocity_cmd if alive else 0.0)
                        if goal != last_goal:
                            backend.write_goal_velocity(goal)
                            last_goal = goal
                        io.send("state", "LiftState", {
                            "stamp_ns": now, "height_m": height_mm / 1000.0,
                            "velocity_m_s": axis.velocity_m_s(r.raw_velocity), "homed": True,
                        })
                        io.diag.details = {"height_mm": height_mm, "goal_velocity_raw": goal, "watchdog_trips": watchdog.trips,
                                           "ignored_while_homing": ignored, **backend_details(backend)}
            io.publish_diagnostics()
    except Exception as exc:
        io.diag.set_status("error", f"lift stopped: {exc}")
        io.diag.error(str(exc))
        io.log("error", f"lift stopped: {exc}")
        try:
            backend.write_goal_velocity(0)
        except Exception as stop_exc:
            io.log("error", f"could not stop lift: {stop_exc}")
        io.publish_diagnostics(force=True)
        backend.close()
        raise
    backend.write_goal_velocity(0)
    backend.close()
    io.publish_diagnostics(force=True)
