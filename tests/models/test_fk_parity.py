"""Our MJCF against the upstream AlohaMini2 URDF: same grip sites and camera
frames at random configurations.

The URDF is read from the shared reference folder beside the repository; the
test skips (and says why) when it is not there. URDF forward kinematics is
computed here from the file's joint origins and axes, independently of MuJoCo.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
URDF = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "alohamini2" / "urdf" / "alohamini2.urdf"

# Upstream CAD frame: +x left, -y forward. Our base_link is FLU, so the URDF's
# yaw joint reads ours + 90 degrees.
YAW_OFFSET = np.pi / 2
GRIP_OFFSET = np.array([0.0, 0.0, 0.085])
CAMERA_LINKS = ["chest_camera", "front_camera", "back_camera", "left_camera", "right_camera"]


def _rpy_matrix(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    a = axis / np.linalg.norm(axis)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


class UrdfChain:
    """Minimal URDF forward kinematics (revolute, continuous, prismatic, fixed)."""

    def __init__(self, path: Path) -> None:
        root = ET.parse(path).getroot()
        self.joints = {}
        self.parent_joint = {}
        for j in root.findall("joint"):
            origin = j.find("origin")
            xyz = np.array([float(v) for v in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()])
            rpy = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
            axis_el = j.find("axis")
            axis = np.array([float(v) for v in axis_el.get("xyz").split()]) if axis_el is not None else np.zeros(3)
            child = j.find("child").get("link")
            self.joints[j.get("name")] = dict(
                type=j.get("type"), parent=j.find("parent").get("link"), child=child, xyz=xyz, rot=_rpy_matrix(*rpy), axis=axis
            )
            self.parent_joint[child] = j.get("name")

    def link_pose(self, link: str, q: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
        chain = []
        while link in self.parent_joint:
            name = self.parent_joint[link]
            chain.append(name)
            link = self.joints[name]["parent"]
        pos, rot = np.zeros(3), np.eye(3)
        for name in reversed(chain):
            j = self.joints[name]
            pos = pos + rot @ j["xyz"]
            rot = rot @ j["rot"]
            value = q.get(name, 0.0)
            if j["type"] in ("revolute", "continuous"):
                rot = rot @ _axis_angle(j["axis"], value)
            elif j["type"] == "prismatic":
                pos = pos + rot @ (j["axis"] * value)
        return pos, rot


@pytest.fixture(scope="module")
def urdf() -> UrdfChain:
    if not URDF.exists():
        pytest.skip("upstream URDF not found at ../shared/reference/alohamini2/urdf/ (reference data is not part of the repository)")
    return UrdfChain(URDF)


def test_grip_sites_and_cameras_match_urdf_at_random_configurations(urdf: UrdfChain) -> None:
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.model)))
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    arm_joints = [j for arm in profile.arms.values() for j in arm.joints]
    worst_pos, worst_rot = 0.0, 0.0
    for _ in range(200):
        x, y, yaw = rng.uniform(-2, 2), rng.uniform(-2, 2), rng.uniform(-np.pi, np.pi)
        lift = rng.uniform(-0.3, 0.3)
        arm_q = {j: rng.uniform(-3.14, 3.14) for j in arm_joints}
        data.qpos[:] = 0
        data.joint("base_x").qpos = x
        data.joint("base_y").qpos = y
        data.joint("base_yaw").qpos = yaw
        data.joint(profile.lift_joint).qpos = lift
        for j, v in arm_q.items():
            data.joint(j).qpos = v
        mujoco.mj_kinematics(model, data)

        urdf_q = dict(arm_q, root_x_axis_joint=x, root_y_axis_joint=y, root_z_rotation_joint=yaw + YAW_OFFSET, vertical_move=lift)
        for side in ("left", "right"):
            pos, rot = urdf.link_pose(f"{side}_Fixed_Jaw", urdf_q)
            expected = pos + rot @ GRIP_OFFSET
            site = data.site(profile.arms[side].grip_site)
            worst_pos = max(worst_pos, float(np.max(np.abs(site.xpos - expected))))
            worst_rot = max(worst_rot, float(np.max(np.abs(site.xmat.reshape(3, 3) - rot))))
        for link in CAMERA_LINKS:
            pos, rot = urdf.link_pose(link, urdf_q)
            body = data.body(link)
            worst_pos = max(worst_pos, float(np.max(np.abs(body.xpos - pos))))
            worst_rot = max(worst_rot, float(np.max(np.abs(body.xmat.reshape(3, 3) - rot))))
    assert worst_pos < 1e-6, f"position mismatch {worst_pos:.3e} m"
    # rotation matrices differing by < 1e-6 in every element means < ~1e-6 rad
    assert worst_rot < 1e-6, f"orientation mismatch {worst_rot:.3e}"


def test_every_profile_name_exists_in_the_model() -> None:
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    for name in profile.base_joints + (profile.lift_joint,) + profile.arm_joint_names:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0, name
    for arm in profile.arms.values():
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, arm.grip_site) >= 0
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, arm.gripper) >= 0
    for cam in CAMERA_NAMES:  # the renderer's outputs
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, cam) >= 0, cam
    for site in ("lidar_front", "lidar_back", "flow_sensor"):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site) >= 0, site
    for geom in ("column_mid_proxy", "carriage_plate_proxy", "floor"):
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, geom) >= 0, geom


def test_home_posture_is_free_of_contacts_and_grips_are_in_front() -> None:
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    data = mujoco.MjData(model)
    for j, v in profile.home_q().items():
        data.joint(j).qpos = v
    mujoco.mj_forward(model, data)
    robot = {model.body(profile.base_frame).id}
    for b in range(1, model.nbody):
        if int(model.body_parentid[b]) in robot:
            robot.add(b)
    touching = [(model.geom(c.geom1).name, model.geom(c.geom2).name) for c in data.contact[: data.ncon]
                if {int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])} & robot]
    assert touching == []
    # the only contacts: objects resting on their stand
    objects = {"cube_red", "cube_blue", "cube_green", "cylinder"}
    pairs = [{model.geom(c.geom1).name, model.geom(c.geom2).name} for c in data.contact[: data.ncon]]
    assert all(len(p & objects) == 1 and "stand" in p for p in pairs)
    left, right = data.site("left_grip").xpos, data.site("right_grip").xpos
    assert left[0] > 0.1 and right[0] > 0.1  # forward of the base centre
    assert left[1] > 0 > right[1]  # left arm on the robot's left
