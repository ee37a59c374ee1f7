"""dataflows/sim_policy.yml is sim.yml plus the policy node: the policy's three
commands go only to teleop's selector (and the recorder), never to a drive."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.dataflows.test_shared_memory_pools import SMALL_POOL_BYTES, pool_bytes

REPO = Path(__file__).resolve().parents[2]
POLICY_INPUTS = {"policy_arm_targets": "policy/arm_targets", "policy_base_cmd": "policy/base_cmd",
                 "policy_lift_cmd": "policy/lift_cmd"}


def nodes(name: str) -> dict[str, dict]:
    return {n["id"]: n for n in yaml.safe_load((REPO / "dataflows" / name).read_text())["nodes"]}


def source(spec) -> str:
    return spec["source"] if isinstance(spec, dict) else spec


def test_sim_policy_is_sim_plus_the_policy_node() -> None:
    sim, pol = nodes("sim.yml"), nodes("sim_policy.yml")
    assert set(pol) == set(sim) | {"policy"}
    for node_id, s in sim.items():
        p = pol[node_id]
        for key in ("path", "args", "outputs", "output_types", "shared_memory_pool_size"):
            assert p.get(key) == s.get(key), f"{node_id}.{key} differs from sim.yml"
        added = {k: v for k, v in p["inputs"].items() if k not in s["inputs"]}
        assert {k: p["inputs"][k] for k in s["inputs"]} == s["inputs"], f"{node_id}: sim.yml's inputs changed"
        if node_id == "teleop":
            assert {k: source(v) for k, v in added.items()} == POLICY_INPUTS
        elif node_id == "xr":  # the script waits for the policy's first command
            assert {k: source(v) for k, v in added.items()} == {"policy_ready": "policy/arm_targets"}
        elif node_id == "recorder":
            assert {source(v) for v in added.values()} == {f"policy/{o}" for o in pol["policy"]["outputs"]}
        else:
            assert not added, f"{node_id} takes policy inputs"
    # the operator plays the policy run's own script, not the demonstrator's seeded episodes
    wait_for = sim["xr"]["env"]["TELEDORA_XR_WAIT_FOR"] + ",policy_ready"
    assert pol["xr"]["env"] == dict(sim["xr"]["env"], TELEDORA_PICK_PLACE_SEED="", TELEDORA_XR_WAIT_FOR=wait_for)


def test_the_policy_node_reads_the_robots_state_and_only_teleop_and_the_recorder_read_it() -> None:
    pol = nodes("sim_policy.yml")
    assert {source(v) for v in pol["policy"]["inputs"].values()} == {"arms/joint_states", "base/odom", "lift/state"}
    assert pool_bytes(pol["policy"]["shared_memory_pool_size"]) == SMALL_POOL_BYTES
    readers = {n for n, spec in pol.items() for k, v in (spec.get("inputs") or {}).items()
               if source(v).startswith("policy/") and (n, k) != ("xr", "policy_ready")}
    assert readers == {"teleop", "recorder"}
    for name, kind in (("policy_arm_targets", "ArmTargets"), ("policy_base_cmd", "BaseCommand"), ("policy_lift_cmd", "LiftCommand")):
        assert pol["teleop"]["input_types"][name] == f"teledora/msgs/v1/{kind}"
