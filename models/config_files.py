"""The shipped config files and the one way to read a config file.

:func:`load_config` reads a YAML file (a name shipped under ``models/`` or a
path) and hands its mapping to a parser built on
:func:`teledora.operators.config.config_from_mapping`; any error it raises is
prefixed with the file name, so a message names the file, the section and the
key. Each ``load_*`` below is that call for one subsystem's file; nodes,
commands, benchmarks and tests read config only through them.

Each loader imports its subsystem's config classes when called, so a node
imports only the subsystems it configures.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import yaml
from teledora.models import MODELS_DIR
from teledora.operators.config import ConfigError

if TYPE_CHECKING:
    from teledora.operators.contract.topic_rates import RateTable
    from teledora.operators.dataflow.node_scheduling import SchedulingConfig
    from teledora.operators.drive.drive_config import DriveConfig
    from teledora.operators.drive.servo_calibration import CalibrationFile
    from teledora.operators.estimation.estimation_config import EstimationConfig
    from teledora.operators.ik.ik_config import IkConfig
    from teledora.operators.lidar.lidar_config import LidarSetup
    from teledora.operators.mocap.mocap_config import MocapConfig
    from teledora.operators.model.robot_profile import RobotProfile
    from teledora.operators.recording.recording_config import RecordingConfig
    from teledora.operators.rendering.camera_intrinsics import RendererConfig
    from teledora.operators.cameras.camera_config import CamerasConfig
    from teledora.operators.teleop.teleop_scheme import TeleopConfig
    from teledora.operators.viewing.viewer_config import ViewerConfig
    from teledora.operators.sim.pick_place_layout import PickPlaceConfig
    from teledora.operators.xr.scripted_operator import OperatorScript

T = TypeVar("T")
PathLike = str | os.PathLike[str]

PROFILE = "alohamini2/profile.yaml"
DRIVE = "alohamini2/drive.yaml"
CALIBRATION = "alohamini2/calibration.yaml"
IK = "alohamini2/ik.yaml"
TELEOP = "alohamini2/teleop.yaml"
LIDAR = "alohamini2/lidar.yaml"
ESTIMATION = "alohamini2/estimation.yaml"
MOCAP = "alohamini2/mocap.yaml"
RENDERER = "alohamini2/renderer.yaml"
CAMERAS = "alohamini2/cameras.yaml"
DEMO_SCRIPT = "alohamini2/demo_script.yaml"
PICK_PLACE_SCRIPT = "alohamini2/pick_place_script.yaml"
PICK_PLACE_RANDOM = "alohamini2/pick_place_random.yaml"
RATES = "alohamini2/rates.yaml"
VIEWER = "alohamini2/viewer.yaml"
SCHEDULING = "alohamini2/scheduling.yaml"
RECORDING = "alohamini2/recording.yaml"

# Every shipped config file (tests check that each of their keys is read).
SHIPPED = (PROFILE, DRIVE, CALIBRATION, IK, TELEOP, LIDAR, ESTIMATION, MOCAP, RENDERER, CAMERAS, DEMO_SCRIPT, PICK_PLACE_SCRIPT, RATES,
           VIEWER, PICK_PLACE_RANDOM, SCHEDULING, RECORDING)


def read_config_file(name_or_path: PathLike) -> tuple[str, Mapping[str, Any]]:
    """The mapping in a YAML file: ``name_or_path`` is an existing file, or a
    name shipped under ``models/`` (``"alohamini2/drive.yaml"``).

    Returns:
        (the name errors should show, the top-level mapping).

    Raises:
        FileNotFoundError: neither a file nor a shipped name.
        ConfigError: the file does not hold a mapping.
    """
    p = Path(name_or_path)
    if not p.is_file():
        shipped = MODELS_DIR / p
        if p.is_absolute() or not shipped.is_file():
            raise FileNotFoundError(f"config file not found: {name_or_path} (neither a file nor shipped under models/)")
        p = shipped
    shown = str(name_or_path)
    with p.open() as f:
        data = yaml.safe_load(f)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{shown}: expected a mapping at top level, got {type(data).__name__}")
    return shown, data


def load_config(name_or_path: PathLike, parse: Callable[[Mapping[str, Any]], T]) -> T:
    """Reads a config file and parses it with ``parse`` (a mapping -> config function).

    Raises:
        FileNotFoundError: no such file.
        ValueError: whatever ``parse`` raised (the subsystem's config error),
            its message prefixed with the file name.
    """
    shown, data = read_config_file(name_or_path)
    try:
        return parse(data)
    except ValueError as exc:
        exc.args = (f"{shown}: {exc}",)
        raise


def add_config_arg(parser: argparse.ArgumentParser, shipped: str) -> None:
    """The ``--config`` option every node has: a file path or a shipped name."""
    parser.add_argument("--config", default=shipped, help=f"config file: a path or a name shipped under models/ (default {shipped})")


def load_profile(name_or_path: PathLike | None = None) -> RobotProfile:
    """The robot profile (shipped ``alohamini2/profile.yaml`` by default)."""
    from teledora.operators.model.robot_profile import profile_from_dict

    return load_config(name_or_path or PROFILE, profile_from_dict)


PROFILE_ENV = "TELEDORA_PROFILE"


def load_node_profile() -> RobotProfile:
    """The robot profile a node runs with: the file named by ``TELEDORA_PROFILE``
    (set per node in a dataflow), else the shipped one."""
    return load_profile(os.environ.get(PROFILE_ENV) or None)


def load_drive_config(name_or_path: PathLike | None = None) -> DriveConfig:
    """drive.yaml: base, lift, servo buses, arm servos, current protection."""
    from teledora.operators.drive.drive_config import drive_config_from_dict

    return load_config(name_or_path or DRIVE, drive_config_from_dict)


def load_calibration(name_or_path: PathLike | None = None) -> CalibrationFile:
    """A servo calibration file (the shipped nominal one by default)."""
    from teledora.operators.drive.servo_calibration import calibration_file_from_dict

    return load_config(name_or_path or CALIBRATION, calibration_file_from_dict)


def load_ik_config(name_or_path: PathLike | None = None) -> IkConfig:
    """ik.yaml: solver, collisions, joint reference, workspace, node and path planner."""
    from teledora.operators.ik.ik_config import IkConfig

    return load_config(name_or_path or IK, IkConfig.from_mapping)


def load_teleop_config(name_or_path: PathLike | None = None, profile: RobotProfile | None = None) -> TeleopConfig:
    """teleop.yaml, with the speed caps of the robot profile (shipped one by default)."""
    from teledora.operators.teleop.teleop_scheme import TeleopConfig

    caps = profile or load_profile()
    return load_config(name_or_path or TELEOP, lambda data: TeleopConfig.from_mapping(data, caps))


def load_lidar_setup(name_or_path: PathLike | None = None) -> LidarSetup:
    """lidar.yaml: the two lidars, their sim variant and the scan merger."""
    from teledora.operators.lidar.lidar_config import lidar_setup_from_dict

    return load_config(name_or_path or LIDAR, lidar_setup_from_dict)


def load_estimation_config(name_or_path: PathLike | None = None) -> EstimationConfig:
    """estimation.yaml: flow sensor, its simulation, the onboard EKF, the ArduPilot bridge."""
    from teledora.operators.estimation.estimation_config import EstimationConfig

    return load_config(name_or_path or ESTIMATION, EstimationConfig.from_mapping)


def load_mocap_config(name_or_path: PathLike | None = None) -> MocapConfig:
    """mocap.yaml: NatNet client, rigid body, frames and the simulated rig."""
    from teledora.operators.mocap.mocap_config import MocapConfig

    return load_config(name_or_path or MOCAP, MocapConfig.from_mapping)


def load_renderer_config(name_or_path: PathLike | None = None) -> RendererConfig:
    """renderer.yaml: viewer, model binding and cameras."""
    from teledora.operators.rendering.camera_intrinsics import renderer_config_from_dict

    return load_config(name_or_path or RENDERER, renderer_config_from_dict)


def load_cameras_config(name_or_path: PathLike | None = None) -> CamerasConfig:
    """cameras.yaml: the five USB cameras, their intrinsics and mounts."""
    from teledora.operators.cameras.camera_config import cameras_config_from_dict

    return load_config(name_or_path or CAMERAS, cameras_config_from_dict)


def load_demo_script(name_or_path: PathLike | None = None) -> OperatorScript:
    """An operator script for the scripted XR node (the shipped demo by default;
    PICK_PLACE_SCRIPT is the pick-and-place scenario)."""
    from teledora.operators.xr.scripted_operator import OperatorScript

    return load_config(name_or_path or DEMO_SCRIPT, OperatorScript.from_mapping)


def load_pick_place_random(name_or_path: PathLike | None = None) -> PickPlaceConfig:
    """pick_place_random.yaml: the randomised pick and place's region and episode keyframes."""
    from teledora.operators.sim.pick_place_layout import PickPlaceConfig

    return load_config(name_or_path or PICK_PLACE_RANDOM, PickPlaceConfig.from_mapping)


def load_rate_table(name_or_path: PathLike | None = None) -> RateTable:
    """rates.yaml: every topic's nominal rate and every node's timer."""
    from teledora.operators.contract.topic_rates import RateTable

    return load_config(name_or_path or RATES, RateTable.from_mapping)


def load_scheduling_config(name_or_path: PathLike | None = None) -> SchedulingConfig:
    """scheduling.yaml: the control path's real-time policies and their CPU budget."""
    from teledora.operators.dataflow.node_scheduling import SchedulingConfig

    return load_config(name_or_path or SCHEDULING, SchedulingConfig.from_mapping)


def load_viewer_config(name_or_path: PathLike | None = None) -> ViewerConfig:
    """viewer.yaml: the live view's output and decimation rates."""
    from teledora.operators.viewing.viewer_config import ViewerConfig

    return load_config(name_or_path or VIEWER, ViewerConfig.from_mapping)


def load_recording_config(name_or_path: PathLike | None = None) -> RecordingConfig:
    """recording.yaml: the recorder's flush interval, batch pause and CPU priority."""
    from teledora.operators.recording.recording_config import RecordingConfig

    return load_config(name_or_path or RECORDING, RecordingConfig.from_mapping)
