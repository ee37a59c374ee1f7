"""The headset page's control rules (nodes/xr/web/page_controls.js), run in node:
which controls a page may use and the reason it shows when it may not, and when
its E-STOP counts as acknowledged. The browser test (test_page_controls.py) shows
the same rules on the real page; here they are checked over random histories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.browser.browser_needs import NEEDS_NODE
from hypothesis import given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent

pytestmark = NEEDS_NODE

TIMEOUT_MS = 1000
CONTROLS = ("estop", "pause", "release", "confirm", "enter")


@pytest.fixture(scope="module")
def page_rules():
    proc = subprocess.Popen(["node", str(HERE / "page_controls_runner.mjs")], cwd=HERE, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def ask(request):
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield ask
    proc.stdin.close()
    proc.wait(10)


def link(**kw):
    d = dict(hasToken=True, paired=False, clocked=False, everPaired=False, refusedCode="", refusedText="")
    d.update(kw)
    return d


LIVE = link(paired=True, clocked=True, everPaired=True)


@pytest.mark.parametrize("state, reason", [
    (link(hasToken=False), "pairing token missing: open the address the robot printed"),
    (link(hasToken=False, refusedCode="bad_token", refusedText="pairing token missing"),
     "pairing token missing: open the address the robot printed"),
    (link(refusedCode="bad_token", refusedText="pairing token wrong"),
     "pairing token wrong: open the address the robot printed"),
    (link(refusedCode="busy", refusedText="another client (1.2.3.4) is in control"),
     "not paired: another client (1.2.3.4) is in control"),
    (link(), "not paired: open the address the robot printed"),
    (link(everPaired=True), "link lost: reconnecting…"),
    (link(paired=True, everPaired=True), "not paired yet: waiting for the robot’s first clock ping"),
])
def test_a_page_that_cannot_reach_the_robot_disables_every_control_and_says_why(page_rules, state, reason):
    for vr in (True, False):
        got = page_rules({"controls": [state, {"estop_latched": True, "release_armed": False}, vr]})
        assert got["reason"] == reason
        assert got["enabled"] == {name: False for name in CONTROLS}
        assert got["enterReason"] == reason  # Enter VR is refused for the same reason


def test_a_paired_page_offers_the_controls_its_state_allows(page_rules):
    def enabled(state, vr=True):
        got = page_rules({"controls": [LIVE, state, vr]})
        assert got["reason"] == ""
        return {k for k, v in got["enabled"].items() if v}, got["confirmHidden"], got["enterReason"]

    assert enabled(None) == ({"estop", "pause", "release", "confirm", "enter"}, False, "")  # no state: both steps
    assert enabled({"estop_latched": False, "release_armed": False}) == ({"estop", "pause", "confirm", "enter"}, True, "")
    assert enabled({"estop_latched": True, "release_armed": False}) == (
        {"estop", "pause", "release", "confirm", "enter"}, True, "")
    assert enabled({"estop_latched": True, "release_armed": True}) == ({"estop", "pause", "confirm", "enter"}, False, "")
    assert enabled(None, vr=False) == ({"estop", "pause", "release", "confirm"}, False,
                                       "WebXR immersive-vr is not available in this browser")


def test_a_stop_is_acknowledged_only_by_a_latched_state_past_its_frame(page_rules):
    views = page_rules({"timeout": TIMEOUT_MS, "ack": [
        ["press", 10, 0],
        ["state", {"page_seq": 9, "estop_latched": True}, 5],    # latched, but before the press's frame
        ["state", {"page_seq": 12, "estop_latched": False}, 8],  # past it, not latched (yet)
        ["state", {"estop_latched": True}, 9],                   # no page_seq: says nothing
        ["state", {"page_seq": 12, "estop_latched": True}, 20],
        ["view", None, 5000],
        ["state", {"page_seq": 30, "estop_latched": False}, 6000],  # released since
    ]})
    assert [v["phase"] for v in views] == ["sent", "sent", "sent", "sent", "acked", "acked", "idle"]
    assert views[0]["label"] == "E-STOP sent…"
    assert views[4]["label"] == "STOP LATCHED (acknowledged)" and "20 ms" in views[4]["detail"]
    assert "not a check of the motors" in views[4]["detail"]
    assert views[6]["label"] == "E-STOP"


def test_no_acknowledgement_in_time_is_a_warning_and_a_late_one_still_counts(page_rules):
    views = page_rules({"timeout": TIMEOUT_MS, "ack": [
        ["press", 4, 0], ["view", None, TIMEOUT_MS], ["view", None, TIMEOUT_MS + 1],
        ["state", {"page_seq": 4, "estop_latched": True}, 3000]]})
    assert [v["phase"] for v in views] == ["sent", "sent", "unacked", "acked"]
    assert views[2]["label"] == "NOT ACKNOWLEDGED — use the physical stop"
    # a press no frame could carry is never acknowledged
    views = page_rules({"timeout": TIMEOUT_MS, "ack": [
        ["press", None, 0], ["state", {"page_seq": 99, "estop_latched": True}, 1]]})
    assert [v["phase"] for v in views] == ["unacked", "unacked"] and views[0]["detail"] == "the press could not be sent"


@st.composite
def histories(draw):
    """Presses (frame seqs rising, now and then none sent), teleop states (page_seq around them, or
    missing, latched or not) and plain looks at the button, at rising times."""
    t, seq, ops = 0, 0, []
    for _ in range(draw(st.integers(1, 25))):
        t += draw(st.integers(0, 700))
        kind = draw(st.sampled_from(["press", "state", "state", "view"]))
        if kind == "press":
            seq += draw(st.integers(1, 4))
            ops.append(["press", None if draw(st.integers(0, 9)) == 0 else seq, t])
        elif kind == "state":
            page_seq = draw(st.one_of(st.none(), st.integers(max(0, seq - 3), seq + 3)))
            state = {"estop_latched": draw(st.booleans())}
            if page_seq is not None:
                state["page_seq"] = page_seq
            ops.append(["state", state, t])
        else:
            ops.append(["view", None, t])
    return ops


def expected(ops, k):
    """The phase after op ``k``, read off the history: the last press so far, then the first state
    after it that applied its frame and is latched, then the first such state not latched."""
    presses = [i for i in range(k + 1) if ops[i][0] == "press"]
    if not presses:
        return "idle"
    p = presses[-1]
    _, press_seq, press_t = ops[p]
    past = [i for i in range(p + 1, k + 1) if ops[i][0] == "state" and press_seq is not None
            and ops[i][1].get("page_seq") is not None and ops[i][1]["page_seq"] >= press_seq]
    acked = next((i for i in past if ops[i][1]["estop_latched"]), None)
    if acked is not None:
        released = next((i for i in past if i > acked and not ops[i][1]["estop_latched"]), None)
        return "idle" if released is not None else "acked"
    if press_seq is not None and ops[k][2] - press_t <= TIMEOUT_MS:
        return "sent"
    return "unacked"


@settings(max_examples=300, deadline=None)
@given(ops=histories())
def test_the_button_never_claims_an_acknowledgement_the_node_did_not_give(page_rules, ops):
    views = page_rules({"timeout": TIMEOUT_MS, "ack": ops})
    assert [v["phase"] for v in views] == [expected(ops, k) for k in range(len(ops))]
