"""Optical flow from images: a textured floor seen by a downward camera, and the flow it gives.

This exercises the image path of a real flow sensor (PMW3901-class: a small
camera looking straight down) instead of computing flow from the twist:

* :class:`FloorCamera` renders what the sensor sees at a pose over a tiled,
  seeded random floor texture (pinhole camera, ``image_size_px`` square,
  ``fov_rad`` across);
* :func:`image_flow` measures the shift between two frames with phase
  correlation and turns it into flow rates in ArduPilot's convention.

Image axes: columns (u) run along the sensor's right (FRD +y), rows (v) towards
its back (FRD −x), so driving forward moves the floor down the image. With ``f``
the focal length in pixels, a floor shift of ``(du, dv)`` pixels in ``dt`` is
``flow_x = du / (f dt)`` and ``flow_y = dv / (f dt)`` — ArduPilot's
``−v_y/h`` and ``v_x/h`` (FRD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import lerp_planar


def _cv2():
    """OpenCV, imported on first use: estimation.yaml's settings (this module's
    config classes) are read by nodes that never render the floor (the EKF, the
    flow node with the image path off), and OpenCV costs each of them ~15 MB."""
    import cv2

    return cv2


class FloorImageError(TeledoraError, ValueError):
    """Bad camera/texture settings or frames that cannot be compared."""


@dataclass(frozen=True)
class FloorCameraConfig:
    """Downward camera and floor texture.

    Args:
        image_size_px: Square image side.
        fov_rad: Field of view across the image.
        texture_size_px: Side of the square texture tile (it repeats).
        texture_resolution_m: Floor size of one texture pixel.
        texture_blur_px: Gaussian blur of the random texture (feature size).
        seed: Texture seed.
    """

    image_size_px: int
    fov_rad: float
    texture_size_px: int
    texture_resolution_m: float
    texture_blur_px: float
    seed: int

    def __post_init__(self) -> None:
        if self.image_size_px < 8 or not 0.05 < self.fov_rad < 2.5:
            raise FloorImageError("need image_size_px >= 8 and 0.05 < fov_rad < 2.5")
        if self.texture_size_px < 64 or not self.texture_resolution_m > 0:
            raise FloorImageError("need texture_size_px >= 64 and texture_resolution_m > 0")

    @property
    def focal_px(self) -> float:
        return 0.5 * self.image_size_px / math.tan(0.5 * self.fov_rad)


class FloorCamera:
    """Renders the floor under a downward camera.

    Args:
        config: Camera and texture settings.
    """

    def __init__(self, config: FloorCameraConfig) -> None:
        self.config = config
        rng = np.random.default_rng(config.seed)
        n = config.texture_size_px
        noise = rng.random((n, n)).astype(np.float32)
        cv2 = _cv2()
        pad = int(math.ceil(4 * config.texture_blur_px)) + 1  # blur a wrapped copy so the tile stays seamless
        tex = cv2.GaussianBlur(np.pad(noise, pad, mode="wrap"), (0, 0), config.texture_blur_px)[pad:-pad, pad:-pad]
        tex = (tex - tex.min()) / max(1e-6, float(tex.max() - tex.min()))
        self.texture = tex.astype(np.float32)
        c = 0.5 * (config.image_size_px - 1)
        v, u = np.mgrid[0 : config.image_size_px, 0 : config.image_size_px].astype(np.float64)
        self._u, self._v, self._c = u - c, v - c, c

    def render(self, x_m: float, y_m: float, yaw_rad: float, height_m: float) -> np.ndarray:
        """Float32 image seen from a sensor at world (x, y), yaw, ``height_m`` above the floor."""
        if not height_m > 0:
            raise FloorImageError(f"height_m must be > 0, got {height_m}")
        cfg = self.config
        scale = height_m / cfg.focal_px
        fwd = -self._v * scale  # FRD +x (forward) is up the image
        left = -self._u * scale  # FRD +y (right) is along +u; FLU y is its negative
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        wx = x_m + c * fwd - s * left
        wy = y_m + s * fwd + c * left
        n = cfg.texture_size_px
        map_x = np.mod(wx / cfg.texture_resolution_m, n).astype(np.float32)
        map_y = np.mod(wy / cfg.texture_resolution_m, n).astype(np.float32)
        cv2 = _cv2()
        return cv2.remap(self.texture, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)


def image_flow(previous: np.ndarray, current: np.ndarray, dt_s: float, focal_px: float) -> tuple[float, float, float]:
    """Flow rates (rad/s, ArduPilot convention, sensor axes) between two frames, and the
    phase-correlation peak response (0..1) as a quality measure."""
    if previous.shape != current.shape or previous.ndim != 2:
        raise FloorImageError(f"frames must be equal 2-D arrays, got {previous.shape} and {current.shape}")
    if not dt_s > 0:
        raise FloorImageError(f"dt_s must be > 0, got {dt_s}")
    cv2 = _cv2()
    window = cv2.createHanningWindow(previous.shape[::-1], cv2.CV_32F)
    (du, dv), response = cv2.phaseCorrelate(previous.astype(np.float32), current.astype(np.float32), window)
    return du / (focal_px * dt_s), dv / (focal_px * dt_s), float(response)


Pose2 = tuple[float, float, float]  # x m, y m, yaw rad


def pose_at(t_ns: int, before: tuple[int, Pose2], after: tuple[int, Pose2] | None) -> Pose2:
    """The base's pose at ``t_ns``, linear between two stamped poses (yaw the short way
    round); ``before``'s pose when there is no later one or ``t_ns`` is not past it."""
    t0, (x0, y0, yaw0) = before
    if after is None or t_ns <= t0:
        return x0, y0, yaw0
    t1, pose1 = after
    if t1 <= t0:
        return pose1
    return lerp_planar((x0, y0, yaw0), pose1, min(1.0, (t_ns - t0) / (t1 - t0)))


class ImageFlowSensor:
    """A flow sensor that renders the floor at each report and measures the shift from the
    previous frame.

    Args:
        camera: The floor renderer.
        offset_m: Sensor position in base_link (FLU); its z is the height above the floor.
        orient_yaw_rad: Yaw of the sensor's axes from the body's, as FLOW_ORIENT_YAW (positive:
            the sensor's x axis points to the right of the body's x axis).
    """

    def __init__(self, camera: FloorCamera, offset_m: tuple[float, float, float], orient_yaw_rad: float = 0.0):
        self.camera = camera
        self.offset_m = tuple(float(v) for v in offset_m)
        self.orient_yaw_rad = float(orient_yaw_rad)
        self._previous: np.ndarray | None = None
        self._previous_ns: int | None = None

    def read(self, stamp_ns: int, x_m: float, y_m: float, yaw_rad: float) -> tuple[float, float, int, float] | None:
        """(flow_x, flow_y, quality 0-255, integration time s) for the base at this pose; None for
        the first frame (nothing to compare with) or a repeated stamp."""
        rx, ry, h = self.offset_m
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        # orient_yaw_rad is FLOW_ORIENT_YAW: positive turns the sensor's x axis to the right of the
        # body's (clockwise seen from above), so in the counter-clockwise world yaw it subtracts
        frame = self.camera.render(x_m + c * rx - s * ry, y_m + s * rx + c * ry, yaw_rad - self.orient_yaw_rad, h)
        previous, previous_ns = self._previous, self._previous_ns
        if previous_ns is not None and stamp_ns <= previous_ns:
            return None
        self._previous, self._previous_ns = frame, int(stamp_ns)
        if previous is None or previous_ns is None:
            return None
        dt = (stamp_ns - previous_ns) * 1e-9
        fx, fy, response = image_flow(previous, frame, dt, self.camera.config.focal_px)
        return fx, fy, int(max(0, min(255, round(255 * response)))), dt
