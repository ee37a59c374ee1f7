"""`teledora tracking RUN`: grip-to-target error of a recorded run, once targets settle.

Reads `teleop/arm_targets`, `arms/joint_states` and `lift/state` from a run
directory, rebuilds the grip poses with forward kinematics, and reports the
position error (median, p95, max) at every instant where a target had been
still for `--hold` seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mujoco
import numpy as np

from teledora import models
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.contract.messages import MessageError, decode
from teledora.operators.ik.tracking_error import nearest_indices, settled_mask, summarize
from teledora.operators.model.sides import SIDES
from teledora.recording import RunReader


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tracking", help="grip-to-target error of a recorded run once targets settle")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--hold", type=float, default=1.0, help="seconds a target must be still (default 1.0)")
    p.add_argument("--json", type=Path, default=None, help="also write the summary as JSON here")
    p.set_defaults(func=_run)


def _series(reader: RunReader, topic: str, kind: str) -> list[tuple[int, dict]]:
    out = []
    for rec in reader.iter_topic(topic):
        try:
            out.append((rec.stamp_ns, decode(kind, rec.value)))
        except MessageError:
            continue  # a rejected message is not evidence either way
    return out


def tracking_summary(run: Path, hold_s: float = 1.0) -> dict:
    """Per-arm settled grip error of a run (metres)."""
    reader = RunReader(run)
    profile = models.load_profile()
    kin = GripKinematics(mujoco.MjModel.from_xml_path(str(models.path(profile.model))), profile)
    targets = _series(reader, "teleop__arm_targets", "ArmTargets")
    states = _series(reader, "arms__joint_states", "JointState")
    lifts = _series(reader, "lift__state", "LiftState")
    if not targets or not states or not lifts:
        raise SystemExit(f"{run}: needs teleop/arm_targets, arms/joint_states and lift/state recordings")
    js_t = np.array([t for t, _ in states])
    lift_t = np.array([t for t, _ in lifts])
    result = {}
    for side in SIDES:
        rows = [(t, m[side]["position"]) for t, m in targets if m[side]["enabled"]]
        if not rows:
            continue
        t = np.array([r[0] for r in rows])
        p = np.array([r[1] for r in rows])
        mask = settled_mask(t, p, hold_s)
        errors = []
        for ti, pi in zip(t[mask], p[mask]):
            js = states[int(nearest_indices([ti], js_t)[0])][1]
            lift = lifts[int(nearest_indices([ti], lift_t)[0])][1]
            grip, _ = kin.grips(js["names"], js["position"], lift["height_m"])[side]
            errors.append(float(np.linalg.norm(grip - pi)))
        if errors:
            s = summarize(errors)
            result[side] = {"samples": s.samples, "median_m": s.median_m, "p95_m": s.p95_m, "max_m": s.max_m}
    return result


def _run(args: argparse.Namespace) -> int:
    summary = tracking_summary(args.run, args.hold)
    if not summary:
        print("no settled targets in this run", file=sys.stderr)
        return 1
    for side, s in summary.items():
        print(f"{side:5s} grip error after settling: median {s['median_m'] * 1e3:.2f} mm, "
              f"p95 {s['p95_m'] * 1e3:.2f} mm, max {s['max_m'] * 1e3:.2f} mm ({s['samples']} samples)")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0
