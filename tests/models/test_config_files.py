"""The shipped config files: each loads, each key is a field, each field comes
from a key and is read somewhere, and errors name the file and the key."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from teledora import models
from teledora.models import config_files as cf
from teledora.operators.contract.topic_rates import RateTable
from teledora.operators.drive.drive_config import DriveConfig
from teledora.operators.drive.servo_calibration import CalibrationFile
from teledora.operators.estimation.estimation_config import EstimationConfig
from teledora.operators.ik.ik_config import IkConfig
from teledora.operators.lidar.lidar_config import LidarSetup
from teledora.operators.mocap.mocap_config import MocapConfig
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.rendering.camera_intrinsics import RendererConfig
from teledora.operators.cameras.camera_config import CamerasConfig
from teledora.operators.teleop.teleop_scheme import TeleopConfig
from teledora.operators.viewing.viewer_config import ViewerConfig
from teledora.operators.dataflow.node_scheduling import SchedulingConfig
from teledora.operators.recording.recording_config import RecordingConfig
from teledora.operators.sim.pick_place_layout import PickPlaceConfig
from teledora.operators.xr.scripted_operator import OperatorScript

REPO = Path(__file__).resolve().parents[2]
CODE = ("operators", "nodes", "teledora", "models")

# shipped file -> (its loader, the dataclass it becomes)
LOADERS: dict[str, tuple[Callable[..., Any], type]] = {
    cf.PROFILE: (cf.load_profile, RobotProfile),
    cf.DRIVE: (cf.load_drive_config, DriveConfig),
    cf.CALIBRATION: (cf.load_calibration, CalibrationFile),
    cf.IK: (cf.load_ik_config, IkConfig),
    cf.TELEOP: (cf.load_teleop_config, TeleopConfig),
    cf.LIDAR: (cf.load_lidar_setup, LidarSetup),
    cf.ESTIMATION: (cf.load_estimation_config, EstimationConfig),
    cf.MOCAP: (cf.load_mocap_config, MocapConfig),
    cf.RENDERER: (cf.load_renderer_config, RendererConfig),
    cf.CAMERAS: (cf.load_cameras_config, CamerasConfig),
    cf.DEMO_SCRIPT: (cf.load_demo_script, OperatorScript),
    cf.PICK_PLACE_SCRIPT: (cf.load_demo_script, OperatorScript),
    cf.PICK_PLACE_RANDOM: (cf.load_pick_place_random, PickPlaceConfig),
    cf.RATES: (cf.load_rate_table, RateTable),
    cf.VIEWER: (cf.load_viewer_config, ViewerConfig),
    cf.SCHEDULING: (cf.load_scheduling_config, SchedulingConfig),
    cf.RECORDING: (cf.load_recording_config, RecordingConfig),
}

# Defaults that are a format's own, not a second copy of a shipped value.
DEFAULTS_BY_DESIGN = {
    "CalibrationFile.robot_id": "a LeRobot calibration JSON does not name the robot",
    "Footprint.padding_m": "a polygon without padding is a footprint too",
    "HandKey.*": "a keyframe leaves out what is zero or released",
    "Keyframe.*": "a keyframe leaves out what is zero or released",
    "BaseGoal.*": "a base goal is a point or a heading, never both",
    **{f"Phase.{k}": "an episode keyframe leaves out a released trigger or button" for k in ("grip", "start", "keep")},
    "OperatorScript.base_driving": "a script without base goals steers nothing",
    **{f"BaseDriving.{k}": "a script without lift goals moves the lift by its stick alone"
       for k in ("lift_stick", "lift_ease_within_m", "lift_reached_m")},
}


def _dataclasses_in(tp: Any) -> list[type]:
    if dataclasses.is_dataclass(tp):
        return [tp]
    return [dc for arg in typing.get_args(tp) for dc in _dataclasses_in(arg)]


def _config_classes() -> list[type]:
    """Every dataclass a shipped file is read into, nested ones included."""
    seen: list[type] = []
    todo = [cls for _, cls in LOADERS.values()]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.append(cls)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            todo.extend(_dataclasses_in(hints[f.name]))
    return seen


def test_the_list_above_is_every_shipped_file() -> None:
    assert set(LOADERS) == set(cf.SHIPPED)
    shipped = {p.relative_to(models.MODELS_DIR).as_posix() for p in models.MODELS_DIR.glob("*/*.yaml")}
    assert shipped == set(cf.SHIPPED), "a YAML file under models/ without a loader, or a loader without its file"


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_every_shipped_file_loads_through_its_loader(name: str) -> None:
    loader, cls = LOADERS[name]
    assert isinstance(loader(), cls)
    assert isinstance(loader(name), cls)


def test_every_field_comes_from_a_key() -> None:
    """With unknown keys refused, no defaults means keys and fields match one to one."""
    defaulted = [
        f"{cls.__name__}.{f.name}"
        for cls in _config_classes()
        for f in dataclasses.fields(cls)
        if f.init and (f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING)
    ]
    unexpected = [d for d in defaulted if d not in DEFAULTS_BY_DESIGN and f"{d.split('.')[0]}.*" not in DEFAULTS_BY_DESIGN]
    assert not unexpected, f"defaults that would stand in for a shipped value: {unexpected}"


def _names_read(path: Path, config_classes: set[str]) -> set[str]:
    """Attribute names and string constants a module uses, outside the
    ``__post_init__`` of config classes (a field only validated is still a field
    nothing reads)."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef) and cls.name in config_classes:
            for node in cls.body:
                if isinstance(node, ast.FunctionDef) and node.name == "__post_init__":
                    skip.update(id(n) for n in ast.walk(node))
    names = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


# Read only where they are turned into something else, or only to check others.
READ_ELSEWHERE = {
    "BridgeConfig.message_interval_s": "becomes the session's pose and attitude stream period",
    "BridgeConfig.status_interval_s": "becomes the session's EKF status stream period",
    "Footprint.vertices_m": "becomes the polygon's edges",
    "TopicRate.per_tick": "checked against the dataflows' timers by test_rate_table.py",
    "TopicRate.paced_by": "shown in docs/messages.md, checked by test_rate_table.py",
}


def test_every_field_is_read_somewhere() -> None:
    classes = _config_classes()
    names = {cls.__name__ for cls in classes}
    read = set().union(*(_names_read(p, names) for top in CODE for p in (REPO / top).rglob("*.py")))
    unread = [
        f"{cls.__name__}.{f.name}"
        for cls in classes
        for f in dataclasses.fields(cls)
        if f.init and f.name not in read and f"{cls.__name__}.{f.name}" not in READ_ELSEWHERE
    ]
    assert not unread, f"config parsed but never read: {unread}"


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_an_unknown_key_is_refused_naming_the_file(name: str, tmp_path: Path) -> None:
    loader, _ = LOADERS[name]
    path = tmp_path / Path(name).name
    path.write_text(yaml.safe_dump({**models.load_yaml(name), "surplus_m": 1.0}))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: top level: unknown keys \['surplus_m'\]"):
        loader(path)


def test_a_missing_key_is_named_with_its_section_and_unit(tmp_path: Path) -> None:
    data = models.load_yaml(cf.DRIVE)
    del data["lift"]["soft_max_mm"]
    path = tmp_path / "drive.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: lift: missing key soft_max_mm \(mm\)$"):
        cf.load_drive_config(path)


def test_a_bad_value_is_named_with_its_file_and_key(tmp_path: Path) -> None:
    data = models.load_yaml(cf.LIDAR)
    data["lidars"]["back"]["sim_scan_rate_hz"] = "fast"
    path = tmp_path / "lidar.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: lidars.back.sim_scan_rate_hz \(Hz\): expected a finite number"):
        cf.load_lidar_setup(path)


def test_a_file_that_is_neither_a_path_nor_shipped_is_reported() -> None:
    with pytest.raises(FileNotFoundError, match="alohamini2/no_such.yaml"):
        cf.load_drive_config("alohamini2/no_such.yaml")
