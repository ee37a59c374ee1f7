"""The shared XR feed loop's direct Arrow conversion."""

from __future__ import annotations

import json

import pytest

from teledora.nodes.xr_feed_loop import controllers_array
from teledora.operators.messages import encode
from teledora.operators.xr_feed_format import FeedAssembler, parse_frame


@pytest.mark.parametrize("frame_kind", ["flu", "webxr"])
def test_direct_array_equals_the_contract_encoding(frame_kind):
    left = {"connected": True, "pose_valid": True, "position": [0.1, 1.2, -0.3], "orientation": [0.1, 0.2, 0.3, 0.9],
            "trigger": 0.5, "stick": [0.2, -1.0], "primary": True, "pose_ns": 990}
    raw = {"version": 1, "session": "s", "seq": 3, "sent_ns": 1000, "frame": frame_kind,
           "ui": {"estop": True}, "hands": {"left": left, "right": {"connected": False}}}
    msg = FeedAssembler("udp").assemble(parse_frame(json.dumps(raw)), 5_000)
    assert controllers_array(msg).equals(encode("XrControllers", msg))
