"""The node config dora hands a node: data inputs read despite its YAML tags."""

from __future__ import annotations

from teledora.runtime.event_stream import _data_inputs

# the shape dora-rs 1.1.0 puts in DORA_NODE_CONFIG (abridged)
DORA_CONFIG = """dataflow_id: 01a2324f-8f4c-749f-b6ae-04af2d63e322
node_id: base
run_config:
  inputs:
    base_cmd: teleop/base_cmd
    tick: dora/timer/millis/20
    recorder_status:
      source: recorder/status
      queue_size: 10
  outputs: []
daemon_communication: !Tcp
  socket_addr: 127.0.0.1:46025
dynamic: false
"""


def test_data_inputs_of_a_tagged_dora_config_skip_timers():
    assert _data_inputs(DORA_CONFIG) == frozenset({"base_cmd", "recorder_status"})


def test_unreadable_config_gives_no_inputs():
    assert _data_inputs("run_config: [unclosed") == frozenset()
