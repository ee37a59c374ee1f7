"""URDF import: the pure transforms, then the whole `teledora model import` on the
vendor AlohaMini2 URDF (which lacks half its meshes)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from teledora.operators.model.urdf_import import (
    CAMERA_HOUSING_GROUP,
    ImportReport,
    MeshFormatError,
    UrdfImportError,
    add_cameras,
    add_floor,
    add_mujoco_options,
    bound_inertials,
    decimate,
    equivalent_box,
    mesh_key,
    parse_urdf,
    read_stl,
    relocate_meshdir,
    resolve_meshes,
    write_stl,
)

REFERENCE = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "alohamini2"
URDF = """
<robot name="r">
  <link name="base">
    <inertial><mass value="0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://pkg/meshes/Base.STL"/></geometry></visual>
  </link>
  <link name="arm">
    <inertial><mass value="2"/><inertia ixx="{ixx}" iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="pkg/arm.STL"/></geometry><material name=""><color rgba="1 1 1 1"/></material></visual>
    <collision><geometry><mesh filename="pkg/arm.STL"/></geometry></collision>
  </link>
  <link name="cam">
    <inertial><mass value="-1"/><inertia ixx="1e-5" iyy="1e-5" izz="1e-5" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
</robot>
"""
# a 0.1 x 0.2 x 0.3 m uniform box of 2 kg
BOX = dict(ixx=2 / 12 * (0.2**2 + 0.3**2), iyy=2 / 12 * (0.1**2 + 0.3**2), izz=2 / 12 * (0.1**2 + 0.2**2))


def urdf() -> ET.Element:
    return parse_urdf(URDF.format(**BOX))


def test_equivalent_box_recovers_a_box_from_its_inertia():
    assert equivalent_box(2.0, BOX["ixx"], BOX["iyy"], BOX["izz"]) == pytest.approx((0.1, 0.2, 0.3))
    assert equivalent_box(0.0, 0, 0, 0) == (0.02, 0.02, 0.02)
    assert max(equivalent_box(10.0, 10.0, 10.0, 10.0)) == 0.5  # placeholder inertia is clipped


def test_not_a_urdf_is_refused():
    with pytest.raises(UrdfImportError, match="expected <robot>"):
        parse_urdf("<mujoco/>")
    with pytest.raises(UrdfImportError, match="not valid XML"):
        parse_urdf("<robot>")


def test_package_and_broken_relative_paths_resolve_by_file_name():
    root, report = urdf(), ImportReport()
    resolve_meshes(root, {"base.stl": "Base.STL", "arm.stl": "arm.STL"}, report)
    files = [m.get("filename") for m in root.iter("mesh")]
    assert files == ["Base.STL", "arm.STL", "arm.STL"]
    assert report.resolved == {"package://pkg/meshes/Base.STL": "Base.STL", "pkg/arm.STL": "arm.STL"}
    assert report.missing == []
    assert mesh_key("package://a/b\\C.Stl") == "c.stl"


def test_missing_mesh_becomes_an_inertia_sized_box_and_is_reported():
    root, report = urdf(), ImportReport()
    resolve_meshes(root, {"base.stl": "Base.STL"}, report)
    arm = next(link for link in root.iter("link") if link.get("name") == "arm")
    sizes = [tuple(map(float, b.get("size").split())) for b in arm.iter("box")]
    assert len(sizes) == 2 and sizes[0] == pytest.approx((0.1, 0.2, 0.3), abs=1e-4)
    assert not list(arm.iter("mesh"))
    assert [(m.link, m.filename) for m in report.missing] == [("arm", "pkg/arm.STL")]
    assert "MISSING mesh pkg/arm.STL" in "\n".join(report.lines())


def test_zero_and_negative_masses_and_inertias_are_bounded_and_reported():
    root, report = urdf(), ImportReport()
    bound_inertials(root, report, min_mass_kg=1e-3, min_inertia_kg_m2=1e-6)
    masses = {link.get("name"): float(link.find("inertial/mass").get("value")) for link in root.iter("link")}
    assert masses == {"base": 1e-3, "arm": 2.0, "cam": 1e-3}
    base_inertia = root.find("link/inertial/inertia")
    assert float(base_inertia.get("ixx")) == 1e-6
    text = "\n".join(report.inertial_fixes)
    assert "link base: mass 0 kg raised" in text and "link cam: mass -1 kg raised" in text
    assert "arm" not in text


def test_placeholder_masses_can_be_capped_with_inertia_scaled():
    root, report = urdf(), ImportReport()
    bound_inertials(root, report, max_mass_kg=0.5)
    arm = next(link for link in root.iter("link") if link.get("name") == "arm")
    assert float(arm.find("inertial/mass").get("value")) == 0.5
    assert float(arm.find("inertial/inertia").get("ixx")) == pytest.approx(BOX["ixx"] / 4)


def test_mujoco_options_keep_fixed_links_and_visuals():
    root = urdf()
    add_mujoco_options(root, "/meshes")
    compiler = root.find("mujoco/compiler")
    assert compiler.get("fusestatic") == "false" and compiler.get("discardvisual") == "false"
    assert compiler.get("meshdir") == "/meshes"


MJCF = '<mujoco><compiler meshdir="/abs/x"/><worldbody><body name="cam_body"><geom size="0.01"/></body></worldbody></mujoco>'


def test_cameras_go_into_their_bodies_and_the_case_is_hidden_from_them():
    report = ImportReport()
    text = add_cameras(MJCF, {"cam_body": "chest"}, 65.0, report)
    body = ET.fromstring(text).find(".//body[@name='cam_body']")
    cam = body.find("camera")
    assert cam.get("name") == "chest" and cam.get("fovy") == "65" and cam.get("quat") == "0 1 0 0"
    assert body.find("geom").get("group") == str(CAMERA_HOUSING_GROUP)
    assert report.cameras == {"cam_body": "chest"}
    with pytest.raises(UrdfImportError, match="camera bodies"):
        add_cameras(MJCF, {"no_such_body": "chest"}, 65.0, report)
    assert ET.fromstring(relocate_meshdir(text, "m")).find("compiler").get("meshdir") == "m"
    assert ET.fromstring(add_floor(text)).find("worldbody/geom").get("type") == "plane"


def _sphere(n: int = 40) -> np.ndarray:
    th, ph = np.meshgrid(np.linspace(0, np.pi, n), np.linspace(0, 2 * np.pi, n), indexing="ij")
    pts = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1) * 0.1
    tris = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = pts[i, j], pts[i + 1, j], pts[i + 1, j + 1], pts[i, j + 1]
            tris += [(a, b, c), (a, c, d)]
    return np.asarray(tris)


def test_stl_round_trips_binary_and_reads_ascii():
    tris = _sphere(8)
    back = read_stl(write_stl(tris))
    assert back.shape == tris.shape and np.allclose(back, tris, atol=1e-6)
    ascii_stl = "solid t\n facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n   vertex 1 0 0\n   vertex 0 1 0\n  endloop\n endfacet\nendsolid t\n"
    assert read_stl(ascii_stl.encode()).shape == (1, 3, 3)
    with pytest.raises(MeshFormatError):
        read_stl(b"\x00" * 90)


def test_decimation_cuts_triangles_and_keeps_the_shape():
    tris = _sphere(40)
    small = decimate(tris, 0.03)
    assert 0 < len(small) < len(tris) / 4
    assert np.allclose(small.reshape(-1, 3).max(axis=0), 0.1, atol=0.03)
    assert np.allclose(small.reshape(-1, 3).min(axis=0), -0.1, atol=0.03)
    assert len(decimate(tris + 0.5, 1.0)) == 0  # everything in one cell collapses
    with pytest.raises(ValueError):
        decimate(tris, 0.0)


# --------------------------------------------------------------------- the vendor URDF

needs_reference = pytest.mark.skipif(
    not (REFERENCE / "urdf" / "alohamini2.urdf").exists(),
    reason=f"vendor AlohaMini2 URDF not found at {REFERENCE} (reference data is not part of the project)",
)


@pytest.fixture(scope="module")
def imported_run(tmp_path_factory) -> tuple[Path, str]:
    import contextlib
    import io

    from teledora.cli import main

    out = tmp_path_factory.mktemp("import") / "am2.xml"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["model", "import", str(REFERENCE / "urdf" / "alohamini2.urdf"), "-o", str(out), "--decimate", "0.004"])
    assert code == 0
    return out, printed.getvalue()


@pytest.fixture()
def imported(imported_run) -> Path:
    return imported_run[0]


@needs_reference
def test_vendor_urdf_imports_with_every_missing_mesh_named(imported):
    import mujoco

    from teledora import models
    model = mujoco.MjModel.from_xml_path(str(imported))
    profile = models.load_profile()
    joints = {model.joint(i).name for i in range(model.njnt)}
    assert set(profile.arm_joint_names) | {"vertical_move"} <= joints
    assert {model.camera(i).name for i in range(model.ncam)} == {"chest", "top_front", "top_back", "left_wrist", "right_wrist"}
    for body in ("chest_camera", "front_camera", "back_camera", "left_camera", "right_camera"):
        assert model.body(body).id > 0  # fixed camera links stayed bodies
    assert model.body_mass[1:].min() >= 1e-3 - 1e-12  # body 0 is the world
    assert model.nmesh == 13
    assert (imported.parent / "am2_meshes" / "base_link.STL").exists()
    assert 'meshdir="am2_meshes"' in imported.read_text()


@needs_reference
def test_vendor_urdf_report_lists_the_thirteen_missing_meshes(imported_run):
    out = imported_run[1]
    missing = [line for line in out.splitlines() if line.startswith("MISSING mesh")]
    assert len(missing) == 13
    for link in ("Link2_dp", "left_Base", "right_Upper_Arm", "left_wrist_yaw"):
        assert any(f"(link {link})" in line for line in missing), link
    assert "alohamini2_urdf/left_Base.STL" in out  # the broken relative path is named as written
    assert "link root: mass 0 kg raised" in out
    assert "decimated base_link.STL: 80699 -> " in out


@needs_reference
def test_imported_cameras_sit_where_the_project_model_puts_them(imported):
    """FK parity at the zero pose: the project's model hangs the URDF below a
    +90 deg yaw (URDF forward is -y); camera positions must agree."""
    import mujoco

    from teledora import models
    ours = mujoco.MjModel.from_xml_path(str(models.path("alohamini2/alohamini2.xml")))
    theirs = mujoco.MjModel.from_xml_path(str(imported))
    d_ours, d_theirs = mujoco.MjData(ours), mujoco.MjData(theirs)
    mujoco.mj_forward(ours, d_ours)
    mujoco.mj_forward(theirs, d_theirs)
    rz90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    for cam in ("chest", "top_front", "top_back", "left_wrist", "right_wrist"):
        a = d_ours.cam_xpos[ours.camera(cam).id]
        b = rz90 @ d_theirs.cam_xpos[theirs.camera(cam).id]
        assert np.allclose(a, b, atol=2e-3), (cam, a, b)
