"""The latency benchmark's matching: a joint command tagged with the report
behind its targets times that report exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from xr_latency import analyse  # noqa: E402

MS = 1_000_000


def test_the_first_command_naming_a_report_times_it():
    rows = [
        {"id": "controllers", "recv_ns": 1 * MS, "stamp_ns": 0},
        {"id": "controllers", "recv_ns": 12 * MS, "stamp_ns": 11 * MS},
        {"id": "arm_targets", "recv_ns": 4 * MS, "stamp_ns": 2 * MS, "xr_stamp_ns": 0},
        # solved in the same step as the targets, received before the probe had them
        {"id": "joint_commands", "recv_ns": 3 * MS, "stamp_ns": 2 * MS, "xr_stamp_ns": 0},
        {"id": "joint_commands", "recv_ns": 9 * MS, "stamp_ns": 8 * MS, "xr_stamp_ns": 0},  # a tick's solve
        {"id": "joint_commands", "recv_ns": 14 * MS, "stamp_ns": 13 * MS, "xr_stamp_ns": -1},  # untagged
        {"id": "joint_commands", "recv_ns": 15 * MS, "stamp_ns": 14 * MS, "xr_stamp_ns": 11 * MS},
    ]
    got = analyse(rows, 0)
    np.testing.assert_allclose(got["xr->ik traced"], [3.0, 4.0])
    # the stamp matchings: lower finds the same step's solve, upper the tick after it
    np.testing.assert_allclose(got["xr->ik lower"], [3.0])
    np.testing.assert_allclose(got["xr->ik upper"], [9.0])
