"""teleop node: XR controller reports -> arm targets, base and lift commands.

Inputs: ``controllers`` (XrControllers), ``tick`` (dora timer, ~100 Hz, so
timeouts are evaluated without XR traffic), ``joint_states`` (JointState of the
arms) and ``lift`` (LiftState), the last two for the robot's current grip poses
(MuJoCo forward kinematics), which (re)anchoring needs.
Outputs: ``arm_targets``, ``base_cmd``, ``lift_cmd``, ``state``, ``diagnostics``.

Outputs carry dora metadata ``xr_seq`` / ``xr_stamp_ns``: the newest XR report
they reflect (latency tracing). Every controller report is applied in order (button edges must not be lost);
one step is published per batch of queued events that held a report, so a
backlog collapses instead of growing; a tick publishes only when no step went
out within the last tick period. Joint and lift states are applied in order (cheap:
forward kinematics runs lazily once per step), so an invalid newest one does not
hide the valid one before it.

Args: ``--config`` teleop YAML (default: the shipped alohamini2/teleop.yaml),
``--model`` MJCF for forward kinematics (default alohamini2/alohamini2.xml).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import mujoco
import numpy as np
import yaml

from teledora import models
from teledora.nodes.dora_io import NodeIO, make_node, newest_per_input, next_batch, node_id
from teledora.operators.rotations import matrix_to_quat_xyzw
from teledora.operators.teleop_scheme import HANDS, TeleopConfig, TeleopScheme
from teledora.operators.xr_frames import Pose

LIFT_ZERO_OFFSET_M = 0.3  # lift height 0 (floor-homed) is vertical_move = -0.3 m
_TICK_REPUBLISH_NS = 9_000_000
_OUTPUTS = (("arm_targets", "ArmTargets"), ("base_cmd", "BaseCommand"), ("lift_cmd", "LiftCommand"), ("state", "TeleopState"))


class JointStateError(ValueError):
    """A joint state that cannot be applied to the kinematic model."""


class GripKinematics:
    """Grip-site poses in base_link from arm joint positions and lift height (MuJoCo FK).

    Args:
        model_path: MJCF with sites ``left_grip``/``right_grip`` and body ``base_link``.
    """

    def __init__(self, model_path: Path) -> None:
        self.model = mujoco.MjModel.from_xml_path(str(model_path))
        self.data = mujoco.MjData(self.model)
        self._qadr = {}
        for j in range(self.model.njnt):
            name = mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if int(self.model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
                self._qadr[name] = int(self.model.jnt_qposadr[j])
        self.required = sorted(
            n for n in self._qadr if (n.startswith("left_") or n.startswith("right_")) and not n.endswith("gripper")
        )
        self._sites = {h: mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, f"{h}_grip") for h in HANDS}
        self._base = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, "base_link")
        self.have_joints = False
        self._dirty = True
        self._grips: dict[str, Pose | None] = dict.fromkeys(HANDS)

    def set_joints(self, names: Sequence[str], positions: np.ndarray) -> None:
        """Applies a name-addressed arm state; rejected whole if names are unknown or incomplete."""
        unknown = sorted(set(names) - set(self._qadr))
        if unknown:
            raise JointStateError(f"unknown joint names {unknown}")
        missing = sorted(set(self.required) - set(names))
        if missing:
            raise JointStateError(f"missing arm joints {missing}")
        for n, v in zip(names, positions):
            if n in ("base_x", "base_y", "base_yaw"):
                continue  # grips are wanted in base_link: the planar base stays at the origin
            self.data.qpos[self._qadr[n]] = float(v)
        self.have_joints = True
        self._dirty = True

    def set_lift_height(self, height_m: float) -> None:
        self.data.qpos[self._qadr["vertical_move"]] = float(height_m) - LIFT_ZERO_OFFSET_M
        self._dirty = True

    def grips(self) -> dict[str, Pose | None]:
        """Current grip poses in base_link (None until a joint state has arrived)."""
        if not self.have_joints:
            return dict.fromkeys(HANDS)
        if self._dirty:
            mujoco.mj_kinematics(self.model, self.data)
            r_base = self.data.xmat[self._base].reshape(3, 3)
            p_base = self.data.xpos[self._base]
            for h, sid in self._sites.items():
                r = r_base.T @ self.data.site_xmat[sid].reshape(3, 3)
                p = r_base.T @ (self.data.site_xpos[sid] - p_base)
                self._grips[h] = Pose(p.copy(), matrix_to_quat_xyzw(r))
            self._dirty = False
        return dict(self._grips)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="teleop", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="teleop YAML (default: shipped alohamini2/teleop.yaml)")
    ap.add_argument("--model", type=Path, default=None, help="MJCF for forward kinematics")
    return ap.parse_args(argv)


def load_config(path: Path | None) -> TeleopConfig:
    if path is None:
        return TeleopConfig.from_mapping(models.load_yaml("alohamini2/teleop.yaml"))
    with open(path) as f:
        return TeleopConfig.from_mapping(yaml.safe_load(f) or {})


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    scheme = TeleopScheme(load_config(args.config))
    kin = GripKinematics(args.model or models.path("alohamini2/alohamini2.xml"))
    io = NodeIO(make_node(node), node_id("teleop"), clock)
    last_publish_ns = -(10**18)
    trace: dict[str, int] = {}  # the XR report behind these outputs, for latency tracing

    def publish(now_ns: int) -> None:
        nonlocal last_publish_ns
        out = scheme.step(now_ns, kin.grips())
        for output, kind in _OUTPUTS:
            io.send(output, kind, getattr(out, output), dict(trace))
        last_publish_ns = now_ns
        if out.state["events"]:
            io.diag.details["last_events"] = out.state["events"][-8:]

    while (batch := next_batch(io.node)) is not None:
        reported = ticked = False
        for event in newest_per_input(batch, {"tick"}):
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep draining until the stream ends
            eid = event["id"]
            if eid == "controllers":
                msg = io.decode(event, "XrControllers")
                if msg is not None:
                    scheme.on_controllers(msg, clock())
                    trace.update(xr_seq=int(msg["seq"]), xr_stamp_ns=int(msg["stamp_ns"]))
                    reported = True
            elif eid == "tick":
                ticked = True
            elif eid == "joint_states":
                msg = io.decode(event, "JointState")
                if msg is not None:
                    try:
                        kin.set_joints(msg["names"], msg["position"])
                    except JointStateError as exc:
                        io.reject(f"joint_states: {exc}")
            elif eid == "lift":
                msg = io.decode(event, "LiftState")
                if msg is not None:
                    kin.set_lift_height(msg["height_m"])
            else:
                io.reject(f"unexpected input {eid!r}")
        now = clock()
        if reported or (ticked and now - last_publish_ns >= _TICK_REPUBLISH_NS):
            publish(now)
        io.diag.details.update(
            estop_latched=scheme.estop_latched, arms_paused=scheme.arms_paused, reset_count=scheme.reset_count,
            robot_state_known=kin.have_joints,
        )
        level = "warn" if scheme.estop_latched or not kin.have_joints else "ok"
        io.diag.set_status(level, "e-stop latched" if scheme.estop_latched else ("no joint state yet" if not kin.have_joints else ""))
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
