"""A recorded robot and scene pose at any instant, interpolated from its samples.

Offline rendering puts a camera frame at exactly ``start + k / fps``, which
almost never coincides with a recorded state. :class:`PoseTracks` keeps every
checked sample of each joint group and of each free object, and gives the pose
at an arbitrary time:

* joints linearly per joint; a joint named as wrapping (the base yaw, which
  odometry reports in (-pi, pi]) is unwrapped first, so a turn through +-pi
  does not spin the robot the long way round;
* object positions linearly, orientations by spherical linear interpolation
  (shortest arc);
* after a track's last sample its last value holds; before its first sample
  there is no pose (:attr:`PoseTracks.start_ns`).

Samples are placed by their measurement time (``stamp_ns``). Two samples of one
track at the same time keep the later one (recorded order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np


def sample_index(times: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query time, the sample ``i`` before it and the fraction ``u`` in [0, 1]
    of the way to sample ``i + 1`` (``u`` = 0 at or after the last sample).
    ``i`` is -1 before the first sample. ``times`` must be strictly increasing."""
    times = np.asarray(times, dtype=np.int64)
    at = np.asarray(at, dtype=np.int64)
    i = np.searchsorted(times, at, side="right") - 1
    u = np.zeros(len(at), dtype=np.float64)
    inner = (i >= 0) & (i < len(times) - 1)
    lo, hi = times[i[inner]], times[i[inner] + 1]
    # differences in int64 before the float: absolute ns do not fit a double's 53 bits
    u[inner] = (at[inner] - lo).astype(np.float64) / (hi - lo).astype(np.float64)
    return i, u


def interpolate_linear(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(m, k) values at the query times, linear between samples, the last held
    after the end; NaN rows before the first sample."""
    values = np.asarray(values, dtype=np.float64).reshape(len(times), -1)
    i, u = sample_index(times, at)
    out = np.full((len(i), values.shape[1]), np.nan)
    ok = i >= 0
    lo = values[i[ok]]
    hi = values[np.minimum(i[ok] + 1, len(times) - 1)]
    out[ok] = lo + (hi - lo) * u[ok, None]
    return out


def slerp(q0: np.ndarray, q1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Unit quaternions between ``q0`` and ``q1`` (rows, any one component order
    used by both) at fractions ``u``, along the shorter arc."""
    q0 = np.asarray(q0, dtype=np.float64).reshape(-1, 4)
    q1 = np.asarray(q1, dtype=np.float64).reshape(-1, 4)
    q0 = q0 / np.linalg.norm(q0, axis=1, keepdims=True)
    q1 = q1 / np.linalg.norm(q1, axis=1, keepdims=True)
    u = np.asarray(u, dtype=np.float64).reshape(-1, 1)
    dot = np.sum(q0 * q1, axis=1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)  # q and -q are one rotation: take the short way
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    near = sin < 1e-9  # (almost) the same rotation: the linear blend is exact enough
    safe = np.where(near, 1.0, sin)
    w0 = np.where(near, 1.0 - u, np.sin((1.0 - u) * theta) / safe)
    w1 = np.where(near, u, np.sin(u * theta) / safe)
    out = w0 * q0 + w1 * q1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _increasing(times: list[int]) -> np.ndarray:
    """Indices that put samples in time order, the later of equal times kept."""
    t = np.asarray(times, dtype=np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    last = np.ones(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    return order[last]


@dataclass
class _Track:
    names: tuple[str, ...]
    times: list[int] = field(default_factory=list)
    rows: list[list[float]] = field(default_factory=list)
    t: np.ndarray | None = None
    v: np.ndarray | None = None


@dataclass
class _ObjectTrack:
    times: list[int] = field(default_factory=list)
    pos: list[list[float]] = field(default_factory=list)
    quat: list[list[float]] = field(default_factory=list)  # (w, x, y, z), as MuJoCo's free joint
    t: np.ndarray | None = None
    p: np.ndarray | None = None
    q: np.ndarray | None = None


class PoseTracks:
    """The samples of every joint group and free object, then poses at any time.

    Args:
        wrapping_joints: Joints whose values wrap round a turn (unwrapped before
            interpolating).
    """

    def __init__(self, wrapping_joints: Iterable[str] = ()) -> None:
        self.wrapping = set(wrapping_joints)
        self._groups: dict[str, _Track] = {}
        self._objects: dict[str, _ObjectTrack] = {}
        self._ready = False

    # ------------------------------------------------------------- samples
    def add_groups(self, groups: Mapping[str, Mapping[str, float]], stamp_ns: int) -> None:
        """Adds checked group values (``{group: {joint: value}}``) measured at ``stamp_ns``."""
        for group, values in groups.items():
            track = self._groups.get(group)
            if track is None:
                track = self._groups[group] = _Track(tuple(values))
            track.times.append(int(stamp_ns))
            track.rows.append([float(values[j]) for j in track.names])
        self._ready = False

    def add_objects(self, msg: Mapping[str, Any]) -> list[str]:
        """Adds an ObjectPoses message's poses; returns the names of entries
        refused (non-finite, or a quaternion of zero length)."""
        refused = []
        stamp = int(msg["stamp_ns"])
        for i, name in enumerate(msg["names"]):
            pos = [float(msg["x"][i]), float(msg["y"][i]), float(msg["z"][i])]
            quat = [float(msg["qw"][i]), float(msg["qx"][i]), float(msg["qy"][i]), float(msg["qz"][i])]
            norm = float(np.linalg.norm(quat))
            if not (np.all(np.isfinite(pos)) and np.isfinite(norm) and norm > 0.0):
                refused.append(str(name))
                continue
            track = self._objects.setdefault(str(name), _ObjectTrack())
            track.times.append(stamp)
            track.pos.append(pos)
            track.quat.append([c / norm for c in quat])
        self._ready = False
        return refused

    def _finish(self) -> None:
        if self._ready:
            return
        for track in self._groups.values():
            keep = _increasing(track.times)
            track.t = np.asarray(track.times, dtype=np.int64)[keep]
            v = np.asarray(track.rows, dtype=np.float64)[keep]
            for k, name in enumerate(track.names):
                if name in self.wrapping:
                    v[:, k] = np.unwrap(v[:, k])
            track.v = v
        for obj in self._objects.values():
            keep = _increasing(obj.times)
            obj.t = np.asarray(obj.times, dtype=np.int64)[keep]
            obj.p = np.asarray(obj.pos, dtype=np.float64)[keep]
            obj.q = np.asarray(obj.quat, dtype=np.float64)[keep]
        self._ready = True

    # ------------------------------------------------------------- poses
    @property
    def groups(self) -> list[str]:
        return sorted(self._groups)

    @property
    def objects(self) -> list[str]:
        return sorted(self._objects)

    def start_ns(self, groups: Iterable[str]) -> int | None:
        """The first time at which every one of ``groups`` has a sample (None: a group never has one)."""
        self._finish()
        firsts = []
        for g in groups:
            track = self._groups.get(g)
            if track is None or track.t is None or not len(track.t):
                return None
            firsts.append(int(track.t[0]))
        return max(firsts) if firsts else None

    def end_ns(self) -> int | None:
        """The time of the last joint sample of any group (None: no samples)."""
        self._finish()
        lasts = [int(t.t[-1]) for t in self._groups.values() if t.t is not None and len(t.t)]
        return max(lasts) if lasts else None

    def joints_at(self, t_ns: int) -> dict[str, float]:
        """Every joint of every group that has begun by ``t_ns``, at ``t_ns``."""
        self._finish()
        out: dict[str, float] = {}
        at = np.array([t_ns], dtype=np.int64)
        for track in self._groups.values():
            row = interpolate_linear(track.t, track.v, at)[0]
            if np.all(np.isfinite(row)):
                out.update(zip(track.names, row.tolist()))
        return out

    def objects_at(self, t_ns: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Name -> (position, quaternion w, x, y, z) of every object that has begun by ``t_ns``."""
        self._finish()
        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        at = np.array([t_ns], dtype=np.int64)
        for name, obj in self._objects.items():
            i, u = sample_index(obj.t, at)
            if i[0] < 0:
                continue
            j = min(int(i[0]) + 1, len(obj.t) - 1)
            pos = obj.p[i[0]] + (obj.p[j] - obj.p[i[0]]) * u[0]
            quat = slerp(obj.q[i[0]], obj.q[j], u)[0]
            out[name] = (pos, quat)
        return out
