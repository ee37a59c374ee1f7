"""Merges scans of several lidars into one 360-degree LaserScan in the base frame.

Per scan: each valid return is placed in the base frame through its lidar's
mount, returns inside the robot footprint are dropped, and the point is moved
to the merged stamp through the odometry:

* ``per_ray`` (default): each ray by its own time (stamp + i * time_increment),
  so a turning robot's scan of a straight wall stays straight;
* ``scan_stamp``: every ray of a scan by that scan's stamp (what a merger that
  looks up one transform per scan does);
* ``none``: no odometry at all (both scans taken as if measured at the merged stamp).

The output grid starts at -pi with the finer of the input resolutions (rounded
so a whole number of rays fills the turn); each direction keeps the nearest
return. A direction with no return but with a ray that saw nothing is +Inf;
one nothing looked at (or only the robot itself) is NaN (REP 117).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.pose_history import PoseHistory, PoseOutOfRangeError

COMPENSATION_MODES = ("per_ray", "scan_stamp", "none")


class MergeError(TeledoraError, ValueError):
    """Scans cannot be merged (unknown lidar, nothing to merge, bad configuration)."""


@dataclass(frozen=True)
class LidarMount:
    """Pose of a lidar frame in the base frame (FLU): position (m) and yaw (rad)."""

    x: float
    y: float
    z: float
    yaw: float


@dataclass
class MergeResult:
    """A merged scan plus what a diagnostics page wants to know about it.

    Attributes:
        scan: The merged scan in the output frame.
        source: Per output ray, the index into the merged scans' order (-1: none).
        self_hits: Returns dropped because they fell in the footprint, per lidar.
        compensation: The mode actually applied: "none" when odometry was
            missing, "partial" when it covered only some of the scans.
        odom_error: Why odometry could not be used, or "".
    """

    scan: LaserScan
    source: np.ndarray
    self_hits: dict[str, int] = field(default_factory=dict)
    compensation: str = "per_ray"
    odom_error: str = ""


def _se2_apply(x: np.ndarray, y: np.ndarray, tx, ty, yaw) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.cos(yaw), np.sin(yaw)
    return tx + c * x - s * y, ty + s * x + c * y


def _se2_apply_inverse(x: np.ndarray, y: np.ndarray, tx, ty, yaw) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.cos(yaw), np.sin(yaw)
    dx, dy = x - tx, y - ty
    return c * dx + s * dy, -s * dx + c * dy


class ScanMerger:
    """Merges scans keyed by lidar name.

    Args:
        mounts: Lidar name -> mount pose in the base frame.
        footprint: Returns inside it are dropped (None keeps all).
        compensation: One of ``COMPENSATION_MODES``.
        frame_id: Output frame (the base frame).
        range_min_m: Output range_min; closer merged returns are dropped.
    """

    def __init__(
        self,
        mounts: dict[str, LidarMount],
        footprint: Footprint | None = None,
        compensation: str = "per_ray",
        frame_id: str = "base_link",
        range_min_m: float = 0.0,
    ) -> None:
        if compensation not in COMPENSATION_MODES:
            raise MergeError(f"compensation must be one of {COMPENSATION_MODES}, got {compensation!r}")
        if not mounts:
            raise MergeError("at least one lidar mount is needed")
        self.mounts = dict(mounts)
        self.footprint = footprint
        self.compensation = compensation
        self.frame_id = frame_id
        self.range_min_m = float(range_min_m)

    def merge(self, scans: dict[str, LaserScan], poses: PoseHistory | None = None) -> MergeResult:
        """Merges ``scans`` (one or more lidars) into one scan stamped at the mean of their stamps.

        Raises:
            MergeError: no scan given, or a scan from a lidar without a mount.
        """
        if not scans:
            raise MergeError("nothing to merge")
        unknown = sorted(set(scans) - set(self.mounts))
        if unknown:
            raise MergeError(f"no mount configured for lidar(s) {unknown}")
        names = list(scans)
        stamps = [scans[n].stamp_ns for n in names]
        t_out = int(round(sum(stamps) / len(stamps)))
        increments = [abs(s.angle_increment) for s in scans.values() if len(s) > 1 and s.angle_increment != 0]
        n_out = max(int(round(2 * np.pi / min(increments))), 1) if increments else 360
        inc_out = 2 * np.pi / n_out
        angle_min = -np.pi

        mode, odom_error = self.compensation, ""
        if mode != "none":
            try:
                if poses is None:
                    raise PoseOutOfRangeError("no odometry history")
                pose_out = poses.interpolate([t_out])
            except PoseOutOfRangeError as exc:
                mode, odom_error = "none", str(exc)

        best = np.full(n_out, np.inf)
        best_int = np.zeros(n_out)
        best_src = np.full(n_out, -1, dtype=np.int64)
        looked = np.zeros(n_out, dtype=bool)  # some ray of some lidar saw "nothing" here
        self_hits: dict[str, int] = {}
        uncompensated: list[str] = []
        range_max = 0.0
        for src_index, name in enumerate(names):
            scan, mount = scans[name], self.mounts[name]
            range_max = max(range_max, scan.range_max + float(np.hypot(mount.x, mount.y)))
            if len(scan) == 0:
                self_hits[name] = 0
                continue
            angles = scan.angles()
            valid = scan.valid_mask()
            nothing = scan.no_return_mask()
            use = valid | nothing
            r = np.where(valid, scan.ranges.astype(np.float64), scan.range_max)[use]
            a = angles[use]
            bx, by = _se2_apply(r * np.cos(a), r * np.sin(a), mount.x, mount.y, mount.yaw)
            is_valid = valid[use]
            hit_self = np.zeros_like(is_valid)
            if self.footprint is not None:
                hit_self = is_valid & self.footprint.contains(bx, by)
            self_hits[name] = int(np.count_nonzero(hit_self))
            keep = ~hit_self
            bx, by, is_valid = bx[keep], by[keep], is_valid[keep]
            if mode != "none":
                if mode == "per_ray":
                    times = scan.ray_stamps_ns()[use][keep]
                else:
                    times = np.full(bx.shape, scan.stamp_ns, dtype=np.int64)
                try:
                    px, py, pyaw = poses.interpolate(times) if times.size else (times, times, times)
                except PoseOutOfRangeError as exc:
                    px = py = pyaw = None
                    odom_error = f"{name}: {exc}"
                    uncompensated.append(name)
                if px is not None:
                    wx, wy = _se2_apply(bx, by, px, py, pyaw)
                    bx, by = _se2_apply_inverse(wx, wy, pose_out[0][0], pose_out[1][0], pose_out[2][0])
            rng = np.hypot(bx, by)
            idx = np.mod(np.rint((np.arctan2(by, bx) - angle_min) / inc_out).astype(np.int64), n_out)
            looked[idx[~is_valid]] = True
            ok = is_valid & (rng >= self.range_min_m)
            if np.any(ok):
                inten = scan.intensities[use][keep][ok] if scan.intensities.size else np.zeros(int(ok.sum()))
                order = np.argsort(-rng[ok], kind="stable")  # far first, nearest written last
                cand_idx, cand_r = idx[ok][order], rng[ok][order]
                nearer = cand_r < best[cand_idx]
                # Within this scan a bin may appear several times; the last write is the nearest.
                sel_idx, sel_r = cand_idx[nearer], cand_r[nearer]
                best[sel_idx] = sel_r
                best_int[sel_idx] = np.asarray(inten, dtype=np.float64)[order][nearer]
                best_src[sel_idx] = src_index

        filled = best_src >= 0
        ranges = np.where(filled, best, np.where(looked, np.inf, np.nan))
        scan_time = max(s.scan_time for s in scans.values())
        merged = LaserScan(
            stamp_ns=t_out,
            frame_id=self.frame_id,
            angle_min=angle_min,
            angle_max=angle_min + (n_out - 1) * inc_out,
            angle_increment=inc_out,
            time_increment=0.0,
            scan_time=float(scan_time),
            range_min=self.range_min_m,
            range_max=max(range_max, self.range_min_m + 1e-3),
            ranges=ranges.astype(np.float32),
            intensities=best_int.astype(np.float32),
        )
        if uncompensated:
            mode = "none" if len(uncompensated) == len(names) else "partial"
        return MergeResult(merged, best_src, self_hits, mode, odom_error)
