"""Each node process loads only the heavy libraries it uses.

Every node is its own Python process, so a module a node imports without
using it costs its resident memory in every run (OpenCV ~15 MB, MuJoCo ~25 MB,
TOPP-RA with the matplotlib it imports ~40 MB, scipy.interpolate ~20 MB). Each
case runs in a fresh interpreter: it imports the node module and, for the nodes
whose start-up reads configuration and builds models (where such imports hide,
e.g. ik.yaml's path settings pulling in the path planner), also runs the node's
``main`` against a ``MockNode`` that only stops. Then it lists which of the
heavy modules below are in ``sys.modules``; anything not allowed for that node
fails the test.

Covers the sim dataflow's nodes (start-up included) and the hardware variants
(import only: their start-up opens devices). The recorder and replayer are not
covered here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("mujoco", "mink", "cv2", "scipy", "scipy.interpolate", "matplotlib", "toppra", "PIL", "pandas",
         "pyarrow.compute", "pyarrow.dataset", "pyarrow.parquet", "foxglove", "rerun", "aiohttp", "OpenGL", "serial")
IK = {"mujoco", "mink", "scipy"}  # mink's QP layer (qpsolvers) imports scipy.sparse
MUJOCO = {"mujoco"}
RENDERING = {"mujoco", "OpenGL"}

# (module under teledora.nodes, argv for main or None for import only, heavy modules it may load)
CASES = [
    ("xr.xr_scripted", [], set()),
    ("teleop.teleop", [], IK),  # forward kinematics of the grips, and the IK
    ("drive.arms_sim", [], set()),  # joint ranges come from the MJCF text
    ("drive.base_sim", [], set()),
    ("drive.lift_sim", [], set()),
    ("estimation.flow_sim", [], set()),  # the image path (OpenCV) is off in estimation.yaml
    ("estimation.ekf_onboard", [], set()),
    ("mocap.mocap_sim", [], set()),
    ("teleop.episodes", None, set()),
    ("sim.sim", None, MUJOCO),
    ("lidar.lidar_sim", None, MUJOCO),
    ("lidar.scan_merger", None, MUJOCO),  # lidar mounts and the self-filter's bodies from the model
    ("rendering.renderer", None, RENDERING),
    ("cameras.cameras_sim", None, RENDERING),
    ("drive.arms_feetech", None, {"serial"}),
    ("drive.base_feetech", None, {"serial"}),
    ("drive.lift_feetech", None, {"serial"}),
    ("lidar.lidar_rplidar", None, {"serial"}),
    ("estimation.ekf_ardupilot", None, set()),
    ("mocap.mocap_natnet", None, set()),
    ("cameras.cameras_v4l2", None, set()),  # OpenCV only once a camera is opened
    ("xr.xr_udp", None, set()),
    ("xr.xr_webxr", None, {"aiohttp"}),
    ("viewing.viewer", None, set()),  # rerun only once its sink starts
]

PROBE = """
import importlib, json, sys
module = importlib.import_module(sys.argv[1])
argv = json.loads(sys.argv[2])
if argv is not None:
    from dora.testing import MockNode
    module.main(argv, node=MockNode([]))
print(json.dumps(sorted(m for m in json.loads(sys.argv[3]) if m in sys.modules)))
"""


def _node_env() -> dict[str, str]:
    """The environment a node starts with under ``teledora demo``: no dora or
    teledora settings, and no ``MUJOCO_GL`` (this suite sets ``egl``, which makes
    MuJoCo import PyOpenGL; the rendering nodes set it themselves)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("DORA_", "TELEDORA_")) and k != "MUJOCO_GL"}


@pytest.mark.parametrize("module, argv, allowed", CASES, ids=[c[0] for c in CASES])
def test_node_loads_only_the_heavy_modules_it_uses(module, argv, allowed):
    done = subprocess.run([sys.executable, "-c", PROBE, f"teledora.nodes.{module}", json.dumps(argv), json.dumps(HEAVY)],
                          capture_output=True, text=True, env=_node_env(), timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded - allowed == set(), f"{module} loads {sorted(loaded - allowed)} (allowed: {sorted(allowed)})"


def test_the_probe_sees_a_heavy_import():
    """The check itself can fail: a module that imports OpenCV is reported."""
    env = _node_env()
    done = subprocess.run([sys.executable, "-c", PROBE, "teledora.operators.estimation.floor_image_flow", "null",
                           json.dumps(HEAVY)], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []  # lazy: nothing until a frame is rendered
    code = PROBE.replace("print(", "module.FloorCamera; import cv2\nprint(")
    done = subprocess.run([sys.executable, "-c", code, "teledora.operators.estimation.floor_image_flow", "null",
                           json.dumps(HEAVY)], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert "cv2" in json.loads(done.stdout.strip().splitlines()[-1])
