"""teleop node: a controller report stamped beyond the scheme's future tolerance
(teleop.yaml future_stamp_tolerance_s) is refused by the scheme, counted as a
rejection, and raises the diagnostics level.

The report is 0.2 s ahead: past the scheme's tolerance, short of anything a
decoder would refuse for its stamp alone, so the scheme's own guard is what
acts."""

from __future__ import annotations

import itertools
import json

from dora.testing import MockNode

from teledora.nodes.teleop import teleop
from teledora.operators.contract.messages import decode

from tests.nodes.teleop.test_teleop import LIFT, MS, OneByOne, controllers, hand, joints

NOW_NS = 1_000 * MS
AHEAD_NS = NOW_NS + 200 * MS  # 0.2 s ahead of the node's clock


def clock():
    """The node's clock near NOW_NS: a microsecond per reading."""
    return itertools.count(NOW_NS, 1_000).__next__


def test_a_report_from_the_future_is_rejected_and_raises_the_level():
    ahead = dict(left=hand(AHEAD_NS, stick=[0.0, -1.0]), right=hand(AHEAD_NS, (0.3, -0.2, 1.0)))
    sound = controllers(NOW_NS - 10 * MS)
    inputs = [LIFT, ("joint_states", joints(NOW_NS - 10 * MS)), ("controllers", sound), ("controllers", controllers(AHEAD_NS, **ahead))]
    node: MockNode = OneByOne(inputs)
    teleop.main([], node=node, clock=clock())
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    details = json.loads(diag["details_json"])
    assert diag["rejected"] == 2 and details["rejected_future_reports"] == 2  # one per hand
    assert diag["level"] == "warn" and "future_stamp_tolerance_s" in diag["message"]
    base = [decode("BaseCommand", b) for b in node.outputs["base_cmd"]]
    assert all(b["forward_m_s"] == 0.0 for b in base)  # the refused stick never drives
    state = decode("TeleopState", node.outputs["state"][-1])
    assert "left_future_stamp" in state["events"] and "right_future_stamp" in state["events"]


def test_sound_reports_reject_nothing():
    inputs = [("joint_states", joints()), LIFT, ("controllers", controllers(NOW_NS - 20 * MS)),
              ("controllers", controllers(NOW_NS - 10 * MS))]
    node = OneByOne(inputs)
    teleop.main([], node=node, clock=clock())
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 0 and json.loads(diag["details_json"])["rejected_future_reports"] == 0
