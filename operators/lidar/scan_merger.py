"""Merges scans of several lidars into one 360-degree LaserScan in the base frame.

Per scan: each return is placed in the base frame through its lidar's mount,
returns on the robot itself are dropped (the footprint polygon and, when
given, the robot's bodies posed from the current joint states), and each
point is moved to the merged stamp through the odometry:

* ``per_ray`` (default): each ray by its own time (stamp + i * time_increment),
  so a turning robot's scan of a straight wall stays straight;
* ``scan_stamp``: every ray of a scan by that scan's stamp (what a merger that
  looks up one transform per scan does);
* ``none``: no odometry at all (both scans taken as if measured at the merged stamp).

Resampling (``resampling="interpolate"``, the default): the output grid starts
at -pi with the finer of the input resolutions. Each scan is resampled at the
output directions from its own rays at their true (moved) angles: between two
neighbouring returns of one scan that lie on one surface the output ray is
intersected with the segment joining them. Two returns count as one surface
when they are at most ``max_gap_rad`` apart in their own scan (rays with no
measurement at all, NaN, in between are skipped) and pass the adaptive
breakpoint test: their distance is at most ``r * sin(d) / sin(lam - d) +
breakpoint_noise_m`` (``d`` their angular spacing seen from the lidar, ``r``
the nearer range, ``lam = breakpoint_angle_rad``: a surface seen at a more
grazing angle than ``lam`` counts as a depth discontinuity). Across a
discontinuity nothing is bridged: a return with no bridgeable neighbour on a
side covers only its own sector there (half its scan's increment from its
true angle; at least the nearest output direction), the nearer return
winning where two sectors overlap. ``resampling="nearest"`` is the
older method: each return into the nearest output direction.

Per direction the nearest return of the scans being merged wins. A direction
they do not cover (a seam while turning, the robot's shadow) is filled from
the previous scan of each lidar, moved to the merged stamp through the
odometry (``history_max_age_s``; only when odometry is available). A direction
with no return but with a ray that saw nothing is +Inf; one nothing looked at
(or only the robot itself) is NaN (REP 117).

Timing (ROS ``sensor_msgs/LaserScan``): after per-ray compensation every
return stands where it was at the merged stamp, so ``time_increment`` is 0
and ``stamp_ns`` is that stamp. Otherwise the rays keep (some of) their
measurement times: ``stamp_ns`` and ``time_increment`` are then the
least-squares line through the rays' effective times against their index,
and :attr:`MergeResult.timing_residual_s` says how far any ray is from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.pose_history import PoseHistory, PoseOutOfRangeError

COMPENSATION_MODES = ("per_ray", "scan_stamp", "none")
RESAMPLING_METHODS = ("interpolate", "nearest")

_VALID, _NOTHING = 1, 2


class MergeError(TeledoraError, ValueError):
    """Scans cannot be merged (unknown lidar, nothing to merge, bad configuration)."""


class BodyFilter(Protocol):
    """What the merger needs of a self-filter (see ``body_filter.RobotBodyFilter``)."""

    def contains(self, x: np.ndarray, y: np.ndarray, z: float) -> np.ndarray: ...


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
        source: Per output ray, the index into the merged scans' order (-1:
            none; ``len(scans) + k``: the previous scan of the k-th lidar).
        ray_stamps_ns: Per output ray, when the return it holds was measured
            (0 where the ray holds none).
        self_hits: Returns dropped because they fell on the robot, per lidar.
        compensation: The mode actually applied: "none" when odometry was
            missing, "partial" when it covered only some of the scans.
        odom_error: Why odometry could not be used, or "".
        timing_residual_s: Largest distance of a ray's effective time from
            ``stamp + i * time_increment`` (0 after per-ray compensation).
        from_history: Output rays filled from a lidar's previous scan.
    """

    scan: LaserScan
    source: np.ndarray
    ray_stamps_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    self_hits: dict[str, int] = field(default_factory=dict)
    compensation: str = "per_ray"
    odom_error: str = ""
    timing_residual_s: float = 0.0
    from_history: int = 0


def _se2_apply(x: np.ndarray, y: np.ndarray, tx, ty, yaw) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.cos(yaw), np.sin(yaw)
    return tx + c * x - s * y, ty + s * x + c * y


def _se2_apply_inverse(x: np.ndarray, y: np.ndarray, tx, ty, yaw) -> tuple[np.ndarray, np.ndarray]:
    c, s = np.cos(yaw), np.sin(yaw)
    dx, dy = x - tx, y - ty
    return c * dx + s * dy, -s * dx + c * dy


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


@dataclass
class _Layer:
    """One scan resampled onto the output grid."""

    rng: np.ndarray  # nearest return per direction (inf: none)
    inten: np.ndarray
    stamp: np.ndarray  # measurement time of that return (int64 ns)
    eff: np.ndarray  # its effective time (what the output's timing must describe)
    looked: np.ndarray  # a ray of this scan saw nothing in that direction


class ScanMerger:
    """Merges scans keyed by lidar name.

    Args:
        frame_id: Output frame: the base frame the mounts are given in.
        mounts: Lidar name -> mount pose in the base frame.
        footprint: Returns inside it are dropped (None keeps all).
        compensation: One of ``COMPENSATION_MODES``.
        range_min_m: Output range_min; closer merged returns are dropped.
        resampling: One of ``RESAMPLING_METHODS``.
        max_gap_rad: Widest angular gap (in a lidar's own scan) bridged by interpolation.
        breakpoint_angle_rad: Most grazing incidence still taken as one surface.
        breakpoint_noise_m: Range noise allowance of the breakpoint test.
        history_max_age_s: How old a lidar's previous scan may be (against the
            merged stamp) to fill directions the current scans miss; 0 disables.
        body_filter: Drops returns on the robot's bodies at their current pose.
    """

    def __init__(
        self,
        frame_id: str,
        mounts: dict[str, LidarMount],
        footprint: Footprint | None = None,
        compensation: str = "per_ray",
        range_min_m: float = 0.0,
        resampling: str = "interpolate",
        max_gap_rad: float = np.radians(5.0),
        breakpoint_angle_rad: float = np.radians(10.0),
        breakpoint_noise_m: float = 0.03,
        history_max_age_s: float = 0.4,
        body_filter: BodyFilter | None = None,
    ) -> None:
        if compensation not in COMPENSATION_MODES:
            raise MergeError(f"compensation must be one of {COMPENSATION_MODES}, got {compensation!r}")
        if resampling not in RESAMPLING_METHODS:
            raise MergeError(f"resampling must be one of {RESAMPLING_METHODS}, got {resampling!r}")
        if not mounts:
            raise MergeError("at least one lidar mount is needed")
        if not 0 < breakpoint_angle_rad < np.pi / 2 or max_gap_rad < 0 or history_max_age_s < 0:
            raise MergeError("need 0 < breakpoint_angle < 90 deg, max_gap >= 0, history_max_age >= 0")
        self.mounts = dict(mounts)
        self.footprint = footprint
        self.compensation = compensation
        self.frame_id = frame_id
        self.range_min_m = float(range_min_m)
        self.resampling = resampling
        self.max_gap_rad = float(max_gap_rad)
        self.breakpoint_angle_rad = float(breakpoint_angle_rad)
        self.breakpoint_noise_m = float(breakpoint_noise_m)
        self.history_max_age_ns = int(round(history_max_age_s * 1e9))
        self.body_filter = body_filter
        self._previous: dict[str, LaserScan] = {}

    def reset_history(self) -> None:
        """Forgets the previous scans (the next merge uses only its own scans)."""
        self._previous.clear()

    # -- one scan ---------------------------------------------------------------------------
    def _points(self, name: str, scan: LaserScan):
        """Base-frame points of a scan's returns and no-return rays, before moving them in time."""
        mount = self.mounts[name]
        angles = scan.angles()
        valid = scan.valid_mask()
        nothing = scan.no_return_mask()
        use = valid | nothing
        r_all = np.where(valid, scan.ranges.astype(np.float64), scan.range_max)
        bx, by = _se2_apply(r_all * np.cos(angles), r_all * np.sin(angles), mount.x, mount.y, mount.yaw)
        hit_self = np.zeros(len(scan), dtype=bool)
        if self.footprint is not None and np.any(valid):
            hit_self[valid] = self.footprint.contains(bx[valid], by[valid])
        if self.body_filter is not None and np.any(valid & ~hit_self):
            check = valid & ~hit_self
            hit_self[check] = self.body_filter.contains(bx[check], by[check], mount.z)
        kind = np.zeros(len(scan), dtype=np.int8)
        kind[valid & ~hit_self] = _VALID
        kind[nothing] = _NOTHING
        # -Inf, out-of-limit and self hits break a chain of neighbours; NaN rays are skipped over
        brk = ~use | hit_self
        brk &= ~np.isnan(scan.ranges)
        return angles, bx, by, kind, brk, int(np.count_nonzero(hit_self))

    def _move(self, name, scan, bx, by, mode, poses, pose_out):
        """Moves base-frame points to the merged stamp; returns (x, y, the time each was moved from).

        Raises:
            PoseOutOfRangeError: the odometry does not cover the scan.
        """
        times = scan.ray_stamps_ns()
        ref = times if mode == "per_ray" else np.full(times.shape, scan.stamp_ns, dtype=np.int64)
        px, py, pyaw = poses.interpolate(ref)
        wx, wy = _se2_apply(bx, by, px, py, pyaw)
        x, y = _se2_apply_inverse(wx, wy, pose_out[0][0], pose_out[1][0], pose_out[2][0])
        return x, y, ref

    def _layer(self, scan, mount, angles, x, y, kind, brk, times, ref, t_out, n_out, inc_out) -> _Layer:
        rng_out = np.full(n_out, np.inf)
        inten_out = np.zeros(n_out)
        stamp_out = np.zeros(n_out, dtype=np.int64)
        eff_out = np.zeros(n_out, dtype=np.int64)
        looked = np.zeros(n_out, dtype=bool)
        eff = times - ref + t_out  # a compensated ray stands at t_out
        inten_in = scan.intensities.astype(np.float64) if scan.intensities.size else np.zeros(len(scan))
        rho = np.hypot(x, y)
        phi = np.arctan2(y, x)
        ok = kind == _VALID
        ok &= rho >= self.range_min_m
        kind = np.where((kind == _VALID) & ~ok, 0, kind)
        brk = brk | ((scan.valid_mask()) & (kind == 0))
        angle_min = -np.pi

        def write(k, r, src, valid_mask):
            """Candidates (direction k, range r, source ray src): nearest valid wins; no-returns mark looked."""
            k = np.mod(k, n_out)
            looked[k[~valid_mask]] = True
            if not np.any(valid_mask):
                return
            kv, rv, sv = k[valid_mask], r[valid_mask], src[valid_mask]
            order = np.argsort(-rv, kind="stable")  # far first: the nearest is written last
            kv, rv, sv = kv[order], rv[order], sv[order]
            nearer = rv < rng_out[kv]
            kv, rv, sv = kv[nearer], rv[nearer], sv[nearer]
            rng_out[kv] = rv
            inten_out[kv] = inten_in[sv]
            stamp_out[kv] = times[sv]
            eff_out[kv] = eff[sv]

        pts = np.nonzero(kind > 0)[0]
        if self.resampling == "nearest" or pts.size == 0:
            k = np.rint((phi[pts] - angle_min) / inc_out).astype(np.int64)
            write(k, rho[pts], pts, kind[pts] == _VALID)
            return _Layer(rng_out, inten_out, stamp_out, eff_out, looked)

        # neighbours: consecutive rays with a point, no break between, close enough in the scan
        inc_src = abs(scan.angle_increment) if len(scan) > 1 else 2 * np.pi
        n = len(scan)
        brk_count = np.cumsum(brk)
        a, b = pts, np.roll(pts, -1)
        # the gap between two rays as the lidar sees them now: after moving them in time
        # the two ends of a turn made while turning lie apart by the angle turned meanwhile
        seen = np.arctan2(y - mount.y, x - mount.x)
        gap = np.maximum(np.abs(_wrap(angles[b] - angles[a])), np.abs(_wrap(seen[b] - seen[a])))
        between = brk_count[b] - brk_count[a] - brk[b].astype(np.int64)  # breaks strictly between a and b
        wrapped = b <= a
        if np.any(wrapped):
            between[wrapped] = brk_count[-1] - brk_count[a[wrapped]] + brk_count[b[wrapped]] - brk[b[wrapped]]
        linked = (gap <= self.max_gap_rad + 1e-9) & (between == 0) & (a != b)
        if n * inc_src < 2 * np.pi - 1.5 * inc_src:
            linked &= ~wrapped  # a partial scan does not close on itself
        # breakpoint test on the lidar-frame geometry (moving the points does not change it much)
        r_a, r_b = rho[a], rho[b]
        lidar_gap = np.minimum(gap, self.breakpoint_angle_rad - 1e-6)
        dist = np.hypot(x[b] - x[a], y[b] - y[a])
        limit = np.minimum(r_a, r_b) * np.sin(lidar_gap) / np.sin(self.breakpoint_angle_rad - lidar_gap) + self.breakpoint_noise_m
        both_valid = (kind[a] == _VALID) & (kind[b] == _VALID)
        both_nothing = (kind[a] == _NOTHING) & (kind[b] == _NOTHING)
        surface = linked & both_valid & (dist <= limit)
        # directions strictly covered by each link, in base-frame angles
        span = _wrap(phi[b] - phi[a])
        lo = np.where(span >= 0, phi[a], phi[a] + span)
        hi = lo + np.abs(span)
        linked &= np.abs(span) < np.pi / 4  # folded back or degenerate: not a neighbour pair
        surface &= linked
        k0 = np.ceil((lo - angle_min) / inc_out - 1e-9).astype(np.int64)
        k1 = np.floor((hi - angle_min) / inc_out + 1e-9).astype(np.int64)
        # a depth discontinuity (or a return next to a no-return) is not a link: each side
        # covers only its own sector below, the nearer winning where they overlap
        emit = surface | (linked & both_nothing)
        count = np.where(emit, np.maximum(k1 - k0 + 1, 0), 0)
        covered_by_link = np.zeros(n_out, dtype=bool)
        if count.sum() > 0:
            link = np.repeat(np.arange(a.size), count)
            k = k0[link] + (np.arange(link.size) - np.repeat(np.cumsum(count) - count, count))
            theta = angle_min + k * inc_out
            ia, ib = a[link], b[link]
            # surface: the output ray meets the segment between the two returns
            ex, ey = x[ib] - x[ia], y[ib] - y[ia]
            ux, uy = np.cos(theta), np.sin(theta)
            den = ux * ey - uy * ex
            num = x[ia] * ey - y[ia] * ex
            with np.errstate(divide="ignore", invalid="ignore"):
                r_cut = num / den
            f = np.clip(np.abs(_wrap(theta - phi[ia])) / np.maximum(np.abs(span[link]), 1e-12), 0.0, 1.0)
            r_lin = rho[ia] + f * (rho[ib] - rho[ia])
            bad = ~np.isfinite(r_cut) | (r_cut <= 0) | (np.abs(r_cut - r_lin) > 0.5 * np.abs(rho[ib] - rho[ia]) + 0.05)
            r_cut = np.where(bad, r_lin, r_cut)
            is_surface = surface[link]
            # intensity and time of a surface sample: the endpoint nearer in angle (a tie: the nearer range)
            src = np.where(f > 0.5, ib, np.where(f < 0.5, ia, np.where(rho[ib] < rho[ia], ib, ia)))
            r_val = np.where(is_surface, r_cut, rho[src])
            valid_c = np.where(is_surface, True, kind[src] == _VALID)
            both_n = both_nothing[link]
            valid_c &= ~both_n
            write(k, r_val, src, valid_c)
            covered_by_link[np.mod(k, n_out)] = True
        # every point also covers its own sector where no link covers
        half = 0.5 * inc_src
        k0 = np.ceil((phi[pts] - half - angle_min) / inc_out - 1e-9).astype(np.int64)
        k1 = np.floor((phi[pts] + half - angle_min) / inc_out + 1e-9).astype(np.int64)
        knear = np.rint((phi[pts] - angle_min) / inc_out).astype(np.int64)
        k0 = np.minimum(k0, knear)
        k1 = np.maximum(k1, knear)
        count = k1 - k0 + 1
        own = np.repeat(pts, count)
        k = np.mod(np.repeat(k0, count) + (np.arange(own.size) - np.repeat(np.cumsum(count) - count, count)), n_out)
        free = ~covered_by_link[k]
        k, own = k[free], own[free]
        write(k, rho[own], own, kind[own] == _VALID)
        return _Layer(rng_out, inten_out, stamp_out, eff_out, looked)

    # -- the merge --------------------------------------------------------------------------
    def merge(self, scans: dict[str, LaserScan], poses: PoseHistory | None = None) -> MergeResult:
        """Merges ``scans`` (one or more lidars) into one scan stamped at the mean of their stamps.

        The scans are remembered: a later merge fills directions its own scans
        miss from them.

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
        pose_out = None
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
        best_stamp = np.zeros(n_out, dtype=np.int64)
        best_eff = np.zeros(n_out, dtype=np.int64)
        looked = np.zeros(n_out, dtype=bool)
        self_hits: dict[str, int] = {}
        uncompensated: list[str] = []
        range_max = 0.0

        def layer_of(name: str, scan: LaserScan, current: bool):
            """(layer or None, self hits, odometry error) of one scan."""
            angles, bx, by, kind, brk, hits = self._points(name, scan)
            times = scan.ray_stamps_ns()
            # uncompensated: nothing moved, each ray keeps its own measurement time
            x, y, ref, err = bx, by, np.full(times.shape, t_out, dtype=np.int64), ""
            if mode != "none":
                try:
                    x, y, ref = self._move(name, scan, bx, by, mode, poses, pose_out)
                except PoseOutOfRangeError as exc:
                    if not current:
                        return None, hits, str(exc)
                    err = f"{name}: {exc}"
            return self._layer(scan, self.mounts[name], angles, x, y, kind, brk, times, ref, t_out, n_out, inc_out), hits, err

        for src_index, name in enumerate(names):
            scan, mount = scans[name], self.mounts[name]
            range_max = max(range_max, scan.range_max + float(np.hypot(mount.x, mount.y)))
            if len(scan) == 0:
                self_hits[name] = 0
                continue
            layer, hits, err = layer_of(name, scan, True)
            self_hits[name] = hits
            if err:
                odom_error = err
                uncompensated.append(name)
            looked |= layer.looked
            nearer = layer.rng < best
            best = np.where(nearer, layer.rng, best)
            best_int = np.where(nearer, layer.inten, best_int)
            best_src = np.where(nearer, src_index, best_src)
            best_stamp = np.where(nearer, layer.stamp, best_stamp)
            best_eff = np.where(nearer, layer.eff, best_eff)

        # directions nothing covered: the previous scan of each lidar, moved to now
        from_history = 0
        if mode != "none" and self.history_max_age_ns > 0:
            for k, name in enumerate(self.mounts):
                prev = self._previous.get(name)
                if prev is None or len(prev) == 0 or (name in scans and prev is scans[name]):
                    continue
                if t_out - prev.stamp_ns > self.history_max_age_ns:
                    continue
                if name in scans and prev.stamp_ns >= scans[name].stamp_ns:
                    continue
                missing = ~np.isfinite(best) & ~looked
                if not np.any(missing):
                    break
                layer, _, err = layer_of(name, prev, False)
                if layer is None:
                    continue
                fill = missing & (np.isfinite(layer.rng) | layer.looked)
                take = fill & np.isfinite(layer.rng)
                best = np.where(take, layer.rng, best)
                best_int = np.where(take, layer.inten, best_int)
                best_src = np.where(take, len(names) + k, best_src)
                best_stamp = np.where(take, layer.stamp, best_stamp)
                best_eff = np.where(take, layer.eff, best_eff)
                looked |= fill & ~take
                from_history += int(np.count_nonzero(fill))
        for name in names:
            self._previous[name] = scans[name]

        filled = best_src >= 0
        ranges = np.where(filled, best, np.where(looked, np.inf, np.nan))
        scan_time = max(s.scan_time for s in scans.values())
        if uncompensated:
            mode = "none" if len(uncompensated) == len(names) else "partial"
        stamp_ns, time_increment, residual = t_out, 0.0, 0.0
        if mode != "per_ray" and np.count_nonzero(filled) >= 2:
            # the rays keep their times: start the grid just after the largest jump in time
            # (a lidar's seam), so that one line through time against index fits best
            f_idx = np.nonzero(filled)[0]
            e = best_eff[f_idx]
            jump = np.abs(np.diff(np.append(e, e[0])))
            start = int(f_idx[(int(np.argmax(jump)) + 1) % f_idx.size])
            ranges, best_int, best_src, best_stamp, best_eff, filled = (
                np.roll(v, -start) for v in (ranges, best_int, best_src, best_stamp, best_eff, filled))
            angle_min = -np.pi + start * inc_out
            idx = np.nonzero(filled)[0].astype(np.float64)
            rel = (best_eff[filled] - t_out).astype(np.float64) * 1e-9
            slope, intercept = np.polyfit(idx, rel, 1)
            time_increment = float(slope)
            stamp_ns = t_out + int(round(intercept * 1e9))
            residual = float(np.max(np.abs(rel - (intercept + slope * idx))))
        elif mode != "per_ray" and np.count_nonzero(filled) == 1:
            stamp_ns = int(best_eff[filled][0])
        merged = LaserScan(
            stamp_ns=stamp_ns,
            frame_id=self.frame_id,
            angle_min=angle_min,
            angle_max=angle_min + (n_out - 1) * inc_out,
            angle_increment=inc_out,
            time_increment=time_increment,
            scan_time=float(scan_time),
            range_min=self.range_min_m,
            range_max=max(range_max, self.range_min_m + 1e-3),
            ranges=ranges.astype(np.float32),
            intensities=best_int.astype(np.float32),
        )
        return MergeResult(merged, best_src, np.where(filled, best_stamp, 0), self_hits, mode, odom_error, residual,
                           from_history)
