"""URDF -> MJCF conversion with the file work around the pure transforms of
operators/model/urdf_import.py: finding a URDF's meshes by file name
(``package://`` or broken relative paths alike), copying or decimating them next
to the output, and letting MuJoCo compile the result. Used by
`teledora model import` and by the renderer when it is given a URDF.
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from teledora.operators.model.urdf_import import (
    ImportReport,
    UrdfImportError,
    add_cameras,
    add_floor,
    add_mujoco_options,
    bound_inertials,
    decimate,
    mesh_key,
    parse_urdf,
    read_stl,
    relocate_meshdir,
    resolve_meshes,
    write_stl,
)

MESH_SUFFIXES = (".stl", ".obj", ".msh")
DEFAULT_CAMERAS = {
    "chest_camera": "chest",
    "front_camera": "top_front",
    "back_camera": "top_back",
    "left_camera": "left_wrist",
    "right_camera": "right_wrist",
}


def find_meshes(search_dirs: list[Path], max_depth: int = 3) -> dict[str, Path]:
    """Mesh file name (lower case) -> first file found under the search folders."""
    found: dict[str, Path] = {}
    for top in search_dirs:
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            depth = len(Path(dirpath).relative_to(top).parts)
            if depth >= max_depth:
                dirnames[:] = []
            for name in sorted(filenames):
                if name.lower().endswith(MESH_SUFFIXES):
                    found.setdefault(name.lower(), Path(dirpath) / name)
    return found


@dataclass(frozen=True)
class ImportOptions:
    """What `teledora model import` does beyond the defaults."""

    mesh_dirs: tuple[Path, ...] = ()
    decimate_cell_m: float | None = None
    cameras: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_CAMERAS))
    fovy_deg: float = 65.0
    floor: bool = True
    min_mass_kg: float = 1e-3
    min_inertia_kg_m2: float = 1e-6
    max_link_mass_kg: float | None = None


def convert_urdf(urdf_path: Path, out_path: Path, options: ImportOptions) -> ImportReport:
    """Converts ``urdf_path`` into ``out_path`` (MJCF) and ``<out stem>_meshes/``.

    Raises:
        UrdfImportError: unreadable URDF, MuJoCo refused it, or a camera body is absent.
    """
    import mujoco

    urdf_path, out_path = Path(urdf_path).resolve(), Path(out_path).resolve()
    mesh_out = out_path.parent / f"{out_path.stem}_meshes"
    try:
        root = parse_urdf(urdf_path.read_text())
    except OSError as exc:
        raise UrdfImportError(f"{urdf_path}: {exc}") from None
    search = [Path(d).resolve() for d in options.mesh_dirs] + [urdf_path.parent, urdf_path.parent.parent]
    sources = find_meshes(search)
    report = ImportReport()
    resolve_meshes(root, {key: path.name for key, path in sources.items()}, report)
    bound_inertials(root, report, options.min_mass_kg, options.min_inertia_kg_m2, options.max_link_mass_kg)
    mesh_out.mkdir(parents=True, exist_ok=True)
    for name in sorted(set(report.resolved.values())):
        data = sources[mesh_key(name)].read_bytes()
        if options.decimate_cell_m and name.lower().endswith(".stl"):
            tris = read_stl(data)
            small = decimate(tris, options.decimate_cell_m)
            report.decimated[name] = (len(tris), len(small))
            data = write_stl(small)
        (mesh_out / name).write_bytes(data)
    add_mujoco_options(root, str(mesh_out))
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / urdf_path.name
        staged.write_text(ET.tostring(root, encoding="unicode"))
        try:
            model = mujoco.MjModel.from_xml_path(str(staged))
        except ValueError as exc:
            raise UrdfImportError(f"MuJoCo refused the cleaned URDF: {exc}") from None
        compiled = Path(tmp) / "compiled.xml"
        mujoco.mj_saveLastXML(str(compiled), model)
        text = compiled.read_text()
    text = add_cameras(text, options.cameras, options.fovy_deg, report)
    if options.floor:
        text = add_floor(text)
    out_path.write_text(relocate_meshdir(text, mesh_out.name) + "\n")
    return report
