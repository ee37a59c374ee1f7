"""episodes node with dora.testing.MockNode: chords become EpisodeMark messages."""

from __future__ import annotations

from teledora.nodes.teleop import episodes
from teledora.operators.contract.messages import decode

from tests.nodes.teleop.test_teleop import MS, Clock, OneByOne, controllers, hand


def press(t, lx=False, ly=False, ra=False, rb=False):
    return ("controllers", controllers(t, left=hand(t, primary=lx, secondary=ly),
                                       right=hand(t, (0.3, -0.2, 1.0), primary=ra, secondary=rb)))


def test_chords_mark_start_keep_and_discard():
    seq = [press(0), press(10 * MS, True, True), press(20 * MS),            # start
           press(30 * MS, True, True), press(40 * MS),                     # keep
           press(50 * MS, True, True), press(60 * MS),                     # start
           press(70 * MS, ra=True, rb=True), press(80 * MS),               # discard
           press(90 * MS, ra=True, rb=True), press(100 * MS)]              # nothing open: refused
    node = OneByOne(seq)
    episodes.main(["--task", "pick up the cube", "--port", "0"], node=node, clock=Clock())
    marks = [decode("EpisodeMark", m) for m in node.outputs["marks"]]
    assert [m["event"] for m in marks] == ["start", "keep", "start", "discard"]
    assert {m["task"] for m in marks} == {"pick up the cube"}
    assert all(a["stamp_ns"] < b["stamp_ns"] for a, b in zip(marks, marks[1:]))
