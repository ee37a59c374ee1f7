import copy

import pytest

from teledora import models
from teledora.operators.drive.drive_config import DriveConfigError, drive_config_from_dict


def test_shipped_drive_yaml_parses_with_driver_values():
    cfg = drive_config_from_dict(models.load_yaml("alohamini2/drive.yaml"))
    assert cfg.base.geometry.wheel_radius_m == 0.063 and cfg.base.geometry.base_radius_m == 0.195
    assert cfg.base.wheel_ids == (8, 9, 10)
    assert cfg.lift.lead_mm_per_rev == 131.0 and cfg.lift.dir_sign == -1 and cfg.lift.servo_id == 11
    assert cfg.arms.servo_ids["gripper"] == 7
    assert cfg.current_protection.trip_consecutive_reads == 20
    assert set(cfg.buses) == {"left", "right"}


def test_missing_section_and_unknown_keys_are_errors():
    data = models.load_yaml("alohamini2/drive.yaml")
    broken = copy.deepcopy(data)
    del broken["lift"]
    with pytest.raises(DriveConfigError, match="lift"):
        drive_config_from_dict(broken)
    broken = copy.deepcopy(data)
    broken["base"]["wheel_radius"] = 1
    with pytest.raises(DriveConfigError, match="unknown"):
        drive_config_from_dict(broken)
