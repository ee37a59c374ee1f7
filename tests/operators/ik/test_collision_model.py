"""The whole-robot collision model: every part that can touch another has a
proxy, the proxies enclose the parts (upstream meshes where present, our visual
geometry everywhere), and the IK's pair list is exactly what MuJoCo's own
collision filter lets through.

Independent truths used here: MuJoCo's ``mj_collision`` (on a copy of the model
whose collision geoms are all inflated into overlapping spheres, so the filter
alone decides which pairs report a contact), the upstream URDF meshes read
from the reference folder, and point-in-primitive tests written out below.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.operators.ik.collision_pairs import CollisionPairs, filter_allowed_pairs, pairs_moved_by
from teledora.models.config_files import load_ik_config
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.model.urdf_import import read_stl
from tests.reference_data import require

PROFILE = models.load_profile()
SETTINGS = load_ik_config().settings
MODEL = build_ik_model(models.path(SETTINGS.solver.model), True)
ARM_JOINTS = [j for s in ("left", "right") for j in PROFILE.arms[s].joints]
# the moving finger has no proxy of its own: the fixed jaw carries a box over
# the space it sweeps, so the IK is safe whatever the gripper does
SWEPT = {f"{s}_Moving_Jaw": (f"{s}_Fixed_Jaw", PROFILE.arms[s].gripper) for s in ("left", "right")}
# URDF link -> MJCF body (the URDF's base_link frame is our chassis body)
URDF_TO_BODY = {"base_link": "chassis"}


def _is_proxy(model: mujoco.MjModel, g: int) -> bool:
    return bool(model.geom_contype[g] or model.geom_conaffinity[g])


def _mujoco_filter_pairs(model_path, add_floor: bool, disable_parent_filter: bool = False) -> set[tuple[int, int]]:
    """The geom pairs MuJoCo's mj_collision reports when every collision geom
    is a sphere of 20 m (all overlap: only the filter decides)."""
    spec = mujoco.MjSpec.from_file(str(model_path))
    if add_floor:
        floor = spec.worldbody.add_geom()
        floor.name, floor.type, floor.size = "floor", mujoco.mjtGeom.mjGEOM_PLANE, [0, 0, 0.05]
        floor.contype, floor.conaffinity = 1, 1
    for geom in spec.geoms:
        if (geom.contype or geom.conaffinity) and geom.type != mujoco.mjtGeom.mjGEOM_PLANE:
            geom.type, geom.size, geom.fromto = mujoco.mjtGeom.mjGEOM_SPHERE, [20.0, 0, 0], [np.nan] * 6
    if disable_parent_filter:
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return {(int(min(c.geom)), int(max(c.geom))) for c in data.contact[: data.ncon]}


@pytest.mark.parametrize("disable_parent_filter", [False, True])
def test_pair_list_is_exactly_what_mujoco_lets_collide(disable_parent_filter):
    spec = mujoco.MjSpec.from_file(str(models.path(SETTINGS.solver.model)))
    floor = spec.worldbody.add_geom()
    floor.name, floor.type, floor.size = "floor", mujoco.mjtGeom.mjGEOM_PLANE, [0, 0, 0.05]
    floor.contype, floor.conaffinity = 1, 1
    if disable_parent_filter:
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
    ours = set(filter_allowed_pairs(spec.compile()))
    truth = _mujoco_filter_pairs(models.path(SETTINGS.solver.model), True, disable_parent_filter)
    assert ours == truth
    assert len(ours) > 300


def test_ik_checks_every_filtered_pair_an_arm_joint_moves():
    ik = BimanualIk(MODEL, PROFILE, SETTINGS)
    allowed = set(filter_allowed_pairs(MODEL))
    checked = set(ik.collision_pairs.id_pairs)
    assert checked <= allowed
    dropped = sorted(allowed - checked)
    assert dropped, "the base rests on nothing the arms move? expected static pairs to be dropped"
    # independent check: moving every arm joint changes none of the dropped
    # pairs' relative poses, and each checked pair is moved by some arm joint
    data = mujoco.MjData(MODEL)
    rng = np.random.default_rng(3)
    adr = [MODEL.joint(n).qposadr[0] for n in ARM_JOINTS]

    def rel(pairs):
        out = []
        for g1, g2 in pairs:
            r1, r2 = data.geom_xmat[g1].reshape(3, 3), data.geom_xmat[g2].reshape(3, 3)
            out.append(np.concatenate([r1.T @ (data.geom_xpos[g2] - data.geom_xpos[g1]), (r1.T @ r2).ravel()]))
        return np.array(out)

    mujoco.mj_kinematics(MODEL, data)
    before_dropped, before_checked = rel(dropped), rel(sorted(checked))
    moved = np.zeros(len(checked), dtype=bool)
    for _ in range(5):
        data.qpos[adr] = rng.uniform(-3, 3, len(adr))
        mujoco.mj_kinematics(MODEL, data)
        np.testing.assert_allclose(rel(dropped), before_dropped, atol=1e-12)
        moved |= np.abs(rel(sorted(checked)) - before_checked).max(axis=1) > 1e-9
    assert moved.all()


def test_every_body_that_can_touch_another_has_a_proxy():
    # every rigid part (weld group) carries a proxy, except the world and the
    # moving fingers (covered by their parent's swept box)
    weld_with_proxy = {int(MODEL.body_weldid[MODEL.geom_bodyid[g]]) for g in range(MODEL.ngeom) if _is_proxy(MODEL, g)}
    for b in range(1, MODEL.nbody):
        name = MODEL.body(b).name
        if name in SWEPT:
            continue
        assert int(MODEL.body_weldid[b]) in weld_with_proxy, f"body {name} has no collision proxy"


# -- enclosure -----------------------------------------------------------------


def _inside(model: mujoco.MjModel, data: mujoco.MjData, g: int, pts: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """Which world points lie inside geom g (independent point-in-primitive tests)."""
    local = (pts - data.geom_xpos[g]) @ data.geom_xmat[g].reshape(3, 3)
    size = model.geom_size[g]
    t = int(model.geom_type[g])
    if t == mujoco.mjtGeom.mjGEOM_BOX:
        return np.all(np.abs(local) <= size + tol, axis=1)
    if t == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return (np.hypot(local[:, 0], local[:, 1]) <= size[0] + tol) & (np.abs(local[:, 2]) <= size[1] + tol)
    if t == mujoco.mjtGeom.mjGEOM_CAPSULE:
        z = np.clip(local[:, 2], -size[1], size[1])
        return np.linalg.norm(local - np.c_[np.zeros((len(z), 2)), z], axis=1) <= size[0] + tol
    if t == mujoco.mjtGeom.mjGEOM_SPHERE:
        return np.linalg.norm(local, axis=1) <= size[0] + tol
    raise AssertionError(f"no inside test for geom type {t}")


def _proxies_of(model: mujoco.MjModel, body: int) -> list[int]:
    weld = model.body_weldid[body]
    return [g for g in range(model.ngeom) if _is_proxy(model, g) and model.body_weldid[model.geom_bodyid[g]] == weld
            and model.geom_type[g] != mujoco.mjtGeom.mjGEOM_PLANE]


def _outside_points(model, data, body_name: str, local_pts: np.ndarray) -> np.ndarray:
    """Points of ``local_pts`` (in body_name's frame) that no proxy of the
    body's rigid part encloses, over the sampled configurations."""
    body = model.body(body_name).id
    holder, joint = SWEPT.get(body_name, (body_name, None))
    proxies = _proxies_of(model, model.body(holder).id)
    assert proxies, f"{holder} has no proxy"
    bad = []
    angles = np.linspace(*model.jnt_range[model.joint(joint).id], 8) if joint else [None]
    rng = np.random.default_rng(0)
    for angle in angles:
        data.qpos[:] = 0
        data.qpos[[model.joint(n).qposadr[0] for n in ARM_JOINTS]] = rng.uniform(-3, 3, len(ARM_JOINTS))
        if joint:
            data.qpos[model.joint(joint).qposadr[0]] = angle
        mujoco.mj_kinematics(model, data)
        world = data.xpos[body] + local_pts @ data.xmat[body].reshape(3, 3).T
        covered = np.zeros(len(world), dtype=bool)
        for g in proxies:
            covered |= _inside(model, data, g, world)
        bad.append(local_pts[~covered])
    return np.concatenate(bad)


def test_proxies_enclose_the_upstream_meshes():
    urdf = require("alohamini2/urdf/alohamini2.urdf")
    meshes = urdf.parent.parent / "alohamini2_meshes"
    data = mujoco.MjData(MODEL)
    checked = []
    for link in ET.parse(urdf).getroot().findall("link"):
        mesh = link.find("visual/geometry/mesh")
        if mesh is None:
            continue
        path = meshes / mesh.get("filename").replace("\\", "/").split("/")[-1]
        if not path.exists():
            continue  # about half the upstream meshes are not in the reference data
        origin = link.find("visual/origin")
        assert origin is None or (origin.get("xyz", "0 0 0").split() == ["0", "0", "0"]
                                  and origin.get("rpy", "0 0 0").split() == ["0", "0", "0"])
        vertices = np.unique(read_stl(path.read_bytes()).reshape(-1, 3), axis=0)
        body = URDF_TO_BODY.get(link.get("name"), link.get("name"))
        outside = _outside_points(MODEL, data, body, vertices)
        assert len(outside) == 0, f"{link.get('name')}: {len(outside)} mesh vertices outside every proxy, e.g. {outside[:3]}"
        checked.append(link.get("name"))
    # base, carriage, both wrist pitch links, jaws, moving fingers and five cameras
    assert len(checked) == 13


def _surface_samples(model: mujoco.MjModel, g: int) -> np.ndarray:
    """Points on a primitive's surface, in the geom frame."""
    size, t = model.geom_size[g], int(model.geom_type[g])
    u = np.linspace(-1, 1, 9)
    if t == mujoco.mjtGeom.mjGEOM_BOX:
        grid = np.array(np.meshgrid(u, u, u)).reshape(3, -1).T
        return grid[np.abs(grid).max(axis=1) == 1] * size
    th = np.linspace(0, 2 * np.pi, 36, endpoint=False)
    ring = np.c_[np.cos(th), np.sin(th)] * size[0]
    if t == mujoco.mjtGeom.mjGEOM_CYLINDER:
        return np.concatenate([np.c_[ring, np.full(len(th), z)] for z in (-size[1], 0.0, size[1])] + [np.zeros((1, 3))])
    if t in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_SPHERE):
        half = size[1] if t == mujoco.mjtGeom.mjGEOM_CAPSULE else 0.0
        phi = np.linspace(0, np.pi, 13)
        sphere = np.array([[np.sin(p) * np.cos(a), np.sin(p) * np.sin(a), np.cos(p)] for p in phi for a in th]) * size[0]
        caps = sphere + np.c_[np.zeros((len(sphere), 2)), np.where(sphere[:, 2] >= 0, half, -half)]
        side = np.concatenate([np.c_[ring, np.full(len(th), z)] for z in np.linspace(-half, half, 5)])
        return np.concatenate([caps, side])
    raise AssertionError(f"no sampler for geom type {t}")


def test_proxies_enclose_the_visual_geometry():
    model = mujoco.MjModel.from_xml_path(str(models.path(SETTINGS.solver.model)))
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    checked = 0
    for g in range(model.ngeom):
        if _is_proxy(model, g):
            continue
        body = model.geom_bodyid[g]
        # the geom's surface in its body's frame
        pts = _surface_samples(model, g) @ _quat_matrix(model.geom_quat[g]).T + model.geom_pos[g]
        outside = _outside_points(model, data, model.body(body).name, pts)
        assert len(outside) == 0, f"visual geom {g} of {model.body(body).name}: {len(outside)} points outside every proxy"
        checked += 1
    assert checked > 30


def _quat_matrix(q: np.ndarray) -> np.ndarray:
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(q, dtype=float))
    return m.reshape(3, 3)


# -- clearance at home and the excluded pairs ------------------------------------


def test_home_posture_keeps_every_pair_outside_the_barrier_band_at_every_lift_height():
    ik = BimanualIk(MODEL, PROFILE, SETTINGS)
    home = np.array([PROFILE.home_q()[n] for n in ik.arm_joint_names])
    c = SETTINGS.collision
    for lift in np.linspace(*MODEL.jnt_range[MODEL.joint(PROFILE.lift_joint).id], 7):
        ik.reset(home, lift_joint=float(lift))
        closest = ik.collision_pairs.closest(ik.configuration.data)
        assert closest.distance_m > c.minimum_distance_m + c.barrier_margin_m, closest


def _excluded_same_arm_pairs(model: mujoco.MjModel) -> list[tuple[str, str]]:
    out = []
    for sig in model.exclude_signature:
        b1, b2 = int(sig) >> 16, int(sig) & 0xFFFF
        if b1 != 0:
            out.append((model.body(b1).name, model.body(b2).name))
    return out


def _body_pair_distance(model, data, b1: str, b2: str) -> float:
    p1 = _proxies_of(model, model.body(b1).id)
    p2 = _proxies_of(model, model.body(b2).id)
    fromto = np.zeros(6)
    return min(mujoco.mj_geomDistance(model, data, g1, g2, 1.0, fromto) for g1 in p1 for g2 in p2)


def test_every_excluded_pair_of_one_arm_has_its_reason():
    """Each <exclude> between two links of one arm is one of: overlapping at
    every joint angle (touching by construction), overlapping at the home
    posture (the real links nest there), or kept apart by the real parts
    (upstream meshes)."""
    model = mujoco.MjModel.from_xml_path(str(models.path(SETTINGS.solver.model)))
    data = mujoco.MjData(model)
    adr = [model.joint(n).qposadr[0] for n in ARM_JOINTS]
    home = np.array([PROFILE.home_q()[n] for n in ARM_JOINTS])
    rng = np.random.default_rng(5)
    reasons = {}
    for b1, b2 in _excluded_same_arm_pairs(model):
        side = b1.split("_")[0]
        assert b2.startswith(side), f"exclude {b1} x {b2} is not within one arm"
        data.qpos[adr] = home
        mujoco.mj_kinematics(model, data)
        at_home = _body_pair_distance(model, data, b1, b2)
        samples = []
        for _ in range(300):
            data.qpos[adr] = rng.uniform(-3.14, 3.14, len(adr))
            mujoco.mj_kinematics(model, data)
            samples.append(_body_pair_distance(model, data, b1, b2))
        if max(samples) < 0:
            reasons[(b1, b2)] = "always overlapping"
        elif at_home < 0:
            reasons[(b1, b2)] = "overlapping at home"
        else:
            reasons[(b1, b2)] = "meshes"
    assert sorted(set(reasons.values())) == ["always overlapping", "meshes", "overlapping at home"]
    mesh_pairs = [p for p, r in reasons.items() if r == "meshes"]
    meshes = require("alohamini2/alohamini2_meshes")
    for b1, b2 in mesh_pairs:
        assert _mesh_gap_over_joints(model, meshes, b1, b2) > 0.005, f"{b1} x {b2}: the real parts come close"


def _mesh_gap_over_joints(model, meshes, b1: str, b2: str) -> float:
    """Smallest vertex distance between the upstream meshes of b1 and of b2 (and
    the parts welded to or swept by it) over a grid of the joints between them
    and the gripper."""
    from scipy.spatial import cKDTree

    side = b1.split("_")[0]

    def load(name):
        return np.unique(read_stl((meshes / f"{name}.STL").read_bytes()).reshape(-1, 3), axis=0)

    first = load(b1)
    second = {b2: load(b2), f"{side}_camera": load(f"{side}_camera"), f"{side}_Moving_Jaw": load(f"{side}_Moving_Jaw")}
    data = mujoco.MjData(model)
    yaw, roll, grip = (model.joint(n).qposadr[0] for n in (f"{side}_wrist_yaw_joint", f"{side}_wrist_roll", f"{side}_gripper"))
    best = np.inf
    for a in np.linspace(-3.14, 3.14, 25):
        for r in np.linspace(-3.14, 3.14, 13):
            for g in (0.0, 0.7):
                data.qpos[:] = 0
                data.qpos[[yaw, roll, grip]] = a, r, g
                mujoco.mj_kinematics(model, data)
                b = model.body(b1).id
                tree = cKDTree(data.xpos[b] + first @ data.xmat[b].reshape(3, 3).T)
                for name, pts in second.items():
                    bb = model.body(name).id
                    best = min(best, float(tree.query(data.xpos[bb] + pts @ data.xmat[bb].reshape(3, 3).T)[0].min()))
    return best



@pytest.fixture(scope="module")
def solver() -> BimanualIk:
    return BimanualIk(MODEL, PROFILE, SETTINGS)


@settings(max_examples=60, deadline=None)
@given(q=st.lists(st.floats(-np.pi, np.pi), min_size=len(ARM_JOINTS), max_size=len(ARM_JOINTS)),
       lift=st.floats(0.0, 1.0), distmax=st.sampled_from([0.0, 0.008, 0.0085, 0.05, 0.2]))
def test_broadphase_never_drops_a_pair_closer_than_asked(solver, q, lift, distmax):
    """``near`` may keep far pairs but never one that MuJoCo measures closer than
    ``distmax``; the capped distance helpers agree with a pair-by-pair measurement."""
    top = PROFILE.lift_height_to_joint(PROFILE.lift.travel_mm / 1000.0)
    solver.reset(np.clip(q, solver.reference.lower_inner, solver.reference.upper_inner), lift_joint=lift * top)
    pairs, data = solver.collision_pairs, solver.configuration.data
    cap = max(distmax, 1e-9)
    exact = np.array([mujoco.mj_geomDistance(MODEL, data, a, b, cap, np.empty(6)) for a, b in pairs.id_pairs])
    near = set(pairs.near(data, distmax).tolist())
    assert {k for k in range(len(pairs)) if exact[k] < distmax} <= near
    kept = np.array([k in near for k in range(len(pairs))])
    assert np.allclose(pairs.distances_near(data, cap), np.where(kept, exact, cap))
    closest = pairs.min_distance(data, cap)
    assert (closest < cap) == (exact.min() < cap)
    if exact.min() >= 0:  # a penetration's depth depends on the cap it is measured under
        assert closest == pytest.approx(min(cap, float(exact.min())))
