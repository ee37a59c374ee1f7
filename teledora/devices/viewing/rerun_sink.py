"""Logs view items (teledora.operators.viewing.view_mapping) to a Rerun recording.

Rerun (``rerun-sdk``) is an optional dependency (``pip install -e '.[view]'``);
:func:`require_rerun` explains how to install it when it is missing. Every item
goes on the ``stamp`` timeline at its message's stamp (robot time, ns).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.viewing import view_mapping as vm

TIMELINE = "stamp"
INSTALL_HINT = ("the Rerun viewer is not installed: run `pip install -e '.[view]'` "
                "(or `pip install 'rerun-sdk>=0.41,<0.42'`) in this environment")
_LEVELS = {"ok": "INFO", "warn": "WARN", "error": "ERROR"}


class ViewerUnavailable(TeledoraError, RuntimeError):
    """rerun-sdk is not installed, or its viewer cannot be started."""


def require_rerun() -> Any:
    """The ``rerun`` module; raises :class:`ViewerUnavailable` with the install command when absent."""
    try:
        import rerun
    except ImportError as exc:
        raise ViewerUnavailable(INSTALL_HINT) from exc
    return rerun


def has_display(env: dict[str, str] | os._Environ = os.environ) -> bool:
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def viewer_binary() -> str | None:
    """The ``rerun`` viewer executable that comes with rerun-sdk (next to this Python), or on PATH."""
    local = Path(sys.executable).parent / "rerun"
    return str(local) if local.exists() else shutil.which("rerun")


class RerunSink:
    """One Rerun recording stream and the conversion of view items to archetypes.

    Args:
        application_id: Rerun application id (groups recordings in the viewer).
        recording_id: Optional recording id (a run's name).
    """

    def __init__(self, application_id: str = "teledora", recording_id: str | None = None) -> None:
        self.rr = require_rerun()
        self.stream = self.rr.RecordingStream(application_id, recording_id=recording_id)
        self.items_logged = 0
        self._named: set[str] = set()

    # -------------------------------------------------------------- sinks

    def save(self, path: str | os.PathLike[str]) -> None:
        """Streams everything into an .rrd file."""
        self.stream.save(str(path))

    def spawn(self, memory_limit: str = "25%") -> None:
        """Starts a native viewer and streams to it."""
        self.stream.spawn(memory_limit=memory_limit)

    def serve(self, grpc_port: int, web_port: int) -> str:
        """Serves the web viewer; returns the page's address."""
        url = self.stream.serve_grpc(grpc_port=grpc_port)
        self.rr.serve_web_viewer(web_port=web_port, open_browser=False, connect_to=url)
        return f"http://localhost:{web_port}/?url={url}"

    def close(self) -> None:
        self.stream.flush()
        self.stream.disconnect()

    # -------------------------------------------------------------- logging

    def default_blueprint(self) -> Any:
        """The layout a viewer opens with: the 3D scene large, cameras and plots beside it."""
        rrb = self.rr.blueprint
        return rrb.Blueprint(
            rrb.Horizontal(
                rrb.Spatial3DView(origin="world", name="robot, scans, trajectories",
                                  eye_controls=rrb.EyeControls3D(position=[-1.6, -1.6, 1.5], look_target=[0.0, 0.0, 0.5],
                                                                 eye_up=[0.0, 0.0, 1.0],
                                                                 tracking_entity="world/robot/base_link")),
                rrb.Vertical(
                    rrb.Horizontal(rrb.Spatial2DView(origin="cameras/chest", name="chest"),
                                   rrb.Spatial2DView(origin="cameras/top_front", name="top_front")),
                    rrb.TimeSeriesView(origin="plots/joints", name="joints"),
                    rrb.Horizontal(rrb.TimeSeriesView(origin="plots/base", name="base"),
                                   rrb.TimeSeriesView(origin="plots/lift", name="lift")),
                    rrb.Tabs(rrb.TimeSeriesView(origin="plots/diagnostics", name="diagnostics levels"),
                             rrb.TextLogView(origin="diagnostics", name="diagnostics")),
                ),
                column_shares=[3, 2],
            ),
            collapse_panels=False,
        )

    def log_static(self, items: Iterable[vm.ViewItem]) -> None:
        self.stream.send_blueprint(self.default_blueprint())
        self.stream.log("world", self.rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
        for item in items:
            self._log(item, static=True)

    def log(self, stamp_ns: int, items: Iterable[vm.ViewItem]) -> None:
        first = True
        for item in items:
            if first:
                self.stream.set_time(TIMELINE, timestamp=np.datetime64(int(stamp_ns), "ns"))
                first = False
            self._log(item, static=False)

    def _log(self, item: vm.ViewItem, static: bool) -> None:
        rr, s = self.rr, self.stream
        if isinstance(item, vm.Transform):
            s.log(item.path, rr.Transform3D(translation=item.translation, quaternion=rr.Quaternion(xyzw=item.quaternion_xyzw)),
                  static=static)
        elif isinstance(item, vm.Points):
            s.log(item.path, rr.Points3D(item.positions, radii=item.radius_m, colors=[item.color]), static=static)
        elif isinstance(item, vm.LineStrip):
            s.log(item.path, rr.LineStrips3D([item.points], colors=[item.color], radii=0.01), static=static)
        elif isinstance(item, vm.Scalar):
            s.log(item.path, rr.Scalars(item.value), static=static)
        elif isinstance(item, vm.Series):
            if item.path not in self._named:
                s.log(item.path, rr.SeriesLines(names=list(item.names)), static=True)
                self._named.add(item.path)
            s.log(item.path, rr.Scalars(item.values), static=static)
        elif isinstance(item, vm.Image):
            mode = {"rgb8": "RGB", "bgr8": "BGR", "mono8": "L"}.get(item.encoding, "RGB")
            s.log(item.path, rr.Image(item.pixels, color_model=mode), static=static)
        elif isinstance(item, vm.EncodedImage):  # the camera's JPEG as recorded: Rerun decodes it
            s.log(item.path, rr.EncodedImage(contents=item.data, media_type=item.media_type), static=static)
        elif isinstance(item, vm.Text):
            s.log(item.path, rr.TextLog(item.text, level=_LEVELS.get(item.level, "ERROR")), static=static)
        elif isinstance(item, vm.ShapeItem):
            self._log_shape(item, static)
        else:  # pragma: no cover - the union is closed
            raise TypeError(f"not a view item: {item!r}")
        self.items_logged += 1

    def _log_shape(self, item: vm.ShapeItem, static: bool) -> None:
        rr, shape = self.rr, item.shape
        pose = dict(centers=[shape.position], quaternions=[rr.Quaternion(xyzw=shape.quaternion_xyzw)])
        rgba = np.clip(np.round(shape.rgba * 255), 0, 255).astype(np.uint8)
        color = dict(colors=[rgba])
        size = shape.size
        if shape.kind == "box":
            arch = rr.Boxes3D(half_sizes=[size[:3]], fill_mode="solid", **pose, **color)
        elif shape.kind in ("sphere", "ellipsoid"):
            radii = [size[0]] * 3 if shape.kind == "sphere" else size[:3]
            arch = rr.Ellipsoids3D(half_sizes=[radii], fill_mode="solid", **pose, **color)
        elif shape.kind == "capsule":
            # Rerun's capsule runs along +z from its origin; MuJoCo's is centred on it
            arch = rr.Capsules3D(lengths=[2 * size[1]], radii=[size[0]], **color,
                                 translations=[shape.position + _rotate(shape.quaternion_xyzw, [0, 0, -size[1]])],
                                 quaternions=[rr.Quaternion(xyzw=shape.quaternion_xyzw)])
        elif shape.kind == "cylinder":
            arch = rr.Cylinders3D(lengths=[2 * size[1]], radii=[size[0]], fill_mode="solid", **pose, **color)
        elif shape.kind == "mesh":
            s = self.stream
            s.log(item.path, rr.Transform3D(translation=shape.position, quaternion=rr.Quaternion(xyzw=shape.quaternion_xyzw)),
                  static=static)
            arch = rr.Mesh3D(vertex_positions=shape.vertices, triangle_indices=shape.faces, albedo_factor=rgba)
        else:  # pragma: no cover
            raise TypeError(f"unknown shape kind {shape.kind!r}")
        self.stream.log(item.path, arch, static=static)


def _rotate(q_xyzw, v) -> np.ndarray:
    x, y, z, w = q_xyzw
    u = np.array([x, y, z])
    v = np.asarray(v, dtype=float)
    return v + 2 * np.cross(u, np.cross(u, v) + w * v)


def open_viewer(rrd: Path, env: dict[str, str] | os._Environ = os.environ) -> str:
    """Opens ``rrd`` in the native viewer when a display exists (returns
    ``"spawned"``), else returns how to look at it."""
    exe = viewer_binary()
    if exe and has_display(env):
        subprocess.Popen([exe, str(rrd)], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return "spawned"
    cmd = exe or "rerun"
    return (f"no display: open it with `{cmd} {rrd}` on a machine with one, or serve it to a browser with"
            f" `{cmd} --web-viewer {rrd}`")


def log_message(mapper: vm.ViewMapper, sink: "RerunSink", topic: str, value: Any, metadata: dict[str, Any],
                fallback_ns: int) -> str:
    """One received or recorded message through the mapping into the sink, as
    the viewer node and `teledora view` both handle it: ``"shown"``,
    ``"skipped"`` (decimated or not a shown kind, and then not even decoded)
    or ``"invalid"`` (breaks the contract). A message without a stamp goes on
    the timeline at ``fallback_ns``.

    Raises nothing for bad input; :class:`MessageError` is turned into ``"invalid"``."""
    from teledora.operators.contract.messages import MessageError

    kind = vm.kind_of(value.type, metadata)
    if not mapper.wants(topic, kind, vm.peek_stamp(value, metadata)):
        mapper.skip(topic)
        return "skipped"
    try:
        kind, msg, stamp = vm.decode_for_view(value, metadata)
    except MessageError:
        return "invalid"
    stamp = stamp if stamp is not None else fallback_ns
    items = mapper.on_message(topic, kind, msg, stamp, metadata)
    sink.log(stamp, items)
    return "shown" if items else "skipped"
