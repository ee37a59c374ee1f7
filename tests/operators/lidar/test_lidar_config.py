import mujoco
import pytest

from teledora import models
from teledora.operators.lidar.lidar_config import LidarConfigError, lidar_setup_from_dict
from teledora.operators.lidar.lidar_mounts import MountNotFoundError, mount_from_site


def test_shipped_lidar_yaml_loads_and_its_sites_exist_in_the_model():
    setup = lidar_setup_from_dict(models.load_yaml("alohamini2/lidar.yaml"))
    assert set(setup.lidars) == {"front", "back"}
    assert setup.grid.range_min_m == 0.15 and setup.grid.range_max_m == 12.0
    assert setup.merger.tolerance_s == 0.1 and setup.merger.footprint is not None
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.model)))
    base = models.load_profile().base_frame
    front = mount_from_site(model, setup.lidars["front"].site, base)
    back = mount_from_site(model, setup.lidars["back"].site, base)
    assert front.x > 0 > back.x  # front ahead of the base centre, back behind
    # the footprint covers both lidar housings (so each lidar's view of the other is dropped)
    assert setup.merger.footprint.contains([front.x, back.x], [front.y, back.y]).all()


def test_unknown_keys_and_bad_values_are_reported_with_their_section():
    base = models.load_yaml("alohamini2/lidar.yaml")
    with pytest.raises(LidarConfigError, match="hardware: unknown keys"):
        lidar_setup_from_dict({**base, "hardware": {"read_timeout": 1.0}})
    with pytest.raises(LidarConfigError, match="merger"):
        lidar_setup_from_dict({**base, "merger": {**base["merger"], "compensation": "sometimes"}})
    with pytest.raises(LidarConfigError, match="stop_settle_s"):
        lidar_setup_from_dict({**base, "hardware": {**base["hardware"], "stop_settle_s": 0.01}})
    with pytest.raises(LidarConfigError, match="outlier_filter.*range_tolerance_m"):
        lidar_setup_from_dict({**base, "outlier_filter": {**base["outlier_filter"], "range_tolerance_m": -0.1}})
    with pytest.raises(LidarConfigError, match="outlier_filter: unknown keys"):
        lidar_setup_from_dict({**base, "outlier_filter": {**base["outlier_filter"], "tolerance": 0.1}})


def test_the_outlier_filter_is_on_in_the_shipped_yaml_and_null_turns_it_off():
    base = models.load_yaml("alohamini2/lidar.yaml")
    shipped = lidar_setup_from_dict(base).outlier_filter
    assert shipped is not None and shipped.range_tolerance_m == 0.1 and shipped.previous_window_deg == 8.0
    assert lidar_setup_from_dict({**base, "outlier_filter": None}).outlier_filter is None


def test_mount_from_a_yawed_site_and_a_missing_site():
    xml = """<mujoco><compiler angle="radian"/><worldbody><body name="chassis"><joint name="j" type="slide"/>
      <geom size="0.1"/><site name="s" pos="0.1 0.2 0.3" euler="0 0 1.0"/></body></worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    m = mount_from_site(model, "s", "chassis")
    assert [m.x, m.y, m.z] == pytest.approx([0.1, 0.2, 0.3])
    assert m.yaw == pytest.approx(1.0)
    with pytest.raises(MountNotFoundError):
        mount_from_site(model, "nope", "chassis")
    with pytest.raises(MountNotFoundError):
        mount_from_site(model, "s", "no_such_body")
