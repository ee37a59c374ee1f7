"""`xr` node, scripted variant: plays an operator script as controller reports.

Outputs: controllers (XrControllers), buttons (the reports at which a button,
         connection or page level changes, and one a second without a change;
         operators/xr/level_changes.py), diagnostics
Inputs:  optional; the node paces itself and exits when the script ends,
         which ends the demo dataflow, or when dora asks it to stop. With
         TELEDORA_XR_WAIT_FOR=<input id>[,<input id>...] the script starts only
         once each of those inputs has delivered a message (the demo waits for
         the arms' first joint state and the cameras' first calibration, as a
         person waits for the robot and its cameras to come up). ``odom``
         (Odometry) is what the operator watches to steer the base to the
         script's base goals; script time waits for a goal (ScriptClock), so
         an overloaded machine stretches the demo rather than bending its path.
         ``lift`` (LiftState) likewise for the script's lift goals.

Env: TELEDORA_XR_SCRIPT (a YAML file, default the shipped demo script),
     TELEDORA_PICK_PLACE_SEED and TELEDORA_PICK_PLACE_EPISODES (the
     randomised pick and place: the script is built from
     pick_place_random.yaml for the seed's placements, its drive part taken
     from TELEDORA_XR_SCRIPT or the file that config names),
     TELEDORA_XR_RATE_HZ (default: xr/controllers in rates.yaml),
     TELEDORA_SIM_SPEED (default 1.0),
     TELEDORA_XR_REPEAT=1 (play the script again from its start each time it
     ends, until dora stops the node: a soak test's operator; the base goals
     are absolute, so each pass drives the same route).
"""

from __future__ import annotations

import os
import time
from teledora.models.config_files import (load_demo_script, load_node_profile, load_pick_place_random, load_rate_table,
                                          load_teleop_config)
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.level_changes import LevelChanges
from teledora.operators.sim.pick_place_layout import placements, randomised_script, scenario_from_env
from teledora.operators.xr.scripted_operator import OperatorScript, ScriptClock, ScriptedOperator

ODOM_INPUT = "odom"
LIFT_INPUT = "lift"


# What each input the script can wait for carries: a message only counts as
# arrived when it decodes (a malformed one is refused and counted).
WAIT_KINDS = {"robot_ready": "JointState", "cameras_ready": "CameraCalibration", ODOM_INPUT: "Odometry",
              LIFT_INPUT: "LiftState"}


def _wait_for_inputs(io: NodeIO, input_ids: set[str]) -> tuple[bool, bool]:
    """Blocks until every input of ``input_ids`` has delivered a sound message,
    or the stream ends.

    Returns (arrived, stop_seen): whether all of them delivered, and whether a
    STOP came with the last one (the script then plays one report and stops)."""
    waiting = set(input_ids)
    while (batch := io.next_batch()) is not None:
        for i, event in enumerate(batch):
            if event.get("type") == "INPUT":
                kind = WAIT_KINDS.get(event.get("id"))
                if kind is not None and io.decode(event, kind) is None:
                    continue
                waiting.discard(event.get("id"))
                if not waiting:
                    return True, any(later.get("type") == "STOP" for later in batch[i + 1:])
            if event.get("type") == "STOP":
                return False, True
    return False, False


def _poll(
    io: NodeIO, pose: tuple[float, float, float] | None, lift_m: float | None = None
) -> tuple[bool, tuple[float, float, float] | None, float | None]:
    """Whether dora asks the node to stop (`dora stop`, Ctrl-C, --stop-after)
    or its event stream has ended, the newest odometry pose (x, y, yaw) and
    the newest lift height."""
    batch = io.poll()
    if batch is None:
        return True, pose, lift_m
    for event in batch:
        if event.get("type") == "INPUT" and event.get("id") == ODOM_INPUT:
            msg = io.decode(event, "Odometry")
            if msg is not None:
                pose = (float(msg["x"]), float(msg["y"]), float(msg["yaw"]))
        elif event.get("type") == "INPUT" and event.get("id") == LIFT_INPUT:
            msg = io.decode(event, "LiftState")
            if msg is not None:
                lift_m = float(msg["height_m"])
    return any(event.get("type") == "STOP" for event in batch), pose, lift_m


def _operator_script() -> OperatorScript:
    """The script to play: the named one, or the randomised pick and place
    built for the seed in the environment."""
    named = os.environ.get("TELEDORA_XR_SCRIPT") or None
    scenario = scenario_from_env(os.environ)
    if scenario is None:
        return load_demo_script(named)
    layout = load_pick_place_random()
    seed, episodes = scenario
    return randomised_script(layout, load_demo_script(named or layout.script), placements(layout, seed, episodes))


def main(argv: list[str] | None = None, node=None, clock=time.monotonic, sleep=time.sleep) -> None:
    deadzone = load_teleop_config(profile=load_node_profile()).stick_deadzone
    script = ScriptedOperator(_operator_script(), stick_deadzone=deadzone)
    rate_hz = float(os.environ.get("TELEDORA_XR_RATE_HZ") or load_rate_table().topic("xr/controllers").sim_hz)
    speed = float(os.environ.get("TELEDORA_SIM_SPEED", "1.0"))
    repeat = os.environ.get("TELEDORA_XR_REPEAT", "") not in ("", "0")
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # plays until the script ends or STOP
    wait_for = {i.strip() for i in os.environ.get("TELEDORA_XR_WAIT_FOR", "").split(",") if i.strip()}
    stop_seen = False
    if wait_for:
        arrived, stop_seen = _wait_for_inputs(io, wait_for)
        if not arrived:
            io.log("warn", f"stopped before each of {sorted(wait_for)} delivered: script not played")
            io.publish_diagnostics(force=True)
            return
    io.log("info", f"scripted operator: {script.duration_s:.1f} s at {rate_hz:.0f} Hz" + (", repeated" if repeat else ""))
    start = last = clock()
    seq = 0
    pose: tuple[float, float, float] | None = None
    lift_m: float | None = None
    script_clock = ScriptClock(script)
    changes = LevelChanges()
    passes = 1
    while True:
        now = clock()
        t = script_clock.advance((now - last) * speed, pose, lift_m)
        last = now
        stamp_ns = time.time_ns()
        report = script.report(min(t, script.duration_s), stamp_ns, seq, pose, script_clock.waiting, lift_m)
        if io.send("controllers", "XrControllers", report) and changes.due(report, stamp_ns):
            io.send("buttons", "XrControllers", report)
        seq += 1
        io.diag.details["script_time_s"] = round(t, 3)
        io.publish_diagnostics()
        if t >= script.duration_s and repeat and not stop_seen:
            script_clock = ScriptClock(script)  # the next pass; reports keep their sequence
            passes += 1
            io.diag.details["passes"] = passes
        elif t >= script.duration_s or stop_seen:
            break
        stop_seen, pose, lift_m = _poll(io, pose, lift_m)
        if stop_seen:
            break
        next_t = start + seq / rate_hz / speed
        sleep(max(0.0, next_t - clock()))
    io.publish_diagnostics(force=True)
    io.log("info", f"script finished after {seq} reports")


if __name__ == "__main__":
    main()
