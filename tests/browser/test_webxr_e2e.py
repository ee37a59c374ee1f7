"""End to end in a real browser: headless Chromium + IWER (emulated Quest 3) opens the
WebXR page over HTTPS, pairs, moves controllers and presses buttons; the xr_webxr
node and the teleop node run live, wired like the dataflow (xr/controllers ->
teleop, teleop/state -> xr), and the test asserts what teleop commanded.

The stop in the operator's hand is driven the way an operator would in VR: the
grip gesture (both squeezes), and the panel drawn in the scene, pointed at with
the right controller's ray and clicked with its trigger. The episodes node runs
too (xr/controllers -> episodes, episodes/state -> xr): the panel's episode half
starts, keeps and (in two steps) discards episodes, and the marks come out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.browser.browser_needs import HERE, IWER, NEEDS_BROWSER
from teledora.fakes.emulated_headset import run_headset
from teledora.operators.contract.messages import decode

pytestmark = NEEDS_BROWSER


TASK = "stack the red cube on the blue one"


def test_headset_page_drives_teleop(tmp_path: Path):
    # timeouts are the table tests' business; here a loaded 2-core machine must not turn
    # scheduling hiccups into pose timeouts, so the e2e run gets generous ones
    run = run_headset(HERE / "webxr_driver.mjs", tmp_path, IWER, {"pose_timeout_s": 5.0, "input_timeout_s": 5.0},
                      # the discard's confirmation window widened for the same reason
                      episodes_args=["--task", TASK, "--port", "0", "--discard-confirm-s", "30"])
    xr_node, teleop_node, steps = run.xr, run.teleop, run.steps
    names = [s["step"] for s in steps]
    assert run.returncode == 0 and "done" in names, f"driver failed: {run.stdout}\n{run.stderr}"

    by_step = {s["step"]: s for s in steps}
    assert "pairing token" in by_step["bad_token"]["reason"]
    assert "in control" in by_step["second_client"]["reason"]
    assert "E-STOP" in by_step["estop_latched"]["robot"]
    assert "E-STOP" in by_step["gesture_latched"]["robot"]

    controllers = [decode("XrControllers", v) for v in xr_node.outputs["controllers"]]
    assert all(c["source"] == "webxr" for c in controllers)
    assert max(c["right"]["epoch"] for c in controllers) == 2  # the reconnect made a new epoch

    states = [decode("TeleopState", v) for v in teleop_node.outputs["state"]]
    xr_seqs = [m.get("xr_seq", -1) for m in teleop_node.metadata["state"]]
    events = [e for s in states for e in s["events"]]
    assert "left_clutch_on" in events and "left_clutch_off" in events
    assert "right_epoch_2" in events
    assert states[-1]["estop_latched"] and states[-1]["arms_paused"]

    # each stop latched on the very report that carried it: the state published for the
    # batch holding that report is latched, the one before it was not
    latches = [i for i in range(1, len(states)) if states[i]["estop_latched"] and not states[i - 1]["estop_latched"]]
    gesture = next(c for c in controllers if c["left"]["squeeze"] >= 0.9 and c["right"]["squeeze"] >= 0.9)
    scene_stop = next(c for c in controllers if c["ui_estop"])
    dom_stop = next(c for c in controllers if c["ui_estop"] and c["seq"] > scene_stop["seq"] + 1
                    and not controllers[controllers.index(c) - 1]["ui_estop"])
    assert len(latches) == 3, [states[i]["events"] for i in latches]
    for i, report, why in zip(latches, (gesture, scene_stop, dom_stop), ("grip_gesture", "page_stop", "page_stop")):
        assert xr_seqs[i - 1] < report["seq"] <= xr_seqs[i], (why, xr_seqs[i - 1], report["seq"], xr_seqs[i])
        assert f"estop_latched:{why}" in states[i]["events"]
    # the scene's E-STOP was the right hand's trigger press, and the scene showed the latch after it
    act, shown = by_step["scene_estop"]["act"], by_step["scene_estop"]["shown"]
    assert act["name"] == "estop" and act["hand"] == "right"
    assert shown["latched"] and shown["frame"] > act["frame"]

    # release: refused while the grips were held, inactive while armed, two steps, cancelled by a grip
    assert by_step["release_held"]["sent"] == 1
    held = by_step["release_held_state"]["state"]
    assert held["estop_latched"] and not held["release_armed"]
    assert "estop_release_refused:left_squeeze+right_squeeze" in events
    assert by_step["release_arm"]["sent"] == 1
    again = by_step["release_again"]
    assert again["sent"] == 0 and again["state"]["estop_latched"] and again["state"]["release_armed"]
    assert by_step["release_confirm"]["sent"] == 1
    assert not by_step["released"]["state"]["estop_latched"] and by_step["released"]["state"]["arms_paused"]
    assert "estop_release_cancelled:left_squeeze" in events
    assert not by_step["cancelled"]["state"]["release_armed"] and by_step["cancelled"]["state"]["estop_latched"]
    # every release was the confirmation of an arming with nothing refused or cancelled in between
    stop_events = [e for e in events if e.startswith("estop_")]
    releases = [k for k, e in enumerate(stop_events) if e == "estop_released"]
    assert len(releases) == 2
    for k in releases:
        assert stop_events[k - 1] == "estop_release_armed", stop_events[max(0, k - 3):k + 1]
    assert "arms_resumed:page_pause" in events and "arms_paused:page_pause" in events

    # the 0.1 m move to WebXR +x (operator's right) moved the left target 0.1 m to -y in base_link;
    # the 0.2 m move made while clutched did not carry over
    targets = [decode("ArmTargets", v) for v in teleop_node.outputs["arm_targets"]]
    tracked = [t["left"]["position"] for t in targets if t["left"]["enabled"]]
    start = tracked[0]
    span = np.array(tracked) - start
    assert span[:, 1].min() == pytest.approx(-0.1, abs=1e-6)
    assert np.abs(span[:, 0]).max() < 1e-6 and np.abs(span[:, 2]).max() < 1e-6

    _check_episode_panel(by_step, controllers, run.episodes)

    diag = decode("Diagnostics", xr_node.outputs["diagnostics"][-1])
    details = json.loads(diag["details_json"])
    # the only refusals: the wrong token and the second client; not one frame of the page's
    assert details["rejected_by_reason"] == {"bad_token": 1, "busy": 1}
    assert details["round_trips"] > 0  # the page answered the clock pings

    # every pose carries the page's sample time, mapped to the host clock: its age on arrival
    # is the link plus the mapping's bound, never negative, and far below the 300 ms rule on the loopback
    live = [c for c in controllers if c["left"]["connected"] and c["left"]["pose_valid"]]
    ages = np.array([c["stamp_ns"] - c["left"]["pose_stamp_ns"] for c in live]) / 1e6
    assert len(ages) > 20 and ages.min() >= 0.0 and np.median(ages) < 100.0
    assert not controllers[-1]["left"]["connected"]  # closing the page reported both hands gone


def _check_episode_panel(by_step, controllers, episodes_node) -> None:
    """The episode half of the panel: it showed the node's task and state, and each of its
    presses reached the episodes node through the feed and made the mark it names."""
    idle = by_step["episode_idle"]
    assert idle["episode"]["task"] == TASK and not idle["episode"]["open"]
    assert idle["shown"]["task"] == TASK and idle["shown"]["status"].startswith("NOT RECORDING")
    assert by_step["episode_start"]["sent"] == 1 and by_step["episode_keep"]["sent"] == 1
    assert re.fullmatch(r"RECORDING episode 1 · [1-9]\d* s", by_step["episode_recording"]["shown"]["status"])
    assert by_step["discard_arm"]["sent"] == 1
    again = by_step["discard_again"]
    assert again["sent"] == 0 and again["episode"]["open"] and again["episode"]["discard_armed"]
    assert again["shown"]["status"].endswith("CONFIRM to discard")
    assert by_step["discard_confirm"]["sent"] == 1
    done = by_step["episode_discarded"]
    assert (done["episode"]["kept"], done["episode"]["discarded"], done["episode"]["number"]) == (1, 1, 2)
    assert [a["name"] for a in done["acts"]] == ["ep_start", "ep_keep", "ep_start", "ep_discard", "ep_confirm"]
    assert all(a["hand"] == "right" for a in done["acts"])

    # the presses as the feed carried them: one rising edge per act, in the order pressed
    fields = ("ui_episode_start", "ui_episode_keep", "ui_episode_discard")
    edges = [(c["stamp_ns"], f) for prev, c in zip(controllers, controllers[1:]) for f in fields if c[f] and not prev[f]]
    assert [f for _, f in edges] == ["ui_episode_start", "ui_episode_keep", "ui_episode_start", "ui_episode_discard",
                                     "ui_episode_discard"]
    # the marks, each made on the report that carried its press (the discard on the second one)
    marks = [decode("EpisodeMark", m) for m in episodes_node.outputs["marks"]]
    assert [(m["event"], m["task"]) for m in marks] == [("start", TASK), ("keep", TASK), ("start", TASK), ("discard", TASK)]
    for mark, (edge_ns, _) in zip(marks, [edges[0], edges[1], edges[2], edges[4]]):
        assert mark["stamp_ns"] >= edge_ns
    assert marks[3]["stamp_ns"] >= edges[4][0] > edges[3][0]
    states = [decode("EpisodeState", s) for s in episodes_node.outputs["state"]]
    armed = [s for s in states if s["discard_armed"]]
    assert armed and all(s["open"] and s["number"] == 2 for s in armed)
