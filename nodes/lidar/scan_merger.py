"""scan_merger node: front + back lidar scans -> one 360-degree scan in base_link.

Inputs: ``front`` (LaserScan from ``lidar_front/scan``), ``back`` (LaserScan from
``lidar_back/scan``), ``odom`` (Odometry from ``base/odom``), ``joint_states``
(JointState from ``arms/joint_states``) and ``lift`` (LiftState from
``lift/state``): the arm and lift positions the self-filter poses the robot's
bodies with; optionally ``tick`` (a timer; lets a lone lidar's scans out even
when odometry is quiet).
Outputs: ``scan`` (LaserScan, frame ``base_link``, stamped halfway between the
merged scans; dora metadata ``sources`` and ``alone``), ``journal``
(InputJournal, see teledora/runtime/node_journal.py), ``diagnostics`` (~1 Hz).

Pairing, motion compensation, resampling and the footprint come from
lidar.yaml (``merger``); the mounts and the robot's bodies from the model
(``lidar_front`` / ``lidar_back`` sites, its geoms); the lift height to lift
joint offset from the robot profile. When one lidar goes silent the other is published alone and the
diagnostics say so (level ``warn``). Scans still waiting for a partner when
the inputs end are counted in the last diagnostics (``waiting_at_end``).

Args: ``--config`` lidar YAML (default: shipped), ``--compensation``
(per_ray | scan_stamp | none, overrides lidar.yaml).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

import mujoco

from teledora import models
from teledora.models.config_files import load_lidar_setup, load_node_profile
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.lidar.body_filter import RobotBodyFilter
from teledora.operators.lidar.laser_scan import LaserScan, ScanGeometryError
from teledora.operators.lidar.lidar_mounts import mount_from_site
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory
from teledora.operators.lidar.scan_merger import COMPENSATION_MODES, ScanMerger
from teledora.operators.lidar.scan_pairing import ScanGroup, ScanPairer

SOURCES = ("front", "back")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="scan_merger", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="lidar YAML (default: shipped)")
    ap.add_argument("--compensation", choices=COMPENSATION_MODES, default=None)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    setup = load_lidar_setup(args.config)
    cfg = setup.merger if args.compensation is None else replace(setup.merger, compensation=args.compensation)
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.model)))
    profile = load_node_profile()
    mounts = {name: mount_from_site(model, setup.lidars[name].site, profile.base_frame) for name in SOURCES}
    bodies = (None if cfg.self_filter_padding_m is None
              else RobotBodyFilter(model, cfg.self_filter_padding_m, profile.base_frame, profile.base_joints))
    merger = ScanMerger(
        profile.base_frame, mounts, cfg.footprint, cfg.compensation, cfg.range_min_m,
        resampling=cfg.resampling, max_gap_rad=math.radians(cfg.max_gap_deg),
        breakpoint_angle_rad=math.radians(cfg.breakpoint_angle_deg), breakpoint_noise_m=cfg.breakpoint_noise_m,
        history_max_age_s=cfg.history_max_age_s, body_filter=bodies,
    )
    pairer = ScanPairer(SOURCES, cfg.tolerance_s, cfg.silence_timeout_s)
    odom = PoseHistory(cfg.odom_max_age_s, cfg.odom_max_extrapolation_s)
    io = NodeIO(make_node(node), node_id("scan_merger"), clock, journal=True)
    stats: dict[str, Any] = {"merged": 0, "self_hits": {s: 0 for s in SOURCES}, "compensation": "", "odom_error": "",
                             "from_history": 0, "timing_residual_ms": 0.0, "unknown_joints": 0, "body_pose": "model home"}

    def publish(group: ScanGroup) -> None:
        started = time.perf_counter()
        result = merger.merge(group.scans, odom)
        stats["merge_ms"] = round((time.perf_counter() - started) * 1e3, 3)
        for name, n in result.self_hits.items():
            stats["self_hits"][name] += n
        stats["merged"] += 1
        stats["compensation"], stats["odom_error"] = result.compensation, result.odom_error
        stats["from_history"] = result.from_history
        stats["timing_residual_ms"] = round(result.timing_residual_s * 1e3, 3)
        if group.alone:
            io.diag.set_status("warn", f"lidar {', '.join(group.silent)} silent: publishing {', '.join(group.scans)} alone")
        elif result.odom_error:
            io.diag.set_status("warn", f"merging without motion compensation: {result.odom_error}")
        else:
            io.diag.set_status("ok", "merging front + back")
        io.send("scan", "LaserScan", result.scan.to_message(),
                {"sources": ",".join(group.scans), "alone": bool(group.alone)})

    def count() -> None:
        io.diag.dropped = odom.out_of_order + pairer.unpaired_dropped + pairer.stale_dropped
        io.diag.details = {
            **stats,
            "paired": pairer.paired,
            "alone": pairer.alone,
            "waiting_at_end": pairer.waiting_at_end,
            "unpaired_dropped": pairer.unpaired_dropped,
            "stale_dropped": pairer.stale_dropped,
            "odom_out_of_order": odom.out_of_order,
            "silent": pairer.silent_sources(io.now()),
        }

    while (batch := io.next_batch()) is not None:
        for event in batch:
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep merging until the stream ends
            eid = event["id"]
            groups: list[ScanGroup] = []
            if eid in SOURCES:
                msg = io.decode(event, "LaserScan")
                if msg is None:
                    continue
                try:
                    scan = LaserScan.from_message(msg)
                except ScanGeometryError as exc:
                    io.reject(f"input {eid!r}: {exc}")
                    continue
                groups = pairer.offer(eid, scan, io.now())
            elif eid == "odom":
                msg = io.decode(event, "Odometry")
                if msg is None:
                    continue
                odom.add(OdometrySample(msg["stamp_ns"], Pose2D(msg["x"], msg["y"], msg["yaw"]), msg["vx"], msg["vy"], msg["wz"]))
            elif eid in ("joint_states", "lift") and bodies is not None:
                if eid == "joint_states":
                    msg = io.decode(event, "JointState")
                    if msg is None:
                        continue
                    names, values = list(msg["names"]), msg["position"]
                else:
                    msg = io.decode(event, "LiftState")
                    if msg is None:
                        continue
                    names, values = [profile.lift_joint], [profile.lift_height_to_joint(msg["height_m"])]
                if bodies.set_joints(names, values):
                    io.diag.error(f"input {eid!r}: joints the model lacks or non-finite positions in {names}")
                stats["unknown_joints"] = bodies.unknown_joints
                stats["body_pose"] = "joint states"
            elif eid == "tick":
                pass  # wakes the loop, so a lone lidar's scans go out below
            for group in groups:
                publish(group)
        # a lidar is silent only when nothing of it was in the batch either
        for group in pairer.poll(io.now()):
            publish(group)
        count()
        io.publish_diagnostics()
    # scans still waiting for a partner are counted, not sent: what a node sends after its
    # input journal has closed could not be replayed exactly (docs/recording.md)
    pairer.end()
    count()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
