"""The pick-and-place script's hand moves (models/alohamini2/pick_place_script.yaml),
played through the operators the dataflow chains (scripted operator -> teleop
scheme -> IK loop) into the sim's physics (SimPhysics on the scene).

What this covers: the arm part of the script, with the base placed exactly at
the script's goal and the lift at its goal height, the joints driven through
the sim's position actuators every 10 ms (the ik node's tick) with no dora
timing. It shows the keyframes move the red cube 20 cm along the stand and
back, and that nothing else of the robot touches the stand or the other
objects on the way (the IK knows neither). tests/dataflows/test_pick_place_dataflow.py
runs the whole scenario under dora.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import PICK_PLACE_SCRIPT, load_demo_script, load_ik_config, load_teleop_config
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.sim.sim_physics import SimPhysics
from teledora.operators.teleop.teleop_scheme import TeleopScheme
from teledora.operators.xr.scripted_operator import ScriptedOperator

STEP_NS = 10_000_000  # 100 Hz, the ik node's tick
CUBE = "cube_red"
STAND_TOP_M = 0.40
CUBE_HALF_M = 0.02


def _goals(op: ScriptedOperator) -> tuple[tuple[float, float, float], float, float]:
    """The base pose and lift height the script's goals end at, and the script
    time its hands start (the keyframe after the last goal)."""
    x = y = yaw = lift = None
    for k in op.keyframes:
        if k.base is None:
            continue
        if k.base.drive_to_m is not None:
            x, y = (float(v) for v in k.base.drive_to_m)
        elif k.base.turn_to_deg is not None:
            yaw = math.radians(k.base.turn_to_deg)
        else:
            lift = float(k.base.lift_to_m)
    last = max(i for i, k in enumerate(op.keyframes) if k.base is not None)
    assert None not in (x, y, yaw, lift)
    return (x, y, yaw), lift, op.keyframes[last + 1].t_s


@pytest.fixture(scope="module")
def played() -> dict:
    profile = models.load_profile()
    teleop_config = load_teleop_config(profile=profile)
    op = ScriptedOperator(load_demo_script(PICK_PLACE_SCRIPT), stick_deadzone=teleop_config.stick_deadzone)
    scheme = TeleopScheme(teleop_config)
    config = load_ik_config(None)
    ik = BimanualIk(build_ik_model(models.path(config.solver.model), config.solver.add_floor), profile, config.settings)
    loop = IkLoop(ik, config.workspace, config.node, profile)
    kin = GripKinematics(ik.model, profile)
    base, lift, t_start = _goals(op)
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    sim = SimPhysics(model, profile, initial_lift_height_m=lift)
    sim.set_base(*base, 0.0, 0.0, 0.0)
    mujoco.mj_forward(model, sim.data)
    steps = round(STEP_NS * 1e-9 / model.opt.timestep)
    objects = sim.object_names()
    start = {o: sim.data.body(o).xpos.copy() for o in objects}
    # the page's KEEP button: a level held from one keyframe to the next
    keeps = [b.t_s for a, b in zip(op.keyframes, op.keyframes[1:]) if a.ui_episode_keep and not b.ui_episode_keep]
    now = 10**18
    loop.on_lift({"stamp_ns": now, "height_m": lift, "velocity_m_s": 0.0, "homed": True})
    js = sim.joint_state()
    loop.on_joint_states({"stamp_ns": now, "names": js["names"], "position": js["position"]})
    touches: set[tuple[str, str]] = set()
    at_keep: list[np.ndarray] = []
    top_z = 0.0
    seq = 0
    while (t := t_start + seq * STEP_NS * 1e-9) <= op.duration_s:
        scheme.on_controllers(op.report(t, now, seq), now)
        js = sim.joint_state()
        grips = {s: Pose(np.array(p), matrix_to_quat(r)) for s, (p, r) in kin.grips(js["names"], js["position"], 0.0).items()}
        loop.on_targets(scheme.step(now, grips, lift).arm_targets, now)
        cmd = loop.solve(now)
        if cmd is not None:
            sim.command_joints(cmd["names"], cmd["q_ref"], cmd["dq_ref"])
        sim.step(steps)
        js = sim.joint_state()
        loop.on_joint_states({"stamp_ns": now, "names": js["names"], "position": js["position"]})
        data = sim.data
        for c in data.contact[:data.ncon]:
            pair = tuple(sorted((model.geom(c.geom1).name, model.geom(c.geom2).name)))
            if not set(pair) <= {"stand", "floor", *objects}:  # a robot geom in it
                touches.add(pair)
        top_z = max(top_z, float(data.body(CUBE).xpos[2]))
        if keeps and t >= keeps[0]:
            at_keep.append(data.body(CUBE).xpos.copy())
            keeps.pop(0)
        now += STEP_NS
        seq += 1
    end = {o: sim.data.body(o).xpos.copy() for o in objects}
    tilt = math.acos(min(1.0, float(sim.data.body(CUBE).xmat.reshape(3, 3)[2, 2])))
    return {"start": start, "end": end, "at_keep": at_keep, "touches": touches, "lifted_m": top_z - start[CUBE][2],
            "tilt_rad": tilt, "searches": ik.fallback.details()["searches"]}


def test_only_the_left_pads_touch_and_only_the_red_cube(played) -> None:
    assert played["touches"] <= {(CUBE, "left_fixed_pad"), (CUBE, "left_moving_pad")}, played["touches"]
    assert played["touches"], "the pads never touched the cube"


def test_episode_1_carries_the_cube_20_cm_and_sets_it_down(played) -> None:
    start, placed = played["start"][CUBE], played["at_keep"][0]
    moved = placed - start
    print(f"lifted {played['lifted_m'] * 1000:.0f} mm, placed {np.round(moved * 1000, 1).tolist()} mm from the start, "
          f"{played['searches']} global-fallback search(es)")
    assert played["lifted_m"] > 0.05
    assert moved[0] == pytest.approx(0.20, abs=0.01) and abs(moved[1]) < 0.01
    assert placed[2] == pytest.approx(STAND_TOP_M + CUBE_HALF_M, abs=0.002)


def test_episode_2_puts_it_back_upright_and_the_rest_stays(played) -> None:
    start, end = played["start"], played["end"]
    print(f"back {np.round((end[CUBE] - start[CUBE]) * 1000, 1).tolist()} mm from the start")
    assert len(played["at_keep"]) == 2
    assert np.linalg.norm(end[CUBE][:2] - start[CUBE][:2]) < 0.01
    assert end[CUBE][2] == pytest.approx(STAND_TOP_M + CUBE_HALF_M, abs=0.002) and played["tilt_rad"] < math.radians(3)
    for name in start:
        if name != CUBE:
            assert np.linalg.norm(end[name] - start[name]) < 1e-3, name
