"""The policy node under dora's MockNode with its real inference worker and a small
LeRobot checkpoint made for the test: observations in, bounded commands out, and
the selector honouring a takeover and the e-stop on those commands."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dora.testing import MockNode

from teledora import models
from teledora.nodes.policy import policy
from teledora.operators.contract.messages import decode, encode
from teledora.operators.policy.authority import OPERATOR, POLICY, STOPPED, Authority, AuthorityConfig

LEROBOT_VERSION = "0.4.4"
MAKE_CHECKPOINT = Path(__file__).with_name("tiny_checkpoint.py")
MS = 1_000_000
PROFILE = models.load_profile()


def lerobot_python() -> Path | None:
    """The LeRobot environment's python, if tools/lerobot_env.sh has finished building it."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = Path(os.environ.get("TELEDORA_LEROBOT_VENV") or cache / "teledora" / f"lerobot-{LEROBOT_VERSION}")
    python = venv / "bin" / "python"
    return python if (venv / ".teledora-complete").exists() and python.exists() else None


PYTHON = lerobot_python()
needs_lerobot = pytest.mark.skipif(
    PYTHON is None, reason=f"LeRobot {LEROBOT_VERSION} environment not built (run tools/lerobot_env.sh; several GB)")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("policy") / "tiny_sac"
    subprocess.run([str(PYTHON), str(MAKE_CHECKPOINT), str(out)], check=True, timeout=600)
    return out


class Clock:
    """Deterministic host clock: 5 ms per reading."""

    def __init__(self) -> None:
        self._it = itertools.count(0, 5 * MS)

    def __call__(self) -> int:
        return next(self._it)


class OneByOne(MockNode):
    def drain(self):
        return []


def states(n: int):
    names = list(PROFILE.arm_joint_names)
    for k in range(n):
        q = [0.1 * math.sin(0.1 * k + i) for i in range(len(names))]
        q = [abs(v) if n.endswith("gripper") else v for v, n in zip(q, names)]
        yield "joint_states", encode("JointState", dict(stamp_ns=0, names=names, position=q, velocity=[], effort=[]))
        yield "odom", encode("Odometry", dict(stamp_ns=0, frame_id="odom", child_frame_id="base_link", x=0.0, y=0.0,
                                             yaw=0.0, vx=0.05, vy=0.0, wz=0.1))
        yield "lift_state", encode("LiftState", dict(stamp_ns=0, height_m=0.2, velocity_m_s=0.0, homed=True))


def run_node(argv, inputs):
    node = OneByOne(list(inputs))
    policy.main(argv, node=node, clock=Clock())
    return node


@needs_lerobot
def test_node_turns_observations_into_bounded_commands_that_the_selector_gates(checkpoint):
    node = run_node(["--checkpoint", str(checkpoint), "--python", str(PYTHON), "--device", "cpu",
                     "--max-state-age-s", "1000"], states(40))
    arms = [decode("ArmTargets", m) for m in node.outputs["arm_targets"]]
    bases = [decode("BaseCommand", m) for m in node.outputs["base_cmd"]]
    lifts = [decode("LiftCommand", m) for m in node.outputs["lift_cmd"]]
    assert len(arms) == len(bases) == len(lifts) >= 5
    for a, b, lift in zip(arms, bases, lifts):
        assert a["frame_id"] == PROFILE.base_frame and a["left"]["enabled"] and a["right"]["enabled"]
        assert math.hypot(b["forward_m_s"], b["left_m_s"]) <= PROFILE.base.max_linear_m_s * (1 + 1e-9)
        assert abs(b["yaw_rad_s"]) <= PROFILE.base.max_yaw_rad_s * (1 + 1e-9)
        assert abs(lift["velocity_m_s"]) <= PROFILE.lift.max_speed_m_s * (1 + 1e-9)
        assert a["stamp_ns"] == b["stamp_ns"] == lift["stamp_ns"]
    # actions differ step to step: they come from the network, not a constant
    assert len({round(a["left"]["position"][0], 9) for a in arms}) > 1
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    details = json.loads(diag["details_json"])
    assert details["policy"] == "sac" and details["steps"] == len(arms) and details["infer_ms_p50"] > 0
    # the policy's speeds reach past the caps in this checkpoint: the clamps are counted
    assert diag["clamped"] > 0

    # the selector replayed over those commands at their own stamps: the X+A hold hands over,
    # a clutch takes back at once, the e-stop stops everything, a silent policy drives nothing
    assert len(arms) >= 20
    stamps = [a["stamp_ns"] for a in arms]
    auth = Authority(AuthorityConfig(policy_timeout_s=0.2, handback_hold_s=(stamps[6] - stamps[1]) / 1e9))
    up = {"connected": True, "primary": False, "secondary": False, "squeeze": 0.0}
    reports = {0: {"left": up, "right": up}, 14: {"left": dict(up, secondary=True), "right": up},
               15: {"left": up, "right": up}}
    reports.update({k: {"left": dict(up, primary=True), "right": dict(up, primary=True)} for k in range(1, 8)})
    reports.update({k: {"left": dict(up, primary=True), "right": dict(up, primary=True)} for k in range(16, 18)})
    decisions = [auth.step(t, estop_latched=k >= 18, controllers=reports.get(k), policy_stamp_ns=t)
                 for k, t in enumerate(stamps)]
    drivers = [d.driver for d in decisions]
    assert drivers[:6] == [OPERATOR] * 6
    assert drivers[6:14] == [POLICY] * 8 and decisions[6].events == ("handback",)
    assert drivers[14] == OPERATOR and decisions[14].events == ("takeover",)
    assert drivers[15:18] == [OPERATOR] * 3  # the chord pressed again is not held long enough
    assert set(drivers[18:]) == {STOPPED}
    stale = Authority(AuthorityConfig(policy_timeout_s=0.2, handback_hold_s=(stamps[6] - stamps[1]) / 1e9))
    for k in range(7):
        stale.step(stamps[k], estop_latched=False, controllers=reports[k], policy_stamp_ns=stamps[k])
    assert stale.step(stamps[6] + 201 * MS, estop_latched=False).driver == STOPPED


@needs_lerobot
def test_a_missing_checkpoint_stops_the_node_with_the_reason(tmp_path):
    with pytest.raises(SystemExit, match="no checkpoint directory"):
        run_node(["--checkpoint", str(tmp_path / "none"), "--python", str(PYTHON)], states(1))


def test_without_lerobot_the_worker_says_what_is_missing(tmp_path):
    # the project's own interpreter has no torch: the worker reports it and the node stops, saying so
    (tmp_path / "ck").mkdir()
    with pytest.raises(SystemExit, match="ModuleNotFoundError"):
        run_node(["--checkpoint", str(tmp_path / "ck"), "--python", sys.executable], states(1))


def test_the_node_needs_a_checkpoint():
    node = OneByOne([])
    with pytest.raises(SystemExit, match="--checkpoint"):
        policy.main([], node=node, clock=Clock())
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["level"] == "error"
