"""flow_sim node under dora.testing.MockNode."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from dora.testing import MockNode as _MockNode

from teledora.nodes.estimation import flow_sim
from teledora.operators.estimation.flow_model import FlowModel, FlowModelConfig
from teledora.operators.contract.messages import decode, encode

JOINTS = ["left_shoulder_pan"]

# a host clock later than every stamp the tests send (stamps ahead of a
# receiver's clock are refused), fixed so that no timer fires
AFTER_EVERY_STAMP_NS = 2**62


class MockNode(_MockNode):
    """Delivers events one at a time, as a live dataflow at sensor rates does
    (the stock mock hands the whole script to ``drain()`` at once)."""

    def drain(self):
        return []


def ground_truth(stamp_ns: int, vx: float = 0.0, vy: float = 0.0, wz: float = 0.0, x=0.0, y=0.0, yaw=0.0) -> pa.Array:
    return encode("GroundTruth", {
        "stamp_ns": stamp_ns, "frame_id": "world", "x": x, "y": y, "yaw": yaw, "vx": vx, "vy": vy, "wz": wz,
        "lift_height_m": 0.0, "joint_names": JOINTS, "joint_position": [0.0], "joint_velocity": [0.0],
    })


def quiet_config(tmp_path, **overrides):
    from teledora import models
    cfg = models.load_yaml("alohamini2/estimation.yaml")
    cfg["flow_sim"].update(flow_noise_rad_s=0.0, height_noise_m=0.0, dropout_probability=0.0, gyro_noise_rad_s=0.0)
    cfg["flow_sim"].update(overrides)
    path = tmp_path / "estimation.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path, cfg


def test_flow_and_gyro_from_ground_truth(tmp_path):
    """Truth every 10 ms, reports at 50 Hz of its stamps: every other sample."""
    path, cfg = quiet_config(tmp_path)
    inputs = [("ground_truth", ground_truth(k * 10_000_000, vx=0.05, wz=0.3)) for k in range(1, 11)]
    node = MockNode(inputs)
    flow_sim.main(["--config", str(path)], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    flows = [decode("OpticalFlow", v) for v in node.outputs["flow"]]
    gyros = [decode("Gyro", v) for v in node.outputs["gyro"]]
    assert [f["stamp_ns"] // 1_000_000 for f in flows] == [10, 30, 50, 70, 90] and len(gyros) == 10
    model = FlowModel(FlowModelConfig.from_dict(cfg["flow_sensor"]))
    expected = model.sensor_flow(model.body_flow(0.05, 0.0, 0.3, cfg["flow_sensor"]["offset_m"][2]))
    np.testing.assert_allclose([flows[-1]["flow_rate_x"], flows[-1]["flow_rate_y"]], expected, atol=1e-9)
    assert flows[-1]["quality"] == 200
    assert flows[-1]["integration_time_s"] == np.float64(0.02)
    np.testing.assert_allclose(gyros[0]["angular_velocity"], [0, 0, 0.3])
    assert gyros[0]["frame_id"] == "base_link"
    assert "diagnostics" in node.outputs


def test_bad_ground_truth_and_unknown_inputs_rejected(tmp_path):
    path, _ = quiet_config(tmp_path)
    bad = pa.array([{"stamp_ns": 1}])
    node = MockNode([("ground_truth", bad), ("ground_truth", ground_truth(5, vx=0.01)), ("tick", pa.array([1])),
                     ("ground_truth", ground_truth(4, vx=0.01))])  # older than the one before
    flow_sim.main(["--config", str(path)], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    assert len(node.outputs["flow"]) == 1 and len(node.outputs["gyro"]) == 1
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 3 and diag["level"] != "ok"


def test_uneven_or_batched_truth_gives_a_report_every_20_ms_of_its_stamps(tmp_path):
    """A starved simulator publishes its truth unevenly (gaps, bursts) and a
    node that runs late gets it in one batch: either way a report for every
    20 ms of the truth's stamps comes out, stamped on that grid, the same."""
    path, _ = quiet_config(tmp_path)
    gaps_ms = [12.4, 22.0, 18.1, 19.7, 16.7, 0.5, 1.2, 1.4, 37.2, 11.3, 96.0, 3.4, 25.9, 14.2]  # seen in a starved run
    stamps, t = [], 5.0
    for k in range(29):
        t += gaps_ms[k % len(gaps_ms)]
        stamps.append(round(t * 1_000_000))
    truth = [("ground_truth", ground_truth(s, vx=0.05 * (k % 3))) for k, s in enumerate(stamps)]

    class Late(_MockNode):  # the whole script in the first batch
        pass

    one_by_one, late = MockNode(truth), Late(truth)
    for node in (one_by_one, late):
        flow_sim.main(["--config", str(path)], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    flows = [decode("OpticalFlow", v) for v in one_by_one.outputs["flow"]]
    assert [f["stamp_ns"] for f in flows] == list(range(stamps[0], stamps[-1] + 1, 20_000_000))
    assert flows == [decode("OpticalFlow", v) for v in late.outputs["flow"]]


def test_dropouts_reported_with_zero_quality(tmp_path):
    path, _ = quiet_config(tmp_path, dropout_probability=1.0)
    node = MockNode([("ground_truth", ground_truth(5, vx=0.01))])
    flow_sim.main(["--config", str(path), "--seed", "3"], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    assert decode("OpticalFlow", node.outputs["flow"][0])["quality"] == 0
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert details["dropouts"] == 1 and details["seed"] == 3


def test_image_mode_measures_flow_from_rendered_floor(tmp_path):
    path, cfg = quiet_config(tmp_path)
    inputs = []
    x = 0.0
    for k in range(1, 8):
        x += 0.1 * 0.02
        inputs.append(("ground_truth", ground_truth(k * 20_000_000, vx=0.1, x=x)))
    node = MockNode(inputs)
    flow_sim.main(["--config", str(path), "--image"], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    flows = [decode("OpticalFlow", v) for v in node.outputs["flow"]]
    assert len(flows) == 6  # the first frame has nothing to compare with
    model = FlowModel(FlowModelConfig.from_dict(cfg["flow_sensor"]))
    expected = model.sensor_flow(model.body_flow(0.1, 0.0, 0.0, cfg["flow_sensor"]["offset_m"][2]))
    got = np.mean([[f["flow_rate_x"], f["flow_rate_y"]] for f in flows], axis=0)
    np.testing.assert_allclose(got, expected, atol=0.1)
    assert all(f["quality"] > 100 for f in flows)
    assert json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])["mode"] == "image"


def test_image_mode_reports_on_every_grid_time_when_the_truth_is_slower_and_uneven(tmp_path):
    """Truth at about 30 Hz with jitter, reports at 50 Hz: every report after the first
    frame goes out, one per 20 ms, each measuring the true shift (the frames are
    rendered at poses interpolated between the truth samples)."""
    path, cfg = quiet_config(tmp_path)
    rng = np.random.default_rng(4)
    inputs, t_ms = [], 0.0
    while t_ms < 600.0:
        inputs.append(("ground_truth", ground_truth(int(t_ms * 1e6), vx=0.1, x=0.1 * t_ms / 1000.0)))
        last_ns = int(t_ms * 1e6)
        t_ms += rng.uniform(22.0, 45.0)  # never two truth samples inside one report interval
    node = MockNode(inputs)
    flow_sim.main(["--config", str(path), "--image"], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    flows = [decode("OpticalFlow", v) for v in node.outputs["flow"]]
    stamps = [f["stamp_ns"] for f in flows]
    # every grid time up to the last truth sample, but the first (no earlier frame to compare)
    assert stamps == list(range(20_000_000, last_ns + 1, 20_000_000))
    model = FlowModel(FlowModelConfig.from_dict(cfg["flow_sensor"]))
    expected = model.sensor_flow(model.body_flow(0.1, 0.0, 0.0, cfg["flow_sensor"]["offset_m"][2]))
    for f in flows:
        np.testing.assert_allclose([f["flow_rate_x"], f["flow_rate_y"]], expected, atol=0.15)


def test_pose_at_interpolates_and_turns_the_short_way():
    from teledora.operators.estimation.floor_image_flow import pose_at
    a, b = (0, (0.0, 0.0, 3.0)), (100, (1.0, -2.0, -3.0))  # yaw 3.0 -> -3.0 rad: 0.28 rad the short way
    x, y, yaw = pose_at(25, a, b)
    assert (x, y) == (0.25, -0.5)
    assert np.isclose(yaw, 3.0 + 0.25 * (2 * np.pi - 6.0))
    assert pose_at(25, a, None) == a[1] and pose_at(0, a, b) == a[1]
    assert np.allclose(pose_at(150, a, b), (1.0, -2.0, -3.0 + 2 * np.pi))  # no further than the later pose


def _first_motion_stamp_ms(tmp_path, delay_ms: float, image: bool = False) -> tuple[float, list]:
    """Truth every 10 ms, forward step at 200 ms, reports every 20 ms; stamp of the first moving report."""
    path, _ = quiet_config(tmp_path, delay_ms=delay_ms)
    inputs, x = [], 0.0
    for k in range(0, 41):
        vx = 0.1 if k >= 20 else 0.0
        inputs.append(("ground_truth", ground_truth(k * 10_000_000, vx=vx, x=x)))
        x += vx * 0.01
    node = MockNode(inputs)
    flow_sim.main(["--config", str(path)] + (["--image"] if image else []), node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    flows = [decode("OpticalFlow", v) for v in node.outputs["flow"]]
    moving = [f["stamp_ns"] / 1e6 for f in flows if abs(f["flow_rate_y"]) > 0.5 or abs(f["flow_rate_x"]) > 0.5]
    return moving[0], flows


def test_report_delay_from_the_config(tmp_path):
    """delay_ms (SIM_FLOW_DELAY-style): the step at 200 ms shows in the report stamped 200 + delay."""
    assert _first_motion_stamp_ms(tmp_path, 0.0)[0] == 200.0
    first, flows = _first_motion_stamp_ms(tmp_path, 60.0)
    assert first == 260.0
    assert flows[0]["stamp_ns"] == 60_000_000  # nothing to report before the first truth is 60 ms old
    first_image, _ = _first_motion_stamp_ms(tmp_path, 60.0, image=True)
    assert first_image == 280.0  # image path: the first moving frame pair (200 -> 220 ms), 60 ms later
