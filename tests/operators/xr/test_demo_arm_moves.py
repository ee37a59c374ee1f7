"""The shipped demo script's hand moves, played through the same operators the
dataflow chains (scripted operator -> teleop scheme -> IK loop), stay within
what the local IK reaches from the folded start posture: no global-fallback
search starts, and the grips sit on their targets once the hands hold still.

What this covers: the arm part of the script (until the base starts driving),
with the joints following the IK's references exactly (no servo lag, no dora
timing). tests/dataflows/test_sim_dataflow.py measures the same settled error
on a real sim run; this test finds a move that needs a detour in seconds."""

from __future__ import annotations

import numpy as np

from teledora import models
from teledora.models.config_files import load_demo_script, load_ik_config, load_teleop_config
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.model.sides import SIDES
from teledora.operators.teleop.teleop_scheme import TeleopScheme
from teledora.operators.xr.scripted_operator import ScriptedOperator

STEP_NS = 10_000_000  # 100 Hz, the ik node's tick


def _arm_phase_end(op: ScriptedOperator) -> float:
    """Script time of the first keyframe that drives the base."""
    return next(k.t_s for k in op.keyframes if k.base is not None)


def test_demo_hand_moves_need_no_global_search_and_settle_on_target() -> None:
    profile = models.load_profile()
    op = ScriptedOperator(load_demo_script(), stick_deadzone=load_teleop_config(profile=profile).stick_deadzone)
    scheme = TeleopScheme(load_teleop_config(profile=profile))
    config = load_ik_config(None)
    ik = BimanualIk(build_ik_model(models.path(config.solver.model), config.solver.add_floor), profile, config.settings)
    loop = IkLoop(ik, config.workspace, config.node, profile)
    kin = GripKinematics(ik.model, profile)
    names = list(profile.arm_joint_names)
    home = profile.home_q()
    q = np.array([home[n] for n in names])
    now = 10**18
    loop.on_lift({"stamp_ns": now, "height_m": 0.0, "velocity_m_s": 0.0, "homed": True})
    loop.on_joint_states({"stamp_ns": now, "names": names, "position": q})

    settled = op.settled_windows(min_hold_s=1.0)
    errors: dict[str, list[float]] = {s: [] for s in SIDES}
    end = _arm_phase_end(op)
    for seq in range(int(end / (STEP_NS / 1e9))):
        t = seq * STEP_NS / 1e9
        scheme.on_controllers(op.report(t, now, seq), now)
        grips = {s: Pose(np.array(p), matrix_to_quat(r)) for s, (p, r) in kin.grips(names, q, 0.0).items()}
        out = scheme.step(now, grips, 0.0)
        loop.on_targets(out.arm_targets, now)
        cmd = loop.solve(now)
        if cmd is not None:
            q = np.asarray(cmd["q_ref"], dtype=float)
            loop.on_joint_states({"stamp_ns": now, "names": names, "position": q})
        # the grips must sit on their targets from 1 s into each still window
        if any(a + 1.0 <= t < b for a, b in settled):
            for s in SIDES:
                target = out.arm_targets[s]
                if target["enabled"]:
                    errors[s].append(float(np.linalg.norm(ik.grip_pose(s).position - np.asarray(target["position"]))))
        now += STEP_NS

    searches = ik.fallback.details()["searches"]
    assert searches == 0, f"{searches} global-fallback searches: a demo hand move needs a joint-space detour"
    for s in SIDES:
        assert len(errors[s]) > 100, (s, len(errors[s]))
        assert max(errors[s]) < 0.002, (s, max(errors[s]))
