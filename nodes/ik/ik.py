"""ik node: arm targets -> guarded joint references for both arms.

Inputs: ``arm_targets`` (ArmTargets, grip targets in base_link), ``joint_states``
(JointState of the 14 arm + gripper joints), ``lift`` (LiftState),
``teleop_state`` (TeleopState: reset requests and the e-stop) and ``tick``
(dora timer, e.g. dora/timer/millis/10).
Outputs: ``joint_commands`` (JointCommands: the 14 joints' q_ref, feedforward
dq_ref, status "ok" / "hold" / "failed"; per-arm reasons in the metadata
``left_status`` / ``right_status``), ``journal`` (InputJournal, see
teledora/runtime/node_journal.py) and ``diagnostics``.

The reference starts from the first valid joint state (and lift state) and is
then integrated by the IK itself. A new arm_targets is solved at once unless a
solve ran within the last ``min_solve_spacing_s`` (then the next tick solves);
ticks keep solving towards the last targets. An arm holds when it is disabled,
its target is invalid or stale, or the joint feedback is stale; a failed QP
holds both arms on the last good reference with zero feedforward. A holding
arm measured farther than ``resync_threshold_rad`` from its reference (moved by
hand, sagged with torque off) restarts its reference from the measurement.
Each increase of the teleop ``reset_count`` (after the first TeleopState, which
sets the baseline) homes both arms through the IK (status "homing"; see
operators/ik/ik_loop.py).

Args: ``--config`` IK YAML (default: shipped alohamini2/ik.yaml).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora import models
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.contract.messages import MessageError
from teledora.operators.model.sides import SIDES
from teledora.models.config_files import load_ik_config


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ik", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="IK YAML (default: shipped alohamini2/ik.yaml)")
    return ap.parse_args(argv)


def build_loop(config_path: Path | None) -> IkLoop:
    config = load_ik_config(config_path)
    profile = models.load_profile()
    model = build_ik_model(models.path(config.solver.model), config.solver.add_floor)
    return IkLoop(BimanualIk(model, profile, config.settings), config.workspace, config.node, profile)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    loop = build_loop(args.config)
    io = NodeIO(make_node(node), node_id("ik"), clock, journal=True)
    io.diag.period_ns = int(loop.config.diagnostics_period_s * 1e9)

    def publish(now: int) -> None:
        cmd = loop.solve(now)
        if cmd is None:
            return
        meta = {f"{s}_status": loop.arms[s].status for s in SIDES}
        io.send("joint_commands", "JointCommands", cmd, meta)

    def refresh() -> None:  # the loop's state into diagnostics, when a snapshot goes out
        io.diag.details.update(loop.details())
        if not loop.initialized:
            io.diag.set_status("warn", "waiting for joint_states and lift")
        elif loop.last_result is not None and loop.last_result.status == "failed":
            io.diag.set_status("error", loop.last_result.error)
        elif any(a.status not in ("ok", "homing") for a in loop.arms.values()):
            io.diag.set_status("warn", ", ".join(f"{s}: {a.status}" for s, a in loop.arms.items()))
        else:
            io.diag.set_status("ok", "")

    # inputs that only update the loop's state: (kind, handler raising MessageError)
    state_inputs = {
        "joint_states": ("JointState", loop.on_joint_states),
        "lift": ("LiftState", loop.on_lift),
        "teleop_state": ("TeleopState", loop.on_teleop_state),
    }
    while (batch := io.next_batch()) is not None:
        for event in io.newest(batch, {"tick", "joint_states", "lift", "arm_targets", "teleop_state"}):
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep draining until the stream ends
            eid = event["id"]
            if eid in state_inputs:
                kind, handler = state_inputs[eid]
                msg = io.decode(event, kind)
                if msg is not None:
                    try:
                        handler(msg)
                    except MessageError as exc:
                        io.reject(f"{eid}: {exc}")
            elif eid == "arm_targets":
                msg = io.decode(event, "ArmTargets")
                if msg is None:
                    loop.on_invalid_targets(io.diag.last_error)
                else:
                    now = io.now()
                    try:
                        if loop.on_targets(msg, now):
                            publish(now)
                    except MessageError as exc:
                        io.reject(f"arm_targets: {exc}")
                        loop.on_invalid_targets(str(exc))
            elif eid == "tick":
                now = io.now()
                if loop.tick_due(now):
                    publish(now)
            else:
                io.reject(f"unexpected input {eid!r}")
        io.publish_diagnostics(refresh=refresh)
    io.publish_diagnostics(force=True, refresh=refresh)


if __name__ == "__main__":
    main()
