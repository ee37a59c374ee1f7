"""`teledora model import URDF_PATH`: convert a vendor URDF and its meshes to MJCF.

Finds the URDF's meshes by file name (``package://`` or broken relative paths
alike) under the URDF's folder, its parent and any ``--mesh-dir``; copies them
(or decimates them, ``--decimate CELL_M``) next to the output; replaces missing
meshes with boxes sized from the link inertia; bounds zero or negative masses
and inertias; keeps fixed camera links as bodies and puts cameras in them; then
lets MuJoCo compile the result and writes the MJCF. Every change is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
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


def _camera_map(pairs: list[str] | None) -> dict[str, str]:
    if not pairs:
        return dict(DEFAULT_CAMERAS)
    out = {}
    for pair in pairs:
        body, sep, camera = pair.partition("=")
        if not sep or not body or not camera:
            raise SystemExit(f"--camera expects BODY=NAME, got {pair!r}")
        out[body] = camera
    return out


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


def import_urdf(args: argparse.Namespace) -> int:
    import mujoco

    urdf_path = Path(args.urdf)
    out_path = Path(args.output or f"{urdf_path.stem}.xml").resolve()
    options = ImportOptions(
        mesh_dirs=tuple(Path(d) for d in args.mesh_dir or []),
        decimate_cell_m=args.decimate,
        cameras=_camera_map(args.camera),
        fovy_deg=args.fovy_deg,
        floor=args.floor,
        min_mass_kg=args.min_mass_kg,
        min_inertia_kg_m2=args.min_inertia_kg_m2,
        max_link_mass_kg=args.max_link_mass_kg,
    )
    try:
        report = convert_urdf(urdf_path, out_path, options)
    except UrdfImportError as exc:
        print(f"teledora model import: {exc}", file=sys.stderr)
        return 1
    final = mujoco.MjModel.from_xml_path(str(out_path))  # the written file must load as is
    for line in report.lines():
        print(line)
    print(
        f"wrote {out_path} ({final.nbody} bodies, {final.njnt} joints, {final.ncam} cameras, "
        f"{final.nmesh} meshes; {len(report.missing)} missing meshes replaced by boxes)"
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("model", help="robot model tools (URDF import)", description=__doc__)
    sub = parser.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="convert a URDF and its meshes to MJCF", description=__doc__)
    imp.add_argument("urdf", help="URDF file")
    imp.add_argument("-o", "--output", help="MJCF to write (default: <urdf name>.xml here); meshes go to <name>_meshes/")
    imp.add_argument("--mesh-dir", action="append", help="extra folder to look for meshes in (repeatable)")
    imp.add_argument("--decimate", type=float, metavar="CELL_M", help="merge STL vertices closer than CELL_M metres")
    imp.add_argument("--camera", action="append", metavar="BODY=NAME", help="camera bodies (default: AlohaMini2's five)")
    imp.add_argument("--fovy-deg", type=float, default=65.0, help="vertical field of view of the added cameras")
    imp.add_argument("--no-floor", dest="floor", action="store_false", help="do not add a ground plane and light")
    imp.add_argument("--min-mass-kg", type=float, default=1e-3)
    imp.add_argument("--min-inertia-kg-m2", type=float, default=1e-6)
    imp.add_argument("--max-link-mass-kg", type=float, default=None, help="cap placeholder masses above this")
    imp.set_defaults(func=import_urdf)
