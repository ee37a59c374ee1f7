"""`sim` node: MuJoCo physics of the arms, grippers and lift, kinematic base.

Inputs:  servo_targets (JointCommands the `arms` node handed its servos),
         odom (Odometry from `base`), lift (LiftState from `lift`)
Outputs: joint_states (JointState: true arm joints, which the sim `arms` node
         reads back like a servo bus), ground_truth (GroundTruth), objects
         (ObjectPoses: the scene's free bodies, sent with each ground truth;
         none when the scene has none), diagnostics; at the profile's ``sim``
         rates (rates.yaml lists them)

Physics runs in real time at the model's timestep: the loop sleeps in
``io.next_batch(timeout)`` until the next publication is due, so no timer input is
needed and the node ends when its inputs close.

Env: TELEDORA_PROFILE (default alohamini2/profile.yaml),
     TELEDORA_SIM_SPEED (real-time factor, default 1.0),
     TELEDORA_PICK_PLACE_SEED (the randomised pick and place: the seed's
     start placement of its object, applied before the first step;
     operators/sim/pick_place_layout.py).
"""

from __future__ import annotations

import os
import time

import mujoco
from teledora.models.config_files import load_node_profile, load_pick_place_random
from teledora.operators.contract.messages import MessageError
from teledora.operators.sim.pick_place_layout import placements, scenario_from_env
from teledora.operators.sim.sim_physics import SimPhysics, apply_joint_command

from teledora import models
from teledora.runtime.node_io import NodeIO, make_node, node_id

MAX_STEPS_PER_WAKE = 100  # never try to catch up more than 0.2 s of physics at once


def main(argv: list[str] | None = None, node=None, clock=time.monotonic_ns) -> None:
    profile = load_node_profile()
    speed = float(os.environ.get("TELEDORA_SIM_SPEED", "1.0"))
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    sim = SimPhysics(model, profile)
    has_objects = bool(sim.object_names())
    io = NodeIO(make_node(node), node_id("sim"))
    scenario = scenario_from_env(os.environ)
    if scenario is not None:
        layout = load_pick_place_random()
        x, y = placements(layout, scenario[0], 0)[0]
        sim.place_object(layout.object, x, y)
        io.diag.details["placed"] = {layout.object: [round(x, 4), round(y, 4)], "seed": scenario[0]}
        io.log("info", f"seed {scenario[0]}: {layout.object} placed at ({x:.3f}, {y:.3f})")
    dt = model.opt.timestep
    js_period = 1.0 / profile.sim.joint_state_hz
    gt_period = 1.0 / profile.sim.ground_truth_hz
    next_js, next_gt = 0.0, 0.0
    start = clock()

    def publish_due() -> None:
        nonlocal next_js, next_gt
        stamp = time.time_ns()
        if sim.time_s >= next_js:
            io.send("joint_states", "JointState", dict(sim.joint_state(), stamp_ns=stamp))
            next_js += js_period
        if sim.time_s >= next_gt:
            io.send("ground_truth", "GroundTruth", dict(sim.ground_truth(), stamp_ns=stamp))
            if has_objects:
                io.send("objects", "ObjectPoses", dict(sim.object_poses(), stamp_ns=stamp))
            next_gt += gt_period

    publish_due()
    while True:
        wall_s = (clock() - start) * 1e-9 * speed
        timeout = max(0.0, min(next_js, next_gt) - wall_s) / speed
        batch = io.next_batch(timeout)
        if batch is None:
            break
        latest = {}
        for event in batch:
            if event["type"] == "INPUT":
                latest[event["id"]] = event  # only the newest of each input matters
        for input_id, event in latest.items():
            if input_id == "servo_targets":
                msg = io.decode(event, "JointCommands")
                if msg is not None:
                    try:
                        apply_joint_command(sim, msg)
                    except MessageError as exc:
                        io.reject(f"servo_targets: {exc}")
            elif input_id == "odom":
                msg = io.decode(event, "Odometry")
                if msg is not None:
                    sim.set_base(msg["x"], msg["y"], msg["yaw"], msg["vx"], msg["vy"], msg["wz"])
            elif input_id == "lift":
                msg = io.decode(event, "LiftState")
                if msg is not None:
                    sim.set_lift_height(msg["height_m"])
        wall_s = (clock() - start) * 1e-9 * speed
        steps = min(MAX_STEPS_PER_WAKE, max(0, int((wall_s - sim.time_s) / dt)))
        if steps == MAX_STEPS_PER_WAKE:
            io.diag.details["physics_behind"] = io.diag.details.get("physics_behind", 0) + 1
        sim.step(steps)
        publish_due()
        io.diag.details["sim_time_s"] = round(sim.time_s, 3)
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
