"""Fit convex collision proxies to the upstream AlohaMini2 meshes.

Each fitted part's mesh (in its body's frame) is cut by axis-aligned planes
into cells; each cell's share of the surface (triangles clipped to the cell,
so no surface point is lost at a cut) gets its convex hull. MuJoCo collides a
mesh geom as the convex hull of its vertices, so each hull becomes a
``<mesh vertex=...>`` asset and a proxy geom. Cells are split greedily, the
worst first, until every hull's excess is within ``--target-mm`` or the
part's piece budget is spent.

Excess of a hull: the largest distance from a point of its surface to the
part's solid (0 for points inside the solid), i.e. how far the proxy can
stand off the real part. Measured on hull-surface samples ``--sample-mm``
apart against part-surface samples 1 mm apart (which overstates a distance
by at most about 0.6 mm); a sample's inside/outside comes from ray parity,
majority of three ray directions.

    python tools/fit_collision_proxies.py [--reference DIR] [--write]

Without ``--write`` it prints the fit table; with it, it also rewrites the
blocks between ``<!-- fitted:NAME -->`` and ``<!-- /fitted:NAME -->`` of the
fitted parts in
models/alohamini2/alohamini2.xml.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
from scipy.spatial import ConvexHull, cKDTree

from teledora.operators.model.urdf_import import read_stl

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "models" / "alohamini2" / "alohamini2.xml"
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference" / "alohamini2" / "alohamini2_meshes"
EPS = 1e-9


@dataclass
class Part:
    """One fitted part: meshes (in ``frame``'s body frame), where its geoms go."""

    name: str  # asset prefix
    meshes: list[str]
    budget: int
    bodies: list[str]  # bodies that get the geoms ({side} expanded)
    geom_name: tuple[str, str]  # (stem, tail): <side>_<stem>[_b, _c, ...]_<tail>
    geom_class: str = "proxy"
    sweep: tuple[str, str, str] | None = None  # (moving body, joint, fixed body) for a swept part
    clip_min: tuple[float, float, float] | None = None  # keep only the surface above these (covered elsewhere)
    forced_splits: list[tuple[int, float]] = field(default_factory=list)
    class_above: tuple[int, float, str, tuple[str, str]] | None = None  # (axis, value, class, name) beyond value


PARTS = [
    # the base below the disk's top (0.127 m) is inside the wheel disk proxy
    Part("base", ["base_link"], 10, ["chassis"], ("base", "proxy"), clip_min=(-1.0, -1.0, 0.127)),
    Part("carriage", ["vertical_link"], 6, ["vertical_link"], ("carriage", "proxy")),
    Part("front_camera", ["front_camera"], 1, ["front_camera"], ("front_camera", "proxy")),
    Part("back_camera", ["back_camera"], 1, ["back_camera"], ("back_camera", "proxy")),
    Part("chest_camera", ["chest_camera"], 1, ["chest_camera"], ("chest_camera", "proxy")),
    Part("wrist_pitch", ["left_Wrist_Pitch_Roll"], 3, ["{side}_Wrist_Pitch_Roll"], ("wrist_pitch", "proxy")),
    # the fixed finger (z above 45 mm) is a finger proxy: objects meet its pad
    Part("jaw", ["left_Fixed_Jaw"], 5, ["{side}_Fixed_Jaw"], ("jaw_servo", "proxy"), forced_splits=[(2, 0.045)],
         class_above=(2, 0.045, "finger_proxy", ("fixed", "finger_proxy"))),
    Part("wrist_camera", ["left_camera"], 1, ["{side}_camera"], ("jaw_camera", "proxy")),
    # the space the moving finger sweeps over the gripper's range, in the fixed jaw
    Part("moving_finger", ["left_Moving_Jaw"], 3, ["{side}_Fixed_Jaw"], ("moving", "finger_proxy"),
         geom_class="finger_proxy",
         sweep=("left_Moving_Jaw", "left_gripper", "left_Fixed_Jaw")),
]


# -- geometry ---------------------------------------------------------------------


def load(reference: Path, name: str) -> np.ndarray:
    return read_stl((reference / f"{name}.STL").read_bytes())


def sweep_copies(tris: np.ndarray, sweep: tuple[str, str, str], steps: int) -> list[np.ndarray]:
    """The moving body's triangles in the fixed body's frame at ``steps`` joint angles
    over the joint's range (steps 0.009 rad apart bow an arc by under 1 um at 0.1 m)."""
    moving, joint, fixed = sweep
    model = mujoco.MjModel.from_xml_path(str(MODEL))
    data = mujoco.MjData(model)
    lo, hi = model.jnt_range[model.joint(joint).id]
    out = []
    for angle in np.linspace(lo, hi, steps):
        data.qpos[:] = 0
        data.qpos[model.joint(joint).qposadr[0]] = angle
        mujoco.mj_kinematics(model, data)
        rf, pf = data.xmat[model.body(fixed).id].reshape(3, 3), data.xpos[model.body(fixed).id]
        rm, pm = data.xmat[model.body(moving).id].reshape(3, 3), data.xpos[model.body(moving).id]
        rot, pos = rf.T @ rm, rf.T @ (pm - pf)
        out.append(tris @ rot.T + pos)
    return out


def clip_points(tris: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The vertices of every triangle's intersection with the box [lo, hi]: its
    corners inside, its edges' crossings of the box faces, the box edges'
    crossings of the triangle. Their hull is the hull of the surface in the box."""
    bmin, bmax = tris.min(axis=1), tris.max(axis=1)
    keep = np.all(bmax >= lo - EPS, axis=1) & np.all(bmin <= hi + EPS, axis=1)
    t = tris[keep]
    if len(t) == 0:
        return np.zeros((0, 3))
    pts = [v[np.all((v >= lo - EPS) & (v <= hi + EPS), axis=1)] for v in (t[:, 0], t[:, 1], t[:, 2])]
    for i, j in ((0, 1), (1, 2), (2, 0)):
        p0, d = t[:, i], t[:, j] - t[:, i]
        for axis in range(3):
            for value in (lo[axis], hi[axis]):
                with np.errstate(divide="ignore", invalid="ignore"):
                    s = (value - p0[:, axis]) / d[:, axis]
                ok = np.isfinite(s) & (s >= 0) & (s <= 1)
                q = p0[ok] + s[ok, None] * d[ok]
                q[:, axis] = value
                pts.append(q[np.all((q >= lo - EPS) & (q <= hi + EPS), axis=1)])
    # box edges through the triangles (Moller-Trumbore)
    e1, e2 = t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        for cu in (lo[u], hi[u]):
            for cv in (lo[v], hi[v]):
                origin = np.zeros(3)
                origin[u], origin[v], origin[axis] = cu, cv, lo[axis]
                direction = np.zeros(3)
                direction[axis] = hi[axis] - lo[axis]
                pv = np.cross(direction, e2)
                det = np.einsum("ij,ij->i", e1, pv)
                with np.errstate(divide="ignore", invalid="ignore"):
                    inv = 1.0 / det
                    tv = origin - t[:, 0]
                    a = np.einsum("ij,ij->i", tv, pv) * inv
                    qv = np.cross(tv, e1)
                    b = (qv @ direction) * inv
                    s = np.einsum("ij,ij->i", e2, qv) * inv
                    ok = np.isfinite(inv) & (a >= -EPS) & (b >= -EPS) & (a + b <= 1 + EPS) & (s >= 0) & (s <= 1)
                pts.append(origin + s[ok, None] * direction)
    return np.concatenate(pts) if pts else np.zeros((0, 3))


def surface_samples(tris: np.ndarray, spacing: float) -> np.ndarray:
    """Points on every triangle, no more than about ``spacing`` apart."""
    edge = np.max(np.linalg.norm(tris - np.roll(tris, 1, axis=1), axis=2), axis=1)
    n = np.maximum(1, np.ceil(edge / spacing)).astype(int)
    out = [tris.mean(axis=1)]
    for k in np.unique(n):
        sel = tris[n == k]
        i, j = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
        m = (i + j) <= k
        a, b = i[m] / k, j[m] / k
        out.append((sel[:, None, 0] * (1 - a - b)[None, :, None] + sel[:, None, 1] * a[None, :, None]
                    + sel[:, None, 2] * b[None, :, None]).reshape(-1, 3))
    return np.concatenate(out)


def inside_solid(tris: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Ray parity, majority of three fixed oblique directions (robust to a ray
    grazing an edge and to the meshes' few open edges)."""
    votes = np.zeros(len(points), dtype=int)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, _r = np.linalg.qr(rng.normal(size=(3, 3)))
        t, p = tris @ q, points @ q  # cast along the rotated +z
        cell = 0.004
        tmin = np.floor(t[:, :, :2].min(axis=1) / cell).astype(np.int64)
        tmax = np.floor(t[:, :, :2].max(axis=1) / cell).astype(np.int64)
        origin = np.minimum(tmin.min(axis=0), np.floor(p[:, :2].min(axis=0) / cell).astype(np.int64))
        tmin, tmax = tmin - origin, tmax - origin
        width = int(max(tmax[:, 1].max(), np.floor(p[:, 1].max() / cell) - origin[1])) + 1
        tri_ids, cell_ids = [], []
        spans = tmax - tmin + 1
        for dx in range(int(spans[:, 0].max())):
            for dy in range(int(spans[:, 1].max())):
                ok = (dx < spans[:, 0]) & (dy < spans[:, 1])
                tri_ids.append(np.nonzero(ok)[0])
                cell_ids.append((tmin[ok, 0] + dx) * width + tmin[ok, 1] + dy)
        tri_ids, cell_ids = np.concatenate(tri_ids), np.concatenate(cell_ids)
        order = np.argsort(cell_ids, kind="stable")
        tri_ids, cell_ids = tri_ids[order], cell_ids[order]
        pc = np.floor(p[:, :2] / cell).astype(np.int64) - origin
        pcell = pc[:, 0] * width + pc[:, 1]
        start = np.searchsorted(cell_ids, pcell, side="left")
        stop = np.searchsorted(cell_ids, pcell, side="right")
        count = stop - start
        crossings = np.zeros(len(points), dtype=int)
        for chunk in np.array_split(np.arange(len(points)), max(1, int(count.sum()) // 2_000_000 + 1)):
            c = count[chunk]
            pid = np.repeat(chunk, c)
            offs = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
            tid = tri_ids[np.repeat(start[chunk], c) + offs]
            a, b, cc = t[tid, 0], t[tid, 1], t[tid, 2]
            x, y = p[pid, 0], p[pid, 1]
            d = (b[:, 0] - a[:, 0]) * (cc[:, 1] - a[:, 1]) - (cc[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
            with np.errstate(divide="ignore", invalid="ignore"):
                l1 = ((b[:, 0] - x) * (cc[:, 1] - y) - (cc[:, 0] - x) * (b[:, 1] - y)) / d
                l2 = ((cc[:, 0] - x) * (a[:, 1] - y) - (a[:, 0] - x) * (cc[:, 1] - y)) / d
            l3 = 1 - l1 - l2
            hit = np.isfinite(l1) & (l1 >= 0) & (l2 >= 0) & (l3 >= 0)
            z = l1 * a[:, 2] + l2 * b[:, 2] + l3 * cc[:, 2]
            hit &= z > p[pid, 2]
            crossings += np.bincount(pid[hit], minlength=len(points))[: len(points)] if hit.any() else 0
        votes += crossings % 2
    return votes >= 2


class Solid:
    """A part's solid: the union of closed triangle meshes, for distances and inside tests."""

    def __init__(self, copies: list[np.ndarray]):
        self.copies = copies
        self.tree = cKDTree(np.concatenate([surface_samples(c, 0.001) for c in copies]))

    def distance(self, points: np.ndarray, near_mm: float = 0.5) -> np.ndarray:
        d, _ = self.tree.query(points)
        far = d > near_mm / 1000
        if far.any():
            idx = np.nonzero(far)[0]
            inside = np.zeros(len(idx), dtype=bool)
            for c in self.copies:
                todo = np.nonzero(~inside)[0]
                if len(todo):
                    inside[todo] = inside_solid(c, points[idx[todo]])
            d[np.nonzero(far)[0][inside]] = 0.0
        return d


def hull_excess(hull_pts: np.ndarray, solid: Solid, spacing: float) -> float:
    hull = ConvexHull(hull_pts)
    facets = hull.points[hull.simplices]
    return float(solid.distance(surface_samples(facets, spacing)).max())


# -- fitting ------------------------------------------------------------------------


@dataclass(eq=False)
class Cell:
    lo: np.ndarray
    hi: np.ndarray
    points: np.ndarray
    excess: float = math.inf


def fit_part(part: Part, reference: Path, target: float, spacing: float) -> tuple[list[Cell], Solid, np.ndarray]:
    tris = load(reference, part.meshes[0])
    copies = sweep_copies(tris, part.sweep, 79) if part.sweep else [tris]
    every = np.concatenate(copies)
    lo, hi = every.reshape(-1, 3).min(axis=0) - 1e-6, every.reshape(-1, 3).max(axis=0) + 1e-6
    if part.clip_min is not None:
        lo = np.maximum(lo, part.clip_min)
    # excess is measured against a thinner set of sweep copies (a point between
    # them counts as outside: conservative)
    solid = Solid(copies[::8] + [copies[-1]] if part.sweep else copies)

    def make(lo_, hi_):
        pts = clip_points(every, lo_, hi_)
        return Cell(lo_, hi_, pts) if len(pts) >= 4 else None

    def split(cell: Cell, axis: int, value: float) -> list[Cell]:
        hi_a, lo_b = cell.hi.copy(), cell.lo.copy()
        hi_a[axis], lo_b[axis] = value, value
        return [c for c in (make(cell.lo, hi_a), make(lo_b, cell.hi)) if c is not None]

    def volume(c: Cell) -> float:
        try:
            return ConvexHull(c.points).volume
        except Exception:  # flat
            return 0.0

    cells = [make(lo, hi)]
    for axis, value in part.forced_splits:
        cells = [piece for c in cells for piece in split(c, axis, value)]
    for c in cells:
        c.excess = hull_excess(c.points, solid, spacing)
    while len(cells) < part.budget:
        worst = max(cells, key=lambda c: c.excess)
        if worst.excess <= target:
            break
        # the three cuts leaving the least hull volume, then the one whose
        # worse half stands off the part least
        options = []
        span_lo, span_hi = worst.points.min(axis=0), worst.points.max(axis=0)
        for axis in range(3):
            for f in np.linspace(0.15, 0.85, 8):
                value = span_lo[axis] + f * (span_hi[axis] - span_lo[axis])
                pieces = split(worst, axis, value)
                if len(pieces) == 2:
                    options.append((sum(volume(c) for c in pieces), pieces))
        if not options:
            break
        options.sort(key=lambda o: o[0])
        for _, pieces in options[:3]:
            for c in pieces:
                c.excess = hull_excess(c.points, solid, spacing)
        best = min(options[:3], key=lambda o: max(c.excess for c in o[1]))[1]
        cells.remove(worst)
        cells.extend(best)
    return cells, solid, every


def hull_vertices(points: np.ndarray) -> np.ndarray:
    return points[ConvexHull(points).vertices]


def cell_class(part: Part, cell: Cell) -> tuple[str, tuple[str, str]]:
    """The cell's geom class and name (stem, tail)."""
    if part.class_above is not None:
        axis, value, cls, name = part.class_above
        if cell.lo[axis] >= value - 1e-9:
            return cls, name
    return part.geom_class, part.geom_name


# -- writing ------------------------------------------------------------------------


def fmt(x: np.ndarray) -> str:
    return " ".join(f"{v:.7f}".rstrip("0").rstrip(".") if v != 0 else "0" for v in x)


def write_model(fits: dict[str, tuple[Part, list[Cell]]]) -> None:
    text = MODEL.read_text()
    blocks: dict[str, list[str]] = {}
    for name, (part, cells) in fits.items():
        if f"<!-- fitted:assets:{name} -->" not in text:
            print(f"{name}: the model has no fitted block for it, not written")
            continue
        assets = []
        seen: dict[tuple[str, str], int] = {}
        for i, cell in enumerate(cells):
            mesh = f"{name}_hull{i}"
            assets.append(f'    <mesh name="{mesh}" vertex="{fmt(hull_vertices(cell.points).ravel())}"/>')
            cls, (stem, tail) = cell_class(part, cell)
            k = seen[(stem, tail)] = seen.get((stem, tail), -1) + 1
            # the first piece keeps the part's one-proxy name; more get _b, _c, ...
            stem = stem + ("" if k == 0 else "_" + "bcdefghijk"[k - 1])
            for body in part.bodies:
                for side in (("left", "right") if "{side}" in body else ("",)):
                    geom = f"{side}_{stem}_{tail}" if side else f"{stem}_{tail}"
                    b = body.format(side=side)
                    # a body with several fitted parts has a block per part
                    key = f"{b}:{name}" if f"<!-- fitted:{b}:{name} -->" in text else b
                    blocks.setdefault(key, []).append(
                        f'<geom name="{geom}" class="{cls}" type="mesh" mesh="{mesh}"/>')
        text = _replace_block(text, f"assets:{name}", "\n".join(assets), indent="")
    for body, lines in blocks.items():
        text = _replace_block(text, body, "\n".join(lines))
    MODEL.write_text(text)


def _replace_block(text: str, key: str, body: str, indent: str | None = None) -> str:
    pattern = re.compile(rf"([ \t]*)<!-- fitted:{re.escape(key)} -->\n(?:.*?\n)?([ \t]*)<!-- /fitted:{re.escape(key)} -->", re.S)
    m = pattern.search(text)
    if m is None:
        raise SystemExit(f"{MODEL.name}: no '<!-- fitted:{key} -->' block")
    pad = m.group(1) if indent is None else indent
    inner = "\n".join(pad + line if indent is None else line for line in body.splitlines())
    return text[: m.start()] + f"{m.group(1)}<!-- fitted:{key} -->\n{inner}\n{m.group(2)}<!-- /fitted:{key} -->" + text[m.end():]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE, help="folder of the upstream STL meshes")
    ap.add_argument("--target-mm", type=float, default=4.0, help="excess a hull is split until (default 4)")
    ap.add_argument("--sample-mm", type=float, default=1.0, help="hull surface sample spacing for the table")
    ap.add_argument("--fit-sample-mm", type=float, default=2.0, help="sample spacing while fitting")
    ap.add_argument("--only", nargs="*", help="fit only these parts")
    ap.add_argument("--write", action="store_true", help="rewrite the fitted blocks of the MJCF")
    args = ap.parse_args(argv)
    if not args.reference.is_dir():
        print(f"no reference meshes at {args.reference}", file=sys.stderr)
        return 2
    fits = {}
    print(f"{'part':14} {'hulls':>5} {'vertices':>8} {'max excess mm':>14}  per hull", flush=True)
    for part in PARTS:
        if args.only and part.name not in args.only:
            continue
        cells, solid, _ = fit_part(part, args.reference, args.target_mm / 1000, args.fit_sample_mm / 1000)
        final = [hull_excess(c.points, solid, args.sample_mm / 1000) * 1000 for c in cells]
        nv = sum(len(ConvexHull(c.points).vertices) for c in cells)
        print(f"{part.name:14} {len(cells):5d} {nv:8d} {max(final):14.2f}  " + " ".join(f"{e:.2f}" for e in final),
              flush=True)
        fits[part.name] = (part, cells)
    if args.write:
        write_model(fits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
