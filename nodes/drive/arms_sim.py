"""`arms` node, sim variant: the two arms' servo buses, as the sim sees them.

Inputs:  joint_commands (JointCommands from ik), sim_joint_states (JointState
         from the MuJoCo `sim` node)
Outputs: servo_targets (JointCommands actually handed to the actuators, with
         positions on the servos' 4096-tick grid), joint_states (JointState read
         back at encoder resolution), diagnostics

Same ids and outputs as the Feetech hardware variant, so the rest of the graph
cannot tell them apart. Commands are name-addressed; a command naming unknown
joints, or lacking any, is rejected whole and the last accepted one stands.
Every command passes the arms' command limits
(:class:`~teledora.operators.drive.arm_command_limits.ArmCommandLimits`, joint
ranges from the model the robot profile names): a non-finite or absurd value
rejects the command, positions outside their joint range and feedforward over
its cap are clamped and counted.

Env: TELEDORA_PROFILE (default alohamini2/profile.yaml).
"""

from __future__ import annotations

import numpy as np
from teledora.models.config_files import load_node_profile
from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.servo_quantization import (
    quantize_rad,
    quantize_rad_within,
)

from teledora import models
from teledora.runtime.node_io import NodeIO, make_node, node_id


def main(argv: list[str] | None = None, node=None) -> None:
    profile = load_node_profile()
    joints = profile.arm_joint_names
    limits = ArmCommandLimits.from_mjcf(models.path(profile.model).read_text(), profile)  # ranges only: no MuJoCo
    io = NodeIO(make_node(node), node_id("arms"))
    while True:
        batch = io.next_batch(1.0)
        if batch is None:
            break
        for event in io.newest(batch, {"joint_commands", "sim_joint_states"}):
            if event["type"] != "INPUT":
                continue
            if event["id"] == "joint_commands":
                msg = io.decode(event, "JointCommands")
                if msg is None:
                    continue
                try:
                    require_joint_names(msg["names"], joints)
                    bounded = limits.bound(msg["names"], msg["q_ref"], msg["dq_ref"])
                except (MessageError, CommandRejected) as exc:
                    io.reject(f"joint_commands: {exc}")
                    continue
                if io.recording_hold(io.clock()):
                    continue  # safe stop: the arms hold the last target they were given
                if bounded.clamps:
                    io.clamp(f"joint_commands: {bounded.describe()}")
                q_ref, dq_ref = bounded.value
                lower, upper = np.array([limits.ranges[n] for n in msg["names"]]).T
                msg["q_ref"], msg["dq_ref"] = quantize_rad_within(q_ref, lower, upper), dq_ref
                io.send("servo_targets", "JointCommands", msg)
            elif event["id"] == "sim_joint_states":
                msg = io.decode(event, "JointState")
                if msg is None:
                    continue
                try:  # the arms report all their joints or nothing: a partial state is refused whole
                    require_joint_names(msg["names"], joints)
                except MessageError as exc:
                    io.reject(f"sim_joint_states: {exc}", "missing_joint")
                    continue
                msg["position"] = quantize_rad(msg["position"])
                io.send("joint_states", "JointState", msg)
        io.diag.details["limits"] = limits.counts()
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
