"""mocap node (sim): Motive-like poses of the base from the simulator's ground truth.

Inputs: ``ground_truth`` (GroundTruth from ``sim/ground_truth``: base x, y, yaw),
``tick`` (optional dora timer, e.g. ``dora/timer/millis/2``, so frames leave on
time between ground-truth samples). Outputs: ``pose`` (MocapPose at the rig's
rate, 120 Hz by default, stamped at exposure, with sub-millimetre noise, the
configured latency, tracking dropouts published as invalid and lost frames),
``diagnostics`` (~1 Hz). Same outputs as the hardware node
(:mod:`teledora.nodes.mocap.mocap_natnet`).

Args: ``--config`` mocap YAML (default: shipped alohamini2/mocap.yaml; the
``sim`` and ``rigid_body`` sections are used), ``--seed`` noise seed override.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.models.config_files import load_mocap_config, load_node_profile
from teledora.operators.mocap.mocap_simulator import MocapSimError, MocapSimulator

IDLE_WAIT_S = 0.5  # with no frame held: wake for diagnostics at least this often
MIN_WAIT_S = 0.0002  # a frame already due: take only what is queued, then send it


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="mocap_sim", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="mocap YAML (default: shipped)")
    ap.add_argument("--seed", type=int, default=None, help="noise seed (overrides sim.seed)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    cfg = load_mocap_config(args.config)
    sim_cfg = cfg.sim
    if args.seed is not None:
        sim_cfg = dataclasses.replace(sim_cfg, seed=args.seed)
    rig = MocapSimulator(sim_cfg, name=cfg.rigid_body.name or "alohamini2", frame_id=load_node_profile().world_frame)
    io = NodeIO(make_node(node), node_id("mocap"), clock)
    io.diag.set_status("warn", "waiting for ground_truth")

    def wait_s() -> float:
        # sleep until the next held frame falls due (frames are made when ground truth
        # arrives, which wakes the node anyway); with none held, until the next diagnostics
        due = rig.next_due_ns
        if due is None:
            return IDLE_WAIT_S
        return min(IDLE_WAIT_S, max(MIN_WAIT_S, (due - clock()) / 1e9))

    while (batch := io.next_batch(timeout_s=wait_s())) is not None:
        for event in io.newest(batch, {"tick"}):
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep going until the stream ends
            if event["id"] == "ground_truth":
                msg = io.decode(event, "GroundTruth")
                if msg is None:
                    continue
                try:
                    rig.add_truth(msg["stamp_ns"], msg["x"], msg["y"], msg["yaw"])
                except MocapSimError as exc:
                    io.reject(f"ground_truth: {exc}")
                    continue
                io.diag.set_status("ok", f"{sim_cfg.rate_hz:g} Hz")
            elif event["id"] != "tick":
                io.reject(f"unknown input {event['id']!r}")
        for pose in rig.due(clock()):
            io.send("pose", "MocapPose", pose)
        io.diag.dropped = rig.lost_packets
        io.diag.details.update(
            frames=rig.frames, lost_packets=rig.lost_packets, invalid_frames=rig.invalid_frames,
            skipped_frames=rig.skipped_frames, stale_truth=rig.stale_truth, pending=rig.pending, seed=sim_cfg.seed,
        )
        io.publish_diagnostics()
    for pose in rig.due(2**63 - 1):  # the stream ended: deliver what was already exposed
        io.send("pose", "MocapPose", pose)
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
