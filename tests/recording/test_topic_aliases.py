"""A run recorded when the IK was a node of its own reads under today's names."""

from __future__ import annotations

from teledora.operators.contract.messages import encode
from teledora.recording import RunReader, RunWriter
from teledora.recording.lerobot_export import ARM_ACTION_SOURCES, _find_topic


def old_run(tmp_path, with_wiring: bool):
    run = tmp_path / ("wired" if with_wiring else "bare")
    manifest = {"recorded_inputs": {"ik__joint_commands": "ik/joint_commands", "ik__journal": "ik/journal"}} if with_wiring else {}
    w = RunWriter(run, manifest, start_ns=0)
    cmd = encode("JointCommands", {"stamp_ns": 1, "names": ["a"], "q_ref": [0.1], "dq_ref": [0.0], "status": "ok"})
    w.append("ik__joint_commands", cmd, {"seq": 0}, recv_ns=1)
    w.append("ik__diagnostics", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {"seq": 0}, recv_ns=1)
    w.close(2)
    return RunReader(run)


def test_the_ik_nodes_joint_commands_read_as_teleops(tmp_path):
    for wired in (True, False):
        reader = old_run(tmp_path, wired)
        sources = reader.sources()
        assert sources["ik__joint_commands"] == ("teleop", "joint_commands")
        assert sources["ik__diagnostics"] == ("ik", "diagnostics")  # the old node's own health stays its own
        assert reader.topics_of("teleop") == {"ik__joint_commands": "joint_commands"}
        # the dataset export finds the arm action where a new run has it
        assert _find_topic(reader, ARM_ACTION_SOURCES) == "ik__joint_commands"
        assert [m.topic for m in reader.iter_topic("ik__joint_commands")] == ["ik__joint_commands"]
