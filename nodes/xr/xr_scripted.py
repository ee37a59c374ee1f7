"""`xr` node, scripted variant: plays an operator script as controller reports.

Outputs: controllers (XrControllers), diagnostics
Inputs:  optional; the node paces itself and exits when the script ends,
         which ends the demo dataflow, or when dora asks it to stop. With
         TELEDORA_XR_WAIT_FOR=<input id> the script starts only once that input
         has delivered a message (the demo waits for the arms' first joint
         state, as a person waits for the robot to come up).

Env: TELEDORA_XR_SCRIPT (a YAML file, default the shipped demo script),
     TELEDORA_XR_RATE_HZ (default: xr/controllers in rates.yaml),
     TELEDORA_SIM_SPEED (default 1.0).
"""

from __future__ import annotations

import os
import time
from teledora.models.config_files import load_demo_script, load_rate_table
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.scripted_operator import ScriptedOperator


def _wait_for_input(io: NodeIO, input_id: str) -> tuple[bool, bool]:
    """Blocks until ``input_id`` delivers a message or the stream ends.

    Returns (arrived, stop_seen): whether the input delivered, and whether a
    STOP came with it (the script then plays one report and stops)."""
    while (batch := io.next_batch()) is not None:
        for i, event in enumerate(batch):
            if event.get("type") == "INPUT" and event.get("id") == input_id:
                return True, any(later.get("type") == "STOP" for later in batch[i + 1:])
            if event.get("type") == "STOP":
                return False, True
    return False, False


def _stop_requested(io: NodeIO) -> bool:
    """True once dora asks the node to stop (`dora stop`, Ctrl-C, --stop-after)
    or its event stream has ended."""
    batch = io.next_batch(timeout_s=0)
    return batch is None or any(event.get("type") == "STOP" for event in batch)


def main(argv: list[str] | None = None, node=None, clock=time.monotonic, sleep=time.sleep) -> None:
    script = ScriptedOperator(load_demo_script(os.environ.get("TELEDORA_XR_SCRIPT") or None))
    rate_hz = float(os.environ.get("TELEDORA_XR_RATE_HZ") or load_rate_table().topic("xr/controllers").sim_hz)
    speed = float(os.environ.get("TELEDORA_SIM_SPEED", "1.0"))
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # plays until the script ends or STOP
    wait_for = os.environ.get("TELEDORA_XR_WAIT_FOR", "").strip()
    stop_seen = False
    if wait_for:
        arrived, stop_seen = _wait_for_input(io, wait_for)
        if not arrived:
            io.log("warn", f"stopped before {wait_for!r} delivered anything: script not played")
            return
    io.log("info", f"scripted operator: {script.duration_s:.1f} s at {rate_hz:.0f} Hz")
    start = clock()
    seq = 0
    while True:
        t = (clock() - start) * speed
        io.send("controllers", "XrControllers", script.report(min(t, script.duration_s), time.time_ns(), seq))
        seq += 1
        io.publish_diagnostics()
        if t >= script.duration_s or stop_seen or _stop_requested(io):
            break
        next_t = start + seq / rate_hz / speed
        sleep(max(0.0, next_t - clock()))
    io.publish_diagnostics(force=True)
    io.log("info", f"script finished after {seq} reports")


if __name__ == "__main__":
    main()
