"""Pure transforms that make a vendor URDF loadable by MuJoCo, and its MJCF usable.

Vendor URDFs (CAD exporters, hand edits) break MuJoCo's importer in familiar
ways. Each function here fixes one of them on an ``xml.etree`` tree or on
bytes, and reports what it changed, so a person can see the import's cost:

* mesh paths: ``package://pkg/dir/x.STL`` and broken relative paths are
  matched, by file name, against the meshes that actually exist
  (:func:`resolve_meshes`); a mesh that exists nowhere becomes a box sized
  from the link's inertia (:func:`equivalent_box`) and is listed as missing;
* zero or negative masses and inertias are raised to small bounds
  (:func:`bound_inertials`), and implausibly heavy links may be capped;
* MuJoCo options that keep fixed links (camera mounts) as bodies and keep
  visual meshes (:func:`add_mujoco_options`);
* after MuJoCo has compiled the URDF to MJCF, cameras go into the camera
  bodies (:func:`add_cameras`);
* optional mesh decimation by vertex clustering on STL triangles
  (:func:`read_stl`, :func:`decimate`, :func:`write_stl`).

File access (which meshes exist, reading and writing them) belongs to the
``teledora model import`` command.
"""

from __future__ import annotations

import posixpath
import struct
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from teledora.operators.errors import TeledoraError

MIN_BOX_SIDE_M = 0.01
MAX_BOX_SIDE_M = 0.5
FALLBACK_RGBA = "0.9 0.2 0.6 1"  # a loud colour: the shape is a stand-in
# Optical axis = camera body +z (the CAD convention); MuJoCo cameras look along -z.
CAMERA_QUAT_WXYZ = "0 1 0 0"
# Geoms of a camera's own housing go to this group, which the renderer's cameras
# do not draw (a camera does not see its own case); windows still show it.
CAMERA_HOUSING_GROUP = 2


class UrdfImportError(TeledoraError, ValueError):
    """The input is not a URDF (or not an MJCF) this importer can work on."""


class MeshFormatError(TeledoraError, ValueError):
    """Bytes that are not a readable STL mesh."""


@dataclass(frozen=True)
class MissingMesh:
    link: str
    filename: str
    fallback: str


@dataclass
class ImportReport:
    """Everything the import changed, for the person running it."""

    resolved: dict[str, str] = field(default_factory=dict)
    missing: list[MissingMesh] = field(default_factory=list)
    inertial_fixes: list[str] = field(default_factory=list)
    cameras: dict[str, str] = field(default_factory=dict)
    decimated: dict[str, tuple[int, int]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"mesh {src} -> {dst}" for src, dst in sorted(self.resolved.items())]
        out += [f"MISSING mesh {m.filename} (link {m.link}): replaced by {m.fallback}" for m in self.missing]
        out += [f"inertia: {fix}" for fix in self.inertial_fixes]
        out += [f"camera {cam} in body {body}" for body, cam in sorted(self.cameras.items())]
        out += [f"decimated {name}: {a} -> {b} triangles" for name, (a, b) in sorted(self.decimated.items())]
        return out


def parse_urdf(text: str) -> ET.Element:
    """The ``<robot>`` root of a URDF document.

    Raises:
        UrdfImportError: not XML, or the root is not ``<robot>``.
    """
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UrdfImportError(f"not valid XML: {exc}") from None
    if root.tag != "robot":
        raise UrdfImportError(f"root element is <{root.tag}>, expected <robot>")
    return root


def mesh_key(filename: str) -> str:
    """The name a mesh is matched by: its lower-cased file name, whatever the path."""
    return posixpath.basename(filename.replace("\\", "/")).lower()


def _inertia_diagonal(link: ET.Element) -> tuple[float, float, float, float] | None:
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass_el, inertia_el = inertial.find("mass"), inertial.find("inertia")
    try:
        mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
        diag = [float(inertia_el.get(k, "0")) if inertia_el is not None else 0.0 for k in ("ixx", "iyy", "izz")]
    except ValueError:
        return None
    return (mass, *diag)  # type: ignore[return-value]


def equivalent_box(mass_kg: float, ixx: float, iyy: float, izz: float) -> tuple[float, float, float]:
    """Full side lengths (m) of the uniform box with this mass and principal inertia,
    each clipped to [1 cm, 50 cm]; a 2 cm cube when the numbers describe no box."""
    if mass_kg <= 0:
        return (2 * MIN_BOX_SIDE_M,) * 3
    squares = (6.0 / mass_kg) * np.array([iyy + izz - ixx, ixx + izz - iyy, ixx + iyy - izz])
    sides = np.sqrt(np.clip(squares, 0.0, None))
    sides = np.clip(np.where(sides > 0, sides, 2 * MIN_BOX_SIDE_M), MIN_BOX_SIDE_M, MAX_BOX_SIDE_M)
    return tuple(float(s) for s in sides)  # type: ignore[return-value]


def resolve_meshes(root: ET.Element, available: Mapping[str, str], report: ImportReport) -> None:
    """Points every ``<mesh filename>`` at an existing mesh, or swaps it for a box.

    Args:
        root: URDF root, edited in place.
        available: :func:`mesh_key` of each mesh found -> the file name to write
            into the URDF (relative to the MJCF's meshdir).
        report: Collects resolved and missing meshes.
    """
    for link in root.iter("link"):
        for part in list(link.findall("visual")) + list(link.findall("collision")):
            geometry = part.find("geometry")
            mesh = geometry.find("mesh") if geometry is not None else None
            if mesh is None:
                continue
            original = mesh.get("filename", "")
            found = available.get(mesh_key(original))
            if found is not None:
                mesh.set("filename", found)
                report.resolved[original] = found
                continue
            inertia = _inertia_diagonal(link)
            size = equivalent_box(*inertia) if inertia else (2 * MIN_BOX_SIDE_M,) * 3
            geometry.remove(mesh)
            ET.SubElement(geometry, "box", size=" ".join(f"{s:.4f}" for s in size))
            if part.tag == "visual":
                material = part.find("material")
                if material is None:
                    material = ET.SubElement(part, "material", name="")
                for color in material.findall("color"):
                    material.remove(color)
                ET.SubElement(material, "color", rgba=FALLBACK_RGBA)
                desc = f"box {size[0]:.3f} x {size[1]:.3f} x {size[2]:.3f} m"
                report.missing.append(MissingMesh(link.get("name", "?"), original, desc))


def bound_inertials(
    root: ET.Element,
    report: ImportReport,
    min_mass_kg: float = 1e-3,
    min_inertia_kg_m2: float = 1e-6,
    max_mass_kg: float | None = None,
) -> None:
    """Raises masses and principal inertias below the bounds (and, with
    ``max_mass_kg``, caps heavier links, scaling their inertia with the mass)."""
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        name = link.get("name", "?")
        mass_el = inertial.find("mass")
        if mass_el is None:
            mass_el = ET.SubElement(inertial, "mass", value="0")
        mass = float(mass_el.get("value", "0"))
        scale = 1.0
        if mass < min_mass_kg:
            report.inertial_fixes.append(f"link {name}: mass {mass:g} kg raised to {min_mass_kg:g} kg")
            mass_el.set("value", repr(min_mass_kg))
        elif max_mass_kg is not None and mass > max_mass_kg:
            report.inertial_fixes.append(f"link {name}: mass {mass:g} kg capped at {max_mass_kg:g} kg")
            mass_el.set("value", repr(max_mass_kg))
            scale = max_mass_kg / mass
        inertia = inertial.find("inertia")
        if inertia is None:
            inertia = ET.SubElement(inertial, "inertia")
        for key in ("ixx", "iyy", "izz"):
            value = float(inertia.get(key, "0")) * scale
            if value < min_inertia_kg_m2:
                report.inertial_fixes.append(f"link {name}: {key} {value:g} raised to {min_inertia_kg_m2:g} kg m^2")
                value = min_inertia_kg_m2
            inertia.set(key, repr(value))
        for key in ("ixy", "ixz", "iyz"):
            inertia.set(key, repr(float(inertia.get(key, "0")) * scale))


def add_mujoco_options(root: ET.Element, meshdir: str) -> None:
    """Adds MuJoCo's URDF extension: keep fixed links as bodies and visual meshes,
    look meshes up in ``meshdir`` by the names :func:`resolve_meshes` wrote."""
    for old in root.findall("mujoco"):
        root.remove(old)
    ext = ET.Element("mujoco")
    ET.SubElement(
        ext,
        "compiler",
        meshdir=meshdir,
        strippath="false",
        fusestatic="false",
        discardvisual="false",
        balanceinertia="true",
    )
    root.insert(0, ext)


def add_cameras(mjcf_text: str, cameras: Mapping[str, str], fovy_deg: float, report: ImportReport) -> str:
    """Puts a camera named ``cameras[body]`` into each listed body of an MJCF.

    Raises:
        UrdfImportError: the text is not MJCF or a camera body is absent.
    """
    try:
        root = ET.fromstring(mjcf_text)
    except ET.ParseError as exc:
        raise UrdfImportError(f"compiled MJCF is not valid XML: {exc}") from None
    if root.tag != "mujoco":
        raise UrdfImportError(f"root element is <{root.tag}>, expected <mujoco>")
    bodies = {b.get("name"): b for b in root.iter("body")}
    absent = sorted(b for b in cameras if b not in bodies)
    if absent:
        raise UrdfImportError(f"camera bodies {absent} are not in the model (were fixed links fused?)")
    for body_name, camera in cameras.items():
        body = bodies[body_name]
        for old in body.findall("camera"):
            body.remove(old)
        ET.SubElement(body, "camera", name=camera, quat=CAMERA_QUAT_WXYZ, fovy=f"{fovy_deg:g}")
        for geom in body.findall("geom"):
            geom.set("group", str(CAMERA_HOUSING_GROUP))
        report.cameras[body_name] = camera
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")


# ----------------------------------------------------------------------------- meshes


def read_stl(data: bytes) -> np.ndarray:
    """Triangles (n, 3, 3) of a binary or ASCII STL file.

    Raises:
        MeshFormatError: neither a consistent binary STL nor ASCII facets.
    """
    if len(data) >= 84:
        (count,) = struct.unpack_from("<I", data, 80)
        if 84 + 50 * count == len(data):
            rec = np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
            return np.frombuffer(data, dtype=rec, count=count, offset=84)["v"].astype(np.float64)
    text = data.decode("ascii", errors="replace")
    if not text.lstrip().startswith("solid"):
        raise MeshFormatError("not a binary STL (size mismatch) and not ASCII STL")
    verts = [list(map(float, line.split()[1:4])) for line in text.splitlines() if line.strip().startswith("vertex")]
    if not verts or len(verts) % 3:
        raise MeshFormatError(f"ASCII STL with {len(verts)} vertices (not a multiple of 3)")
    return np.asarray(verts, dtype=np.float64).reshape(-1, 3, 3)


def write_stl(triangles: np.ndarray) -> bytes:
    """A binary STL of (n, 3, 3) triangles (normals computed)."""
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.divide(normals, lengths, out=np.zeros_like(normals), where=lengths > 0)
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    rec["n"], rec["v"] = normals, tris
    header = b"teledora decimated mesh".ljust(80, b" ")
    return header + struct.pack("<I", len(tris)) + rec.tobytes()


def decimate(triangles: np.ndarray, cell_m: float) -> np.ndarray:
    """Vertex clustering: vertices in one ``cell_m`` grid cell merge into their
    mean; triangles that collapse (two corners in one cell) or repeat are dropped.
    Coarse but robust, and enough for a preview render."""
    if cell_m <= 0:
        raise ValueError(f"cell_m must be positive, got {cell_m}")
    tris = np.asarray(triangles, dtype=np.float64).reshape(-1, 3, 3)
    if len(tris) == 0:
        return tris
    verts = tris.reshape(-1, 3)
    cells = np.floor(verts / cell_m).astype(np.int64)
    cells -= cells.min(axis=0)
    span = cells.max(axis=0) + 1
    keys = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]  # one integer per cell: fast 1-D unique
    _, cell_index, counts = np.unique(keys, return_inverse=True, return_counts=True)
    cell_index = cell_index.reshape(-1)
    centres = np.zeros((len(counts), 3))
    np.add.at(centres, cell_index, verts)
    centres /= counts[:, None]
    faces = cell_index.reshape(-1, 3)
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    faces = faces[keep]
    if len(faces) == 0:
        return np.zeros((0, 3, 3))
    canonical = np.sort(faces, axis=1)
    n = np.int64(len(counts))
    if n < 2_000_000:  # n**3 fits in int64
        _, first = np.unique((canonical[:, 0] * n + canonical[:, 1]) * n + canonical[:, 2], return_index=True)
    else:
        _, first = np.unique(canonical, axis=0, return_index=True)
    return centres[faces[np.sort(first)]]


def relocate_meshdir(mjcf_text: str, meshdir: str) -> str:
    """Sets ``<compiler meshdir>`` of an MJCF (MuJoCo saves the absolute folder it
    compiled from; the written file should name its mesh folder relatively)."""
    try:
        root = ET.fromstring(mjcf_text)
    except ET.ParseError as exc:
        raise UrdfImportError(f"MJCF is not valid XML: {exc}") from None
    compiler = root.find("compiler")
    if compiler is None:
        compiler = ET.Element("compiler")
        root.insert(0, compiler)
    compiler.set("meshdir", meshdir)
    return ET.tostring(root, encoding="unicode")


def add_floor(mjcf_text: str, size_m: float = 5.0) -> str:
    """Adds a checkered ground plane and a light above the origin to an MJCF
    (a compiled URDF has neither, and cameras would look into the void)."""
    root = ET.fromstring(mjcf_text)
    asset = root.find("asset")
    if asset is None:
        asset = ET.Element("asset")
        root.insert(1, asset)
    ET.SubElement(asset, "texture", name="import_floor_tex", type="2d", builtin="checker",
                  rgb1="0.55 0.5 0.45", rgb2="0.35 0.32 0.3", width="256", height="256")
    ET.SubElement(asset, "material", name="import_floor_mat", texture="import_floor_tex", texrepeat="10 10")
    world = root.find("worldbody")
    if world is None:
        raise UrdfImportError("MJCF has no <worldbody>")
    world.insert(0, ET.Element("light", name="import_light", pos="0 0 3", dir="0 0 -1", diffuse="0.7 0.7 0.7"))
    world.insert(0, ET.Element("geom", name="import_floor", type="plane", size=f"{size_m:g} {size_m:g} 0.05",
                               material="import_floor_mat"))
    return ET.tostring(root, encoding="unicode")
