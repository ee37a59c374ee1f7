"""renderer node under a paced MockNode: what the cameras see, when it refuses
to show anything, rejection rules, window loss, and that it is read-only."""

from __future__ import annotations

import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen (Mesa EGL) before the first mujoco.Renderer

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import yaml
from dora.testing import MockNode

from teledora import models
from teledora.models.config_files import load_renderer_config
from teledora.devices.rendering import camera_rig, robot_renderer
from teledora.nodes.rendering import renderer
from teledora.operators.contract.messages import decode, decode_image, encode

PROFILE = models.load_profile()
ARM_NAMES = list(PROFILE.arm_joint_names)
CAMERAS = ("chest", "top_front", "top_back", "left_wrist", "right_wrist")
W, H = 96, 72


class PacedNode(MockNode):
    """One event per wake-up (like a daemon delivering at input rate), and the
    metadata of every output kept."""

    def __init__(self, events):
        super().__init__(events)
        self.sent: list[tuple[str, object, dict]] = []

    def drain(self):
        return []

    def send_output(self, output_id, data, metadata=None):
        super().send_output(output_id, data, metadata)
        self.sent.append((output_id, data, dict(metadata or {})))

    def images(self, camera: str) -> list[np.ndarray]:
        return [decode_image(v, m).copy() for o, v, m in self.sent if o == camera]

    def diagnostics(self) -> dict:
        return decode("Diagnostics", self.outputs["diagnostics"][-1])


@pytest.fixture()
def config_path(tmp_path: Path) -> str:
    data = models.load_yaml("alohamini2/renderer.yaml")
    data["camera_defaults"].update(width=W, height=H)
    for cam in data["cameras"].values():
        cam.update(enabled=True, rate_hz=1000.0)  # due at every step: one frame per cycle
    data["max_renders_per_cycle"] = 5
    path = tmp_path / "renderer.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def arms(stamp: int = 1, overrides: dict | None = None, names=None, positions=None) -> pa.Array:
    q = PROFILE.home_q()
    q.update(overrides or {})
    names = names if names is not None else list(q)
    positions = positions if positions is not None else [q[n] for n in names]
    return encode("JointState", {"stamp_ns": stamp, "names": names, "position": positions, "velocity": [], "effort": []})


def lift(height_m: float, stamp: int = 1) -> pa.Array:
    return encode("LiftState", {"stamp_ns": stamp, "height_m": height_m, "velocity_m_s": 0.0, "homed": True})


def odom(x: float = 0.0, yaw: float = 0.0, stamp: int = 1) -> pa.Array:
    return encode(
        "Odometry",
        {"stamp_ns": stamp, "frame_id": "odom", "child_frame_id": "base_link", "x": x, "y": 0.0, "yaw": yaw,
         "vx": 0.0, "vy": 0.0, "wz": 0.0},
    )


def ground_truth(stamp: int = 1, lift_height_m: float = 0.3) -> pa.Array:
    q = PROFILE.home_q()
    return encode(
        "GroundTruth",
        {"stamp_ns": stamp, "frame_id": "world", "x": 0.0, "y": 0.0, "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0,
         "lift_height_m": lift_height_m, "joint_names": list(q), "joint_position": list(q.values()),
         "joint_velocity": [0.0] * len(q)},
    )


def event(input_id: str, value, metadata: dict | None = None) -> dict:
    return {"type": "INPUT", "id": input_id, "value": value, "metadata": metadata or {}}


TICK = ("tick", pa.array([0], type=pa.uint64()))


_RIGS: dict[tuple[str, ...], camera_rig.CameraRig] = {}


def shared_rig(config_path: str, cameras: tuple[str, ...]) -> camera_rig.CameraRig:
    """One offscreen rig per camera set for the whole module (creating a GL
    context costs far more than the frames these tests render)."""
    if cameras not in _RIGS:
        config = load_renderer_config(config_path)
        _RIGS[cameras] = camera_rig.CameraRig(
            models.path(config.model.path), config, [config.cameras[c] for c in cameras]
        )
    return _RIGS[cameras]


def run(config_path: str, events, cameras=CAMERAS, window_factory=None, viewer="off") -> PacedNode:
    node = PacedNode(list(events))
    clock = itertools.count(start=10**9, step=20_000_000)
    renderer.main(
        ["--config", config_path, "--viewer", viewer, "--cameras", ",".join(cameras)],
        node=node,
        clock=lambda: next(clock),
        window_factory=window_factory,
        rig=shared_rig(config_path, tuple(cameras)),
    )
    return node


def teardown_module() -> None:
    for rig in _RIGS.values():
        rig.close()
    _RIGS.clear()


def full_state(height_m: float = 0.3, overrides: dict | None = None):
    return [("joint_states", arms(overrides=overrides)), ("lift", lift(height_m)), ("odom", odom())]


def changed_fraction(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.any(np.abs(a.astype(int) - b.astype(int)) > 8, axis=2)))


# ------------------------------------------------------------------ image content


def test_images_carry_size_and_intrinsics(config_path):
    node = run(config_path, full_state() + [TICK], cameras=("chest",))
    # the pose is complete at the odom message: one frame then, one at the tick
    assert len([s for s in node.sent if s[0] == "chest"]) == 2
    _, value, meta = next(s for s in node.sent if s[0] == "chest")
    img = decode_image(value, meta)
    assert img.shape == (H, W, 3) and img.dtype == np.uint8
    assert meta["camera"] == "chest" and meta["encoding"] == "rgb8"
    assert meta["fy"] == pytest.approx((H / 2) / np.tan(np.radians(65.0 / 2)))
    assert meta["distortion"] == [0.0] * 5 and meta["stamp_ns"] == 1
    assert img.std() > 5  # a scene, not a blank frame


def test_wrist_camera_sees_its_own_jaw(config_path):
    open_ = run(config_path, full_state(overrides={"left_gripper": 0.0}) + [TICK], cameras=("left_wrist", "right_wrist"))
    shut = run(config_path, full_state(overrides={"left_gripper": 0.7}) + [TICK], cameras=("left_wrist", "right_wrist"))
    left_open, left_shut = open_.images("left_wrist")[0], shut.images("left_wrist")[0]
    # only the moving jaw differs between the two states, so a change means the jaw is in view
    assert changed_fraction(left_open, left_shut) > 0.02
    assert changed_fraction(open_.images("right_wrist")[0], shut.images("right_wrist")[0]) == 0.0
    # the jaws are light grey, the floor is darker: the lower image half holds jaw-coloured pixels
    lower = left_open[H // 2 :].astype(int)
    jaw_like = (lower.min(axis=2) > 170) & (lower.max(axis=2) - lower.min(axis=2) < 25)
    assert jaw_like.mean() > 0.03


def test_wrist_view_of_the_jaw_is_fixed_while_the_arm_moves(config_path):
    a = run(config_path, full_state() + [TICK], cameras=("left_wrist",)).images("left_wrist")[0]
    b = run(config_path, full_state(overrides={"left_shoulder_pan": 0.5}) + [TICK], cameras=("left_wrist",))
    b = b.images("left_wrist")[0]
    lower = a[H // 2 :].astype(int)
    jaw = (lower.min(axis=2) > 170) & (lower.max(axis=2) - lower.min(axis=2) < 25)
    assert changed_fraction(a, b) > 0.05  # the room moved in view
    assert np.abs(a[H // 2 :][jaw].astype(int) - b[H // 2 :][jaw].astype(int)).max() < 40  # the jaw did not


def test_chest_camera_moves_with_the_lift_and_a_top_camera_does_not(config_path):
    low = run(config_path, full_state(height_m=0.1) + [TICK], cameras=("chest", "top_back"))
    high = run(config_path, full_state(height_m=0.5) + [TICK], cameras=("chest", "top_back"))
    assert changed_fraction(low.images("chest")[0], high.images("chest")[0]) > 0.05
    assert changed_fraction(low.images("top_back")[0], high.images("top_back")[0]) == 0.0


def test_base_odometry_moves_every_camera(config_path):
    here = run(config_path, full_state() + [TICK], cameras=("top_back",))
    turned = run(config_path, [("joint_states", arms()), ("lift", lift(0.3)), ("odom", odom(yaw=1.2)), TICK],
                 cameras=("top_back",))
    assert changed_fraction(here.images("top_back")[0], turned.images("top_back")[0]) > 0.05


# ------------------------------------------------------------------ waiting and rejection


def test_nothing_is_shown_until_every_group_has_a_valid_state(config_path):
    node = run(config_path, [("joint_states", arms()), ("lift", lift(0.3)), TICK, TICK], cameras=("chest",))
    assert "chest" not in node.outputs
    diag = node.diagnostics()
    assert diag["level"] == "warn" and "base" in diag["message"]
    assert json.loads(diag["details_json"])["missing_groups"] == ["base"]


def test_invalid_joint_states_are_rejected_whole_and_the_last_pose_held(config_path):
    bad_names = ARM_NAMES[:-1] + ["left_elbow_typo"]
    events = full_state(overrides={"left_gripper": 0.0}) + [TICK]
    events += [
        ("joint_states", arms(names=bad_names, positions=[0.7] * 14)),
        TICK,
        ("joint_states", arms(names=ARM_NAMES[:-1], positions=[0.7] * 13)),
        TICK,
        ("joint_states", pa.array([{"bogus": 1}])),
        TICK,
    ]
    node = run(config_path, events, cameras=("left_wrist",))
    frames = node.images("left_wrist")
    assert len(frames) == 8  # a frame per wake-up once the pose is complete, rejected or not
    assert all(changed_fraction(frames[0], f) == 0.0 for f in frames[1:])
    diag = node.diagnostics()
    assert diag["rejected"] == 3
    reasons = " ".join(str(log) for log in node.logs)
    assert "not in the model" in reasons and "incomplete" in reasons


def test_non_finite_and_duplicate_states_never_reach_the_pose(config_path):
    q = PROFILE.home_q()
    names = list(q)
    nan_msg = pa.array(
        [{"stamp_ns": 5, "names": names, "position": [float("nan")] + [0.0] * 13, "velocity": [], "effort": []}],
        type=arms().type,
    )
    dup_msg = pa.array(
        [{"stamp_ns": 6, "names": names[:-1] + [names[0]], "position": [0.0] * 14, "velocity": [], "effort": []}],
        type=arms().type,
    )
    inf_lift = pa.array([{"stamp_ns": 7, "height_m": float("inf"), "velocity_m_s": 0.0, "homed": True}],
                        type=lift(0.0).type)
    node = run(config_path, full_state() + [TICK, ("joint_states", nan_msg), TICK, ("joint_states", dup_msg),
                                            ("lift", inf_lift), TICK], cameras=("chest",))
    frames = node.images("chest")
    assert len(frames) == 7 and all(changed_fraction(frames[0], f) == 0.0 for f in frames)
    assert node.diagnostics()["rejected"] == 3


def test_ground_truth_can_be_the_only_source(config_path, tmp_path):
    data = yaml.safe_load(Path(config_path).read_text())
    data["sources"] = {"arms": "ground_truth", "lift": "ground_truth", "base": "ground_truth"}
    path = tmp_path / "gt.yaml"
    path.write_text(yaml.safe_dump(data))
    node = run(str(path), [("ground_truth", ground_truth()), TICK], cameras=("chest",))
    assert len(node.images("chest")) == 2


def test_a_second_source_for_a_group_is_reported_not_mixed(config_path):
    node = run(config_path, full_state(height_m=0.1) + [("ground_truth", ground_truth(lift_height_m=0.5)), TICK],
               cameras=("top_back", "chest"))
    reference = run(config_path, full_state(height_m=0.1) + [TICK], cameras=("top_back", "chest"))
    assert changed_fraction(node.images("chest")[0], reference.images("chest")[0]) == 0.0
    assert "using 'lift'" in node.diagnostics()["last_error"] or "using 'odom'" in node.diagnostics()["last_error"]


def test_a_second_publisher_on_joint_states_is_reported(config_path):
    events = [event("joint_states", arms(stamp=1), {"publisher": "sim"}), ("lift", lift(0.3)), ("odom", odom()),
              event("joint_states", arms(stamp=2), {"publisher": "arms_hw"}), TICK]
    node = run(config_path, events, cameras=("chest",))
    details = json.loads(node.diagnostics()["details_json"])
    assert any("second publisher on joint_states" in w for w in details["second_publishers"])


# ------------------------------------------------------------------ read-only guarantee and window


def test_outputs_are_only_images_and_diagnostics(config_path):
    events = full_state() + [TICK] * 3 + [("joint_states", arms(names=["x"], positions=[1.0])), TICK]
    node = run(config_path, events)
    assert set(node.outputs) <= set(CAMERAS) | {"diagnostics"}
    assert set(node.outputs) >= set(CAMERAS)
    assert set(robot_renderer.OUTPUTS) == set(CAMERAS) | {"diagnostics"}


class FakeWindow:
    def __init__(self, open_for: int):
        self.open_for = open_for
        self.syncs = 0
        self.closed = False

    def is_running(self) -> bool:
        return self.syncs < self.open_for

    def sync(self) -> None:
        self.syncs += 1

    def close(self) -> None:
        self.closed = True


def test_closing_the_window_ends_only_the_window(config_path):
    windows: list[FakeWindow] = []

    def factory(model, data):
        windows.append(FakeWindow(open_for=2))
        return windows[-1]

    node = run(config_path, full_state() + [TICK] * 8, cameras=("chest",), window_factory=factory, viewer="on")
    assert len(windows) == 1 and windows[0].closed and windows[0].syncs == 2
    assert len(node.images("chest")) == 9  # cameras kept going after the window closed
    assert json.loads(node.diagnostics()["details_json"])["window"] == "closed"


def test_a_crashing_window_is_contained(config_path):
    def factory(model, data):
        raise RuntimeError("no GL context for the window")

    node = run(config_path, full_state() + [TICK] * 3, cameras=("chest",), window_factory=factory, viewer="on")
    assert len(node.images("chest")) == 4


def test_window_opens_only_after_a_valid_state(config_path):
    opened: list[int] = []

    def factory(model, data):
        opened.append(1)
        return FakeWindow(open_for=100)

    run(config_path, [("joint_states", arms()), TICK, TICK], cameras=("chest",), window_factory=factory, viewer="on")
    assert opened == []


def test_a_renderer_that_cannot_start_says_why_after_connecting(tmp_path):
    node = PacedNode(full_state())
    with pytest.raises(SystemExit, match="could not start"):
        renderer.main(["--model", str(tmp_path / "missing.xml"), "--viewer", "off"], node=node)
    diag = node.diagnostics()
    assert diag["level"] == "error" and "missing.xml" in diag["message"]
    assert set(node.outputs) == {"diagnostics"}


_SOURCE = '''
import numpy as np
from dora import Node
from teledora import models
from teledora.operators.contract.messages import encode
names = list(models.load_profile().arm_joint_names)
node = Node()
sent = 0
for event in node:
    if event["type"] == "INPUT" and event["id"] == "tick":
        msg = {"stamp_ns": sent + 1, "names": names, "position": np.zeros(14), "velocity": [], "effort": []}
        node.send_output("joint_states", encode("JointState", msg), {})
        sent += 1
        if sent >= 40:
            break
'''

_SINK = '''
import os
from dora import Node
node = Node()
count = 0
while (event := node.next()) is not None:
    if event["type"] == "INPUT" and event["id"] == "joint_states":
        count += 1
with open(os.environ["SINK_OUT"], "w") as f:
    f.write(str(count))
'''


@pytest.mark.dataflow
def test_a_crashed_renderer_changes_nothing_else_in_the_dataflow(tmp_path):
    """Under `dora run`: the renderer fails (its model is missing) while a
    producer feeds both it and another consumer; that consumer still gets every
    message and the producer finishes normally."""
    import shutil
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    dora = shutil.which("dora", path=str(bin_dir)) or shutil.which("dora")
    if dora is None:
        pytest.skip("the dora CLI is not installed next to this Python")
    repo = Path(__file__).resolve().parents[3]
    (tmp_path / "source.py").write_text(_SOURCE)
    (tmp_path / "sink.py").write_text(_SINK)
    count_file = tmp_path / "count.txt"
    flow = {
        "nodes": [
            {"id": "source", "path": "source.py", "inputs": {"tick": "dora/timer/millis/10"},
             "outputs": ["joint_states"]},
            {"id": "renderer", "path": str(repo / "nodes" / "rendering" / "renderer.py"),
             "args": f"--model {tmp_path / 'missing.xml'} --viewer off",
             "inputs": {"joint_states": "source/joint_states", "tick": "dora/timer/millis/50"},
             "outputs": list(robot_renderer.OUTPUTS)},
            {"id": "sink", "path": "sink.py", "env": {"SINK_OUT": str(count_file)},
             "inputs": {"joint_states": {"source": "source/joint_states", "queue_policy": "backpressure"}}},
        ]
    }
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", MUJOCO_GL="egl")
    proc = subprocess.run([dora, "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    log = proc.stdout + proc.stderr
    assert "renderer could not start" in log
    assert count_file.exists(), log[-3000:]
    assert count_file.read_text() == "40"


def test_one_render_per_wake_up_keeps_inputs_flowing(config_path, tmp_path):
    data = yaml.safe_load(Path(config_path).read_text())
    data["max_renders_per_cycle"] = 1
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(data))
    node = run(str(path), full_state() + [TICK, TICK])
    frames = [o for o, _, _ in node.sent if o in CAMERAS]
    assert len(frames) == 3  # five cameras due, but one frame between input passes
    assert len(set(frames)) == 3


_WINDOW_SCRIPT = '''
import itertools, sys
import pyarrow as pa
from dora.testing import MockNode
from teledora import models
from teledora.devices.rendering import camera_rig
from teledora.nodes.rendering import renderer
from teledora.operators.contract.messages import encode

class Paced(MockNode):
    def drain(self):
        return []

q = models.load_profile().home_q()
js = encode("JointState", {"stamp_ns": 1, "names": list(q), "position": list(q.values()), "velocity": [], "effort": []})
lift = encode("LiftState", {"stamp_ns": 1, "height_m": 0.3, "velocity_m_s": 0.0, "homed": True})
odom = encode("Odometry", {"stamp_ns": 1, "frame_id": "odom", "child_frame_id": "base_link", "x": 0.0, "y": 0.0,
                           "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0})
node = Paced([("joint_states", js), ("lift", lift), ("odom", odom)] + [("tick", pa.array([0]))] * 5)
handles = []

def window(model, data):
    handles.append(camera_rig.passive_viewer(model, data))
    return handles[-1]

clock = itertools.count(0, 400_000_000)
state = renderer.main(["--viewer", "auto", "--cameras", "chest", "--config", sys.argv[1]], node=node,
                      clock=lambda: next(clock), window_factory=window)
print("WINDOW", len(handles), "FRAMES", len(node.outputs.get("chest", [])), "STATE", state)
renderer.exit_process(state)  # as the node's __main__ does
'''


def test_real_viewer_window_opens_beside_the_cameras_on_a_display(config_path, tmp_path):
    """MuJoCo's passive viewer on a virtual X display (skipped without xvfb-run)."""
    import shutil
    import subprocess
    import sys

    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        pytest.skip("xvfb-run is not installed (apt package xvfb); the window path needs an X display")
    script = tmp_path / "window.py"
    script.write_text(_WINDOW_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY")}
    proc = subprocess.run([xvfb, "-a", "-s", "-screen 0 800x600x24", sys.executable, str(script), config_path],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "WINDOW 1 FRAMES 6 STATE closed" in proc.stdout


def test_per_arm_messages_in_one_burst_both_apply(config_path):
    """A burst holding a left-arm and then a right-arm message: both must land
    (keeping only the newest joint_states message would lose the left arm)."""
    q = PROFILE.home_q()
    left = [n for n in q if n.startswith("left_")]
    right = [n for n in q if n.startswith("right_")]
    burst = MockNode([("lift", lift(0.3)), ("odom", odom()),
                      ("joint_states", arms(names=left, positions=[q[n] for n in left])),
                      ("joint_states", arms(names=right, positions=[q[n] for n in right])), TICK])
    clock = itertools.count(start=10**9, step=20_000_000)
    renderer.main(["--config", config_path, "--viewer", "off", "--cameras", "chest"], node=burst,
                  clock=lambda: next(clock), rig=shared_rig(config_path, ("chest",)))
    # (the burst ends with STOP, so nothing is rendered: the pose is what counts)
    assert json.loads(decode("Diagnostics", burst.outputs["diagnostics"][-1])["details_json"])["missing_groups"] == []


def test_published_intrinsics_project_a_point_onto_its_pixel(config_path):
    """A red marker 1.5 m in front of the (rolled) chest camera, off-axis: its
    centroid in the image is where fx, fy, cx, cy and the camera pose put it."""
    import mujoco

    config = load_renderer_config(config_path)
    cam = dataclasses.replace(config.cameras["chest"], width=160, height=120)
    rig = camera_rig.CameraRig(models.path(config.model.path), config, [cam])
    try:
        rig.render("chest")
        r = rig._renderers[(160, 120)]
        cid = rig.model.camera("chest").id
        rot = rig.data.cam_xmat[cid].reshape(3, 3)  # columns: camera x (right), y (up), z (backwards)
        point = rig.data.cam_xpos[cid] + rot @ np.array([0.5, -0.3, -1.5])
        r.update_scene(rig.data, cid, rig._scene_option)
        scn = r.scene
        mujoco.mjv_initGeom(scn.geoms[scn.ngeom], mujoco.mjtGeom.mjGEOM_SPHERE, np.array([0.02, 0, 0]), point,
                            np.eye(3).reshape(-1), np.array([1.0, 0.0, 0.0, 1.0], dtype=np.float32))
        scn.geoms[scn.ngeom].emission = 1.0
        scn.ngeom += 1
        scn.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        image = r.render().astype(int)
    finally:
        rig.close()
    red = (image[:, :, 0] > 180) & (image[:, :, 1] < 60) & (image[:, :, 2] < 60)
    assert red.sum() > 3
    vs, us = np.nonzero(red)
    intr = cam.intrinsics()
    u, v = intr.project(np.array([0.5, 0.3, 1.5]))  # optical frame: x right, y down, z forward
    # 0.3 px: a 1 % focal length error or cx = w/2 instead of (w-1)/2 would fail
    assert abs(us.mean() - u) < 0.3 and abs(vs.mean() - v) < 0.3


def test_configured_distortion_warps_the_image_but_not_its_centre(config_path):
    config = load_renderer_config(config_path)
    plain = dataclasses.replace(config.cameras["top_back"], width=W, height=H)
    barrel = dataclasses.replace(plain, distortion=(-0.35, 0.1, 0.0, 0.0, 0.0))
    images = []
    for cam in (plain, barrel):
        rig = camera_rig.CameraRig(models.path(config.model.path), config, [cam])
        try:
            images.append(rig.render("top_back").astype(int))
        finally:
            rig.close()
    centre = (slice(H // 2 - 2, H // 2 + 2), slice(W // 2 - 2, W // 2 + 2))
    assert np.abs(images[0][centre] - images[1][centre]).max() < 30
    assert changed_fraction(images[0].astype(np.uint8), images[1].astype(np.uint8)) > 0.05


_VENDOR_URDF = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "alohamini2" / "urdf" / "alohamini2.urdf"


@pytest.mark.skipif(not _VENDOR_URDF.exists(), reason=f"vendor URDF not found at {_VENDOR_URDF} (reference data, not part of the project)")
def test_a_vendor_urdf_is_rendered_with_joints_mapped_by_name(tmp_path):
    data = models.load_yaml("alohamini2/renderer.yaml")
    data["model"] = {"path": str(_VENDOR_URDF),
                     "base_joints": ["root_x_axis_joint", "root_y_axis_joint", "root_z_rotation_joint"],
                     "lift_joint": "vertical_move", "base_yaw_offset_rad": 1.5707963267948966}
    data["camera_defaults"].update(width=W, height=H)
    data["cameras"]["left_wrist"].update(enabled=True, rate_hz=1000.0)
    path = tmp_path / "urdf.yaml"
    path.write_text(yaml.safe_dump(data))
    node = PacedNode(full_state(overrides={"left_gripper": 0.0}) + [TICK]
                     + [("joint_states", arms(overrides={"left_gripper": 0.7})), TICK])
    clock = itertools.count(start=10**9, step=20_000_000)
    renderer.main(["--config", str(path), "--viewer", "off", "--cameras", "left_wrist"], node=node,
                  clock=lambda: next(clock))
    assert any("MISSING mesh" in str(log) for log in node.logs)
    frames = node.images("left_wrist")
    images = [frames[0], frames[-1]]
    assert images[0].std() > 5
    assert changed_fraction(images[0], images[1]) > 0.01  # the vendor jaw moves in its own wrist camera


def test_with_no_window_and_no_cameras_the_renderer_says_so_and_ends(config_path):
    """Headless with ``--cameras none`` (the shipped dataflows without a
    display): one diagnostics message, no input read, no model loaded."""
    events = [event("joint_states", arms()), event("lift", lift(0.3)), event("odom", odom()), event(*TICK)]
    node = PacedNode(list(events))
    state = renderer.main(["--config", config_path, "--viewer", "off", "--cameras", "none",
                           "--model", "/nonexistent/model.xml"], node=node)
    assert state == "off"
    assert [o for o, _, _ in node.sent] == ["diagnostics"]
    diag = node.diagnostics()
    assert diag["level"] == "ok" and diag["message"].startswith("idle: no window and no cameras")
    assert json.loads(diag["details_json"])["idle"] is True
    assert node.next() is not None  # its inputs were left unread
