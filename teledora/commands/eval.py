"""`teledora eval odometry RUN`: how good is a pose estimate, against motion capture.
`teledora eval policy CHECKPOINT`: how often seeded pick-and-place episodes
place the cube (docs/datasets.md; the judge is operators/evaluation/).

Reads two topics of a recorded run (default ``ekf/pose`` against
``mocap/pose``), pairs them by their ``stamp_ns`` (both on the host clock),
optionally estimates the remaining time offset, aligns the estimate onto the
truth as asked, and reports APE (RMSE, mean, max), yaw error, RPE per metre,
drift as a percentage of the distance travelled (anchored at the start and
after the alignment; mocap noise is kept out of the distance) and the fraction of the
estimate that found truth. Writes ``<out>/odometry.json`` and
``<out>/odometry.png`` (trajectories overlaid, errors over time).

Planar topics (fields ``x``, ``y``, ``yaw``: PoseEstimate, Odometry,
GroundTruth) and spatial ones (``position``, ``orientation``, optional
``tracking_valid``: MocapPose) are both understood. The math lives in
:mod:`teledora.operators.estimation.odometry_evaluation`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from teledora.operators.errors import TeledoraError
from teledora.operators.estimation.odometry_evaluation import (
    EvaluationConfig,
    EvaluationError,
    EvaluationResult,
    evaluate_odometry,
)
from teledora.operators.estimation.trajectory_alignment import ALIGNMENTS
from teledora.operators.estimation.trajectory_association import ASSOCIATION_METHODS, Trajectory
from teledora.operators.estimation.trajectory_distance import DEFAULT_MIN_STEP_M
from teledora.recording import RecordingError, RunReader

PROGRESS_EVERY_ROWS = 20_000


class EvalInputError(TeledoraError):
    """The recording cannot provide the requested trajectory."""


@dataclass
class TopicTrajectory:
    """A trajectory read from one topic, with what was left out and why."""

    topic: str
    trajectory: Trajectory
    rows: int
    invalid: int
    non_finite: int
    duplicates: int

    def report(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "rows": self.rows,
            "used": len(self.trajectory),
            "tracking_invalid": self.invalid,
            "non_finite": self.non_finite,
            "duplicate_stamps": self.duplicates,
        }


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("eval", help="evaluate a recorded run (odometry vs motion capture)")
    sub = p.add_subparsers(dest="eval_command", metavar="WHAT")
    p.set_defaults(func=lambda _args: (p.print_help(), 2)[1])
    o = sub.add_parser("odometry", help="pose estimate vs ground truth: APE, yaw, RPE/m, drift")
    o.add_argument("run", type=Path, help="run directory (runs/<stamp>/)")
    o.add_argument("--estimate", default="ekf/pose", help="estimate topic node/output (default ekf/pose)")
    o.add_argument("--truth", default="mocap/pose", help="truth topic node/output (default mocap/pose)")
    o.add_argument("--association", choices=ASSOCIATION_METHODS, default="interpolate",
                   help="pair by interpolating truth (default) or by the nearest truth sample")
    o.add_argument("--max-diff", type=float, default=0.02, metavar="S",
                   help="association tolerance in seconds (default 0.02)")
    lag = o.add_mutually_exclusive_group()
    lag.add_argument("--lag", type=float, default=0.0, metavar="S",
                     help="known estimate lag in seconds: an estimate stamped t is compared with truth at t - lag")
    lag.add_argument("--estimate-lag", action="store_true", help="search the lag that minimises the aligned APE")
    o.add_argument("--max-lag", type=float, default=0.5, metavar="S", help="lag search range ± seconds (default 0.5)")
    o.add_argument("--align", choices=ALIGNMENTS, default="se2",
                   help="alignment of the estimate onto truth (default se2; sim3 hides scale errors)")
    o.add_argument("--dims", type=int, choices=(2, 3), default=2, help="planar (2, default) or spatial (3) errors")
    o.add_argument("--rpe-delta", type=float, default=1.0, metavar="M", help="RPE window in metres (default 1.0)")
    o.add_argument("--path-step", type=float, default=DEFAULT_MIN_STEP_M, metavar="M",
                   help="distance travelled is measured between truth samples at least M apart, so mocap noise "
                        f"does not count as travel (default {DEFAULT_MIN_STEP_M}; 0 sums every raw step)")
    o.add_argument("--out", type=Path, default=None, help="output directory (default RUN/eval)")
    o.add_argument("--no-plot", action="store_true", help="skip the PNG")
    o.add_argument("--quiet", action="store_true", help="no progress messages")
    o.set_defaults(func=_run_odometry)
    pol = sub.add_parser("policy", help="run N seeded pick-and-place episodes, recorded, and judge each placement")
    pol.add_argument("checkpoint", help="a policy checkpoint, or `scripted` for the scripted demonstrator")
    pol.add_argument("--episodes", type=int, default=10, help="episodes (default 10)")
    pol.add_argument("--seed", type=int, default=0, help="placement seed (default 0)")
    pol.add_argument("--runs-dir", type=Path, default=Path(os.environ.get("TELEDORA_RUNS_DIR", "runs")),
                     help="where the run directory goes")
    pol.add_argument("--speed", type=float, default=None, help="sim real-time factor (default 1.0)")
    pol.add_argument("--verbose", action="store_true", help="show all of dora's output as it comes")
    pol.add_argument("--judge-only", type=Path, default=None, metavar="RUN",
                     help="judge an existing run of these --episodes and --seed instead of running one")
    pol.set_defaults(func=_run_policy)


def _topic(reader: RunReader, source: str) -> str:
    node, sep, output = source.partition("/")
    if not sep or not node or not output:
        raise EvalInputError(f"topic {source!r} must be written node/output, e.g. ekf/pose")
    for topic, (n, o) in reader.sources().items():
        if (n, o) == (node, output):
            return topic
    raise EvalInputError(f"{reader.run_dir} has no recording of {source}; recorded: "
                         f"{sorted(f'{n}/{o}' for n, o in reader.sources().values())}")


def _column(struct: pa.StructArray, name: str) -> pa.Array | None:
    idx = struct.type.get_field_index(name)
    return struct.field(idx) if idx >= 0 else None


def _fixed_list(arr: pa.Array, width: int, name: str) -> np.ndarray:
    lengths = arr.value_lengths().to_numpy(zero_copy_only=False)
    if np.any(lengths != width):
        raise EvalInputError(f"field {name!r} must hold {width} numbers per message")
    return arr.flatten().to_numpy(zero_copy_only=False).astype(float).reshape(-1, width)


def read_trajectory(reader: RunReader, source: str, say: Callable[[str], None]) -> TopicTrajectory:
    """The trajectory recorded on ``source`` (node/output), stamped by ``stamp_ns``.

    Tracking-invalid, non-finite and repeated-stamp rows are left out and counted.
    """
    topic = _topic(reader, source)
    table = reader.read_topic(topic).table
    rows = table.num_rows
    if rows == 0:
        raise EvalInputError(f"{source}: topic {topic!r} has no messages")
    stamps_all: list[np.ndarray] = []
    pos_all: list[np.ndarray] = []
    quat_all: list[np.ndarray] = []
    valid_all: list[np.ndarray] = []
    done = 0
    next_report = PROGRESS_EVERY_ROWS
    for batch in table.to_batches():
        values = batch.column("value")
        if not pa.types.is_struct(values.type.value_type):
            raise EvalInputError(f"{source}: messages are {values.type.value_type}, not pose structs")
        msgs = values.flatten()
        if len(msgs) != batch.num_rows:
            raise EvalInputError(f"{source}: expected one pose per message")
        stamp_col = batch.column("stamp_ns")
        if stamp_col.null_count:
            raise EvalInputError(f"{source}: {stamp_col.null_count} messages carry no stamp_ns")
        stamps_all.append(stamp_col.to_numpy(zero_copy_only=False).astype(np.int64))
        x, y, yaw = _column(msgs, "x"), _column(msgs, "y"), _column(msgs, "yaw")
        position, orientation = _column(msgs, "position"), _column(msgs, "orientation")
        if x is not None and y is not None and yaw is not None:
            n = len(msgs)
            yaw_np = yaw.to_numpy(zero_copy_only=False).astype(float)
            pos_all.append(np.column_stack([x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False), np.zeros(n)]))
            quat_all.append(np.column_stack([np.zeros(n), np.zeros(n), np.sin(yaw_np / 2), np.cos(yaw_np / 2)]))
        elif position is not None and orientation is not None:
            pos_all.append(_fixed_list(position, 3, "position"))
            quat_all.append(_fixed_list(orientation, 4, "orientation"))
        else:
            raise EvalInputError(f"{source}: messages have neither x/y/yaw nor position/orientation fields")
        valid = _column(msgs, "tracking_valid")
        valid_all.append(np.ones(len(msgs), bool) if valid is None else valid.to_numpy(zero_copy_only=False).astype(bool))
        done += batch.num_rows
        if done >= next_report:
            say(f"read {done}/{rows} messages of {topic} ({100 * done / rows:.0f}%)")
            next_report += PROGRESS_EVERY_ROWS
    stamps = np.concatenate(stamps_all)
    pos, quat, valid = np.concatenate(pos_all), np.concatenate(quat_all), np.concatenate(valid_all)
    finite = np.all(np.isfinite(pos), axis=1) & np.all(np.isfinite(quat), axis=1)
    finite &= np.linalg.norm(quat, axis=1) > 1e-9
    keep = valid & finite
    order = np.argsort(stamps[keep], kind="stable")
    s, p, q = stamps[keep][order], pos[keep][order], quat[keep][order]
    unique = np.concatenate([[True], np.diff(s) > 0]) if len(s) else np.zeros(0, bool)
    if len(s) == 0:
        raise EvalInputError(f"{source}: no valid, finite pose among {rows} messages")
    traj = Trajectory(s[unique], p[unique], q[unique])
    return TopicTrajectory(topic, traj, rows, int(np.count_nonzero(~valid)),
                           int(np.count_nonzero(valid & ~finite)), int(np.count_nonzero(~unique)))


def _broken_at_gaps(stamps_ns: np.ndarray, *columns: np.ndarray) -> list[np.ndarray]:
    """Columns with NaN inserted where samples are missing, so plots show dropouts as gaps."""
    if len(stamps_ns) < 3:
        return [np.asarray(c, dtype=float) for c in columns]
    dt = np.diff(stamps_ns)
    gaps = np.nonzero(dt > 3 * np.median(dt))[0] + 1
    return [np.insert(np.asarray(c, dtype=float), gaps, np.nan) for c in columns]


def plot(result: EvaluationResult, truth: Trajectory, path: Path, title: str) -> None:
    """Trajectories overlaid (top) and position / yaw error over time (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    est = result.aligned_estimate
    t0 = est.stamps_ns[0]
    t = (est.stamps_ns - t0) / 1e9
    fig, (ax_xy, ax_err) = plt.subplots(2, 1, figsize=(8, 10), gridspec_kw={"height_ratios": [3, 2]})
    ax_xy.plot(*_broken_at_gaps(truth.stamps_ns, truth.positions[:, 0], truth.positions[:, 1]), "-", color="0.3",
               lw=1.5, label="truth")
    ax_xy.plot(*_broken_at_gaps(est.stamps_ns, est.positions[:, 0], est.positions[:, 1]), "-", color="tab:orange",
               lw=1.0,
               label=f"estimate ({result.transform.method} aligned)")
    ax_xy.plot(truth.positions[0, 0], truth.positions[0, 1], "o", color="0.3", label="truth start")
    ax_xy.set_aspect("equal", adjustable="datalim")
    ax_xy.set_xlabel("x (m)")
    ax_xy.set_ylabel("y (m)")
    ax_xy.legend(loc="best")
    ax_xy.set_title(title)
    t, err_cm, yaw_deg = _broken_at_gaps(est.stamps_ns, t, result.position_errors * 100.0,
                                         np.degrees(result.yaw_errors))
    ax_err.plot(t, err_cm, color="tab:red", lw=1.0, label="position error")
    ax_err.set_xlabel("time (s)")
    ax_err.set_ylabel("position error (cm)", color="tab:red")
    ax_yaw = ax_err.twinx()
    ax_yaw.plot(t, yaw_deg, color="tab:blue", lw=0.8, label="yaw error")
    ax_yaw.set_ylabel("yaw error (deg)", color="tab:blue")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(v: float, scale: float = 1.0, unit: str = "") -> str:
    return "n/a" if v is None else f"{v * scale:.4g}{unit}"


def print_summary(summary: dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    a, ape, yaw, rpe, d = (summary[k] for k in ("association", "ape_m", "yaw_error_rad", "rpe", "drift"))
    print(f"estimate {summary['estimate']['topic']} vs truth {summary['truth']['topic']}", file=out)
    print(f"  associated {a['associated_samples']}/{a['estimate_samples']} ({a['fraction_associated']:.1%}), "
          f"{a['method']} within {a['max_diff_s'] * 1e3:g} ms, lag {a['lag_s'] * 1e3:.2f} ms"
          f"{' (estimated)' if a['lag_estimated'] else ''}", file=out)
    print(f"  alignment {summary['alignment']['method']}, {summary['dims']}D errors", file=out)
    print(f"  APE      rmse {_fmt(ape['rmse'], 1, ' m')}  mean {_fmt(ape['mean'], 1, ' m')}  "
          f"max {_fmt(ape['max'], 1, ' m')}", file=out)
    print(f"  yaw      rmse {_fmt(yaw['rmse'], 180 / math.pi, ' deg')}  max {_fmt(yaw['max'], 180 / math.pi, ' deg')}",
          file=out)
    print(f"  RPE/m    mean {_fmt(rpe['translation_m_per_m']['mean'], 100, ' %')} over {rpe['delta_m']:g} m, "
          f"yaw {_fmt(rpe['yaw_rad_per_m']['mean'], 180 / math.pi, ' deg/m')}", file=out)
    start, fitted = d["anchored_at_start"], d["after_alignment"]
    print(f"  drift    {_fmt(start['percent_of_distance'], 1, ' %')} of {_fmt(d['path_length_m'], 1, ' m')} "
          f"anchored at the start (final error {_fmt(start['final_error_m'], 1, ' m')}); "
          f"{_fmt(fitted['percent_of_distance'], 1, ' %')} after {fitted['alignment']} alignment", file=out)


def _json_safe(value: Any) -> Any:
    """NaN and infinities become null: the summary stays strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _run_odometry(args: argparse.Namespace) -> int:
    say = (lambda _m: None) if args.quiet else (lambda m: print(f"[eval] {m}", file=sys.stderr, flush=True))
    try:
        reader = RunReader(args.run)
        say(f"reading {args.estimate} and {args.truth} from {args.run}")
        est = read_trajectory(reader, args.estimate, say)
        truth = read_trajectory(reader, args.truth, say)
        config = EvaluationConfig(
            association=args.association, max_diff_s=args.max_diff, lag_s=args.lag, estimate_lag=args.estimate_lag,
            max_lag_s=args.max_lag, alignment=args.align, dims=args.dims, rpe_delta_m=args.rpe_delta,
            path_min_step_m=args.path_step,
        )
        say(f"evaluating {len(est.trajectory)} estimate samples against {len(truth.trajectory)} truth samples")
        result = evaluate_odometry(est.trajectory, truth.trajectory, config, progress=say)
    except (EvalInputError, EvaluationError, RecordingError) as exc:
        print(f"teledora eval odometry: {exc}", file=sys.stderr)
        return 2
    summary = _json_safe({"run": str(args.run), "estimate": est.report(), "truth": truth.report(), **result.summary()})
    out = args.out or (args.run / "eval")
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "odometry.json"
    json_path.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    print_summary(summary)
    print(f"  wrote {json_path}")
    if not args.no_plot:
        say("plotting")
        png = out / "odometry.png"
        title = f"{args.estimate} vs {args.truth}: APE rmse {_fmt(summary['ape_m']['rmse'], 1, ' m')} ({args.align})"
        plot(result, truth.trajectory, png, title)
        print(f"  wrote {png}")
    return 0


SCRIPTED = "scripted"
GRIPPER_TOPICS = ("sim__joint_states", "arms__joint_states")  # the sim's truth first


def _episode_runner(checkpoint: str) -> tuple[str, Path | None]:
    """The `teledora demo` script and policy that play the episodes for
    ``checkpoint``: the scripted demonstrator alone, or the policy checkpoint
    (a directory) in dataflows/sim_policy.yml, handed the robot by the
    scripted operator, which then only marks the episodes.

    Raises:
        EvalInputError: ``checkpoint`` is neither ``scripted`` nor a directory.
    """
    if checkpoint == SCRIPTED:
        return "pick-place", None
    path = Path(checkpoint)
    if not path.is_dir():
        raise EvalInputError(f"{checkpoint!r}: not a checkpoint directory (a LeRobot `from_pretrained` directory, "
                             f"docs/policy.md), nor `{SCRIPTED}` for the scripted demonstrator")
    return "pick-place", path


def judge_policy_run(run_dir: Path, seed: int, episodes: int) -> dict[str, Any]:
    """Every episode of a seeded pick-and-place run judged, and the success
    rate with its Wilson 95 % interval."""
    from teledora.models import load_profile
    from teledora.models.config_files import load_pick_place_random
    from teledora.operators.contract.messages import decode
    from teledora.operators.evaluation.episode_outcomes import events_in_episodes, judge_episodes
    from teledora.operators.evaluation.placement_judge import wilson_interval
    from teledora.operators.sim.pick_place_layout import placements

    layout = load_pick_place_random()
    reader = RunReader(run_dir)
    if "sim__objects" not in reader.topics:
        raise EvalInputError(f"{run_dir} has no sim/objects recording: the judge reads the objects' true poses")
    objects = [decode("ObjectPoses", r.value) for r in reader.iter_topic("sim__objects")]
    marks = [decode("EpisodeMark", r.value) for r in reader.iter_topic("episodes__marks")] \
        if "episodes__marks" in reader.topics else []
    js_topic = next((t for t in GRIPPER_TOPICS if t in reader.topics), None)
    joints = [decode("JointState", r.value) for r in reader.iter_topic(js_topic)] if js_topic else []
    for seq in (objects, marks, joints):
        seq.sort(key=lambda m: int(m["stamp_ns"]))
    spots = placements(layout, seed, episodes)
    gripper = load_profile().arms["left"].gripper
    outcomes = judge_episodes(objects, joints, marks, spots[1:], layout.object, gripper, layout.judge)
    # the scripted hand is open loop: where teleop fell so far behind that it
    # dropped the hand's anchor, its later moves land short (docs/teleop.md)
    states = [decode("TeleopState", r.value) for r in reader.iter_topic("teleop__state")] \
        if "teleop__state" in reader.topics else []
    drops = events_in_episodes(marks, states, "left_anchor_dropped") if states else []
    successes = sum(o.success for o in outcomes)
    lo, hi = wilson_interval(successes, len(outcomes))
    tol = layout.judge
    return {
        "run": str(run_dir), "seed": seed, "episodes": len(outcomes), "successes": successes,
        "success_rate": successes / len(outcomes), "wilson_95": [lo, hi], "start_xy_m": list(spots[0]),
        "judge": {"xy_m": tol.xy_m, "tilt_deg": tol.tilt_deg, "rest_m": tol.rest_m,
                  "released_below_rad": tol.released_below_rad, "rest_z_m": tol.rest_z_m},
        "per_episode": [{"episode": o.index + 1, "goal_xy_m": list(o.goal_xy), "success": o.success,
                         "outcome": o.sentence(),
                         "left_anchor_dropped": drops[o.index] if o.index < len(drops) else None} for o in outcomes],
    }


def _run_policy(args: argparse.Namespace) -> int:
    if args.episodes < 1 or args.seed < 0:
        print("teledora eval policy: --episodes must be >= 1 and --seed >= 0", file=sys.stderr)
        return 2
    try:
        script, policy = _episode_runner(args.checkpoint)
    except EvalInputError as exc:
        print(f"teledora eval policy: {exc}", file=sys.stderr)
        return 2
    run_dir = args.judge_only
    if run_dir is None:
        from teledora.commands import demo

        run_dir = demo.new_run_path(args.runs_dir)
        rc = demo._run(argparse.Namespace(
            demo=True, script=script, policy=policy, seed=args.seed, episodes=args.episodes, runs_dir=args.runs_dir, run_dir=run_dir,
            stop_after=None, speed=args.speed, view=False, verbose=args.verbose,
            startup_timeout_s=demo.DEFAULT_STARTUP_TIMEOUT_S))
        if rc != 0:
            print(f"teledora eval policy: the run ended with {rc}; judging what it recorded", file=sys.stderr)
    try:
        summary = judge_policy_run(run_dir, args.seed, args.episodes)
    except (EvalInputError, RecordingError, OSError, ValueError) as exc:
        print(f"teledora eval policy: {exc}", file=sys.stderr)
        return 2
    summary["checkpoint"] = args.checkpoint
    for e in summary["per_episode"]:
        dropped = e["left_anchor_dropped"]
        note = f" [teleop dropped the left hand's anchor {dropped} time(s): machine load]" if dropped else ""
        print(f"episode {e['episode']}: goal ({e['goal_xy_m'][0]:.3f}, {e['goal_xy_m'][1]:.3f}) m: {e['outcome']}{note}")
    lo, hi = summary["wilson_95"]
    print(f"{args.checkpoint}: {summary['successes']}/{summary['episodes']} placed, success rate "
          f"{summary['success_rate']:.0%} (Wilson 95 % interval {lo:.0%} to {hi:.0%}), seed {args.seed}")
    out = Path(run_dir) / "eval"
    out.mkdir(parents=True, exist_ok=True)
    (out / "policy.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"  wrote {out / 'policy.json'}")
    return 0
