"""The randomised pick and place played through the operators the dataflow
chains (scripted operator -> teleop scheme -> IK loop) into the sim's physics,
as tests/operators/sim/test_pick_place_script.py plays the fixed one: the
cube placed by the seed, the base at the script's goal, no dora timing. Each
episode is judged at its KEEP by the placement judge."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_demo_script, load_ik_config, load_pick_place_random, load_teleop_config
from teledora.operators.evaluation.placement_judge import Verdict, judge_placement
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.sim.pick_place_layout import placements, randomised_script
from teledora.operators.sim.sim_physics import SimPhysics
from teledora.operators.teleop.teleop_scheme import TeleopScheme
from teledora.operators.xr.scripted_operator import ScriptedOperator

from tests.operators.sim.test_pick_place_script import STEP_NS, _goals

LAYOUT = load_pick_place_random()


def play(seed: int, episodes: int) -> list[Verdict]:
    """Each episode's verdict at its KEEP."""
    profile = models.load_profile()
    teleop_config = load_teleop_config(profile=profile)
    spots = placements(LAYOUT, seed, episodes)
    op = ScriptedOperator(randomised_script(LAYOUT, load_demo_script(LAYOUT.script), spots),
                          stick_deadzone=teleop_config.stick_deadzone)
    scheme = TeleopScheme(teleop_config)
    config = load_ik_config(None)
    ik = BimanualIk(build_ik_model(models.path(config.solver.model), config.solver.add_floor), profile, config.settings)
    loop = IkLoop(ik, config.workspace, config.node, profile)
    kin = GripKinematics(ik.model, profile)
    base, lift, t_start = _goals(op)
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    sim = SimPhysics(model, profile, initial_lift_height_m=lift)
    sim.set_base(*base, 0.0, 0.0, 0.0)
    sim.place_object(LAYOUT.object, *spots[0])
    steps = round(STEP_NS * 1e-9 / model.opt.timestep)
    keeps = [b.t_s for a, b in zip(op.keyframes, op.keyframes[1:]) if a.ui_episode_keep and not b.ui_episode_keep]
    gripper = profile.arms["left"].gripper
    now = 10**18
    loop.on_lift({"stamp_ns": now, "height_m": lift, "velocity_m_s": 0.0, "homed": True})
    js = sim.joint_state()
    loop.on_joint_states({"stamp_ns": now, "names": js["names"], "position": js["position"]})
    verdicts: list[Verdict] = []
    seq = 0
    while (t := t_start + seq * STEP_NS * 1e-9) <= op.duration_s and keeps:
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
        if t >= keeps[0]:
            poses = sim.object_poses()
            i = poses["names"].index(LAYOUT.object)
            quat = [poses[k][i] for k in ("qx", "qy", "qz", "qw")]
            g = float(js["position"][list(js["names"]).index(gripper)])
            verdicts.append(judge_placement([poses[k][i] for k in "xyz"], quat, spots[len(verdicts) + 1], g, LAYOUT.judge))
            keeps.pop(0)
        now += STEP_NS
        seq += 1
    return verdicts


@pytest.mark.parametrize("seed", [3])
def test_the_demonstrator_places_the_cube_at_each_seeded_target(seed) -> None:
    verdicts = play(seed, 2)
    for k, v in enumerate(verdicts):
        print(f"seed {seed} episode {k + 1}: {v.sentence()}, gripper {v.gripper_rad:.3f} rad")
    assert len(verdicts) == 2
    assert all(v.success for v in verdicts), [v.reasons for v in verdicts]
