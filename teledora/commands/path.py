"""`teledora path`: plan straight-line Cartesian legs through a waypoint list.

    teledora path run WAYPOINTS.yaml [--csv trajectory.csv] [--config ik.yaml]

The YAML holds ``waypoints`` (each a ``name`` and either ``joints`` — ``home``
or a mapping of arm joint name to rad, unspecified joints keeping the previous
waypoint's values — or ``offsets_m`` with per-arm grip translations in
base_link), optional per-waypoint ``speed_m_s`` / ``angular_speed_rad_s``, and
optional top-level ``lift_height_m`` (0 = floor-homed). Every leg is planned
and checked before anything is printed as a trajectory or written: an
unreachable sample, a trajectory off its line or a joint speed or
acceleration above its cap stops with a clear error (naming the joint and the
cap) and exit status 1. ``--csv`` writes the joint trajectory (time + 12 arm
joints, one row per output period) for replay.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.errors import ConfigError
from teledora.operators.ik.cartesian_path import CartesianPathPlanner, PathPlan, PathPlanningError
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.path_timing import check_joint_caps, load_timing_library
from teledora.operators.ik.waypoints import Waypoint, plan_waypoints
from teledora.operators.model.sides import SIDES


class WaypointFileError(ConfigError):
    """The waypoint YAML is malformed."""


def _number(value: Any, what: str) -> float:
    """A finite real number from the YAML (booleans and strings are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise WaypointFileError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _speed(value: Any, what: str) -> float | None:
    if value is None:
        return None
    speed = _number(value, what)
    if speed <= 0:
        raise WaypointFileError(f"{what} must be > 0, got {speed}")
    return speed


def parse_waypoints(data: Any, joint_names: list[str], home: dict[str, float]) -> list[Waypoint]:
    """Waypoints from the YAML mapping (joint values resolved against the previous waypoint).

    Raises:
        WaypointFileError: anything malformed (wrong types, unknown joints,
            non-finite numbers, speeds not > 0).
    """
    if not isinstance(data, dict) or not isinstance(data.get("waypoints"), list):
        raise WaypointFileError("expected a mapping with a 'waypoints' list")
    out: list[Waypoint] = []
    current = np.array([home[n] for n in joint_names])
    for i, wp in enumerate(data["waypoints"]):
        if not isinstance(wp, dict):
            raise WaypointFileError(f"waypoint {i}: expected a mapping")
        name = str(wp.get("name", f"wp{i}"))
        speeds = dict(speed_m_s=_speed(wp.get("speed_m_s"), f"waypoint {name}: speed_m_s"),
                      angular_speed_rad_s=_speed(wp.get("angular_speed_rad_s"), f"waypoint {name}: angular_speed_rad_s"))
        if ("joints" in wp) == ("offsets_m" in wp):
            raise WaypointFileError(f"waypoint {name}: give exactly one of 'joints' and 'offsets_m'")
        if "joints" in wp:
            joints = wp["joints"]
            q = current.copy()
            if joints == "home":
                q = np.array([home[n] for n in joint_names])
            elif isinstance(joints, dict):
                for jn, v in joints.items():
                    if jn not in joint_names:
                        raise WaypointFileError(f"waypoint {name}: unknown arm joint {jn!r}")
                    q[joint_names.index(jn)] = _number(v, f"waypoint {name}: {jn}")
            else:
                raise WaypointFileError(f"waypoint {name}: 'joints' must be 'home' or a mapping")
            current = q
            out.append(Waypoint(name, q=q, **speeds))
        else:
            offsets = wp["offsets_m"]
            if not isinstance(offsets, dict) or not set(offsets) <= set(SIDES):
                raise WaypointFileError(f"waypoint {name}: 'offsets_m' maps left/right to [x, y, z]")
            if any(not isinstance(v, list) or len(v) != 3 for v in offsets.values()):
                raise WaypointFileError(f"waypoint {name}: each offset needs 3 values")
            vecs = {s: np.array([_number(x, f"waypoint {name}: offsets_m.{s}") for x in v]) for s, v in offsets.items()}
            out.append(Waypoint(name, offsets_m=vecs, **speeds))
    return out


def _run(args: argparse.Namespace) -> int:
    load_timing_library()  # at start: the first plan is then as quick as the others
    config = load_ik_config(args.config)
    profile = models.load_profile()
    # the path planner settles each knot itself: no global fallback (nor its roadmaps) to build
    ik = BimanualIk(build_ik_model(models.path(config.solver.model), config.solver.add_floor), profile, config.settings,
                    with_fallback=False)
    planner = CartesianPathPlanner(ik, config.path)
    try:
        data = yaml.safe_load(Path(args.waypoints).read_text())
        waypoints = parse_waypoints(data, ik.arm_joint_names, profile.home_q())
        lift_h = float(data.get("lift_height_m", profile.lift.travel_mm / 2000.0))
        plans = plan_waypoints(planner, waypoints, profile.lift_height_to_joint(lift_h))
    except (OSError, yaml.YAMLError, WaypointFileError, PathPlanningError) as exc:
        print(f"teledora path: {exc}", file=sys.stderr)
        return 1
    times, q = joined(plans)
    violation = check_joint_caps(times, q, ik.arm_joint_names, planner.max_joint_speed_rad_s, planner.max_joint_accel_rad_s2)
    if violation is not None:  # every leg was checked; this guards the joins too
        print(f"teledora path: refused, {violation}", file=sys.stderr)
        return 1
    print(f"joint caps: {planner.max_joint_speed_rad_s:g} rad/s, {planner.max_joint_accel_rad_s2:g} rad/s² (peaks below)")
    print(f"{'leg':<24} {'time s':>7} {'knots':>5} {'line dev mm':>11} {'landing mm':>10} {'joint rad/s':>11} "
          f"{'joint rad/s2':>12} {'tip m/s':>7} {'tip m/s2':>8} pinned")
    for prev, wp, p in zip(waypoints[:-1], waypoints[1:], plans):
        pinned = ",".join(s for s, v in p.pinned.items() if v) or "-"
        print(f"{prev.name + ' -> ' + wp.name:<24} {p.duration_s:7.2f} {len(p.knot_s):5d} {p.max_line_deviation_m * 1000:11.3f} "
              f"{p.landing_error_m * 1000:10.4f} {p.peak_joint_speed_rad_s:11.3f} {p.peak_joint_accel_rad_s2:12.2f} "
              f"{p.peak_tip_speed_m_s:7.3f} {p.peak_tip_accel_m_s2:8.3f} {pinned}")
    print(f"total {times[-1]:.2f} s, {len(times)} samples")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", *ik.arm_joint_names])
            for t, row in zip(times, q):
                w.writerow([f"{t:.6f}", *(f"{v:.9f}" for v in row)])
        print(f"wrote {args.csv}")
    return 0


def joined(plans: list[PathPlan]) -> tuple[np.ndarray, np.ndarray]:
    """The legs one after the other: each leg's first sample is the previous
    leg's last (it starts where that one stopped), so it is written once."""
    times, rows, t0 = [], [], 0.0
    for k, p in enumerate(plans):
        skip = 1 if k > 0 else 0
        times.append(t0 + p.times[skip:])
        rows.append(p.q[skip:])
        t0 += p.duration_s
    return np.concatenate(times), np.vstack(rows)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser("path", help="plan straight-line grip paths through waypoints", description=__doc__)
    sub = parser.add_subparsers(dest="path_command", metavar="ACTION")
    run = sub.add_parser("run", help="plan every leg of a waypoint YAML and print (or write) the trajectory")
    run.add_argument("waypoints", help="waypoint YAML")
    run.add_argument("--csv", help="write the dense joint trajectory here")
    run.add_argument("--config", help="IK YAML (default: shipped alohamini2/ik.yaml)")
    run.set_defaults(func=_run)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
