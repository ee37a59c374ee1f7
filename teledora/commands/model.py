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
import sys
from pathlib import Path

from teledora.models.urdf_conversion import DEFAULT_CAMERAS, ImportOptions, convert_urdf
from teledora.operators.model.urdf_import import UrdfImportError


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
