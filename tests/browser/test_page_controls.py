"""The headset page's controls in a real browser, per link state: headless Chromium
opens the WebXR page from a live xr_webxr node wired to a live teleop node (the
emulated headset of teledora.fakes.emulated_headset) and the test reads each
control from the DOM. A page without a token, with a wrong one, refused as a
second page, or whose link is lost has every control disabled, looking disabled,
with the reason beside them, and cannot enter VR; a paired page's E-STOP shows
"sent…", then the acknowledgement once teleop's state has applied the press and
latched, or a warning to use the physical stop when none comes."""

from __future__ import annotations

import json
from pathlib import Path


from tests.browser.browser_needs import HERE, IWER, NEEDS_BROWSER
from teledora.fakes.emulated_headset import run_headset
from teledora.operators.contract.messages import decode

pytestmark = NEEDS_BROWSER

CONTROLS = ("estop", "pause", "release", "confirm", "enter")


def assert_all_disabled(step, reason):
    assert step["reason"] == reason
    for name in CONTROLS:
        c = step["controls"][name]
        assert c["disabled"] and c["attr"], name
        assert c["cursor"] == "not-allowed" and c["hatched"], name  # looks disabled, not only is
        assert c["title"] == reason, name
    # Enter VR refused with the same reason, and no XR session
    assert step["vr"]["error"] == reason and not step["vr"]["inVR"]
    assert step["vr"]["link"] == f"cannot enter VR: {reason}"


def enabled(step):
    return {name for name in CONTROLS if not step["controls"][name]["disabled"]}


def test_controls_per_link_state_and_the_stop_acknowledgement(tmp_path: Path):
    run = run_headset(HERE / "page_controls.mjs", tmp_path, IWER, {"pose_timeout_s": 5.0, "input_timeout_s": 5.0})
    names = [s["step"] for s in run.steps]
    assert run.returncode == 0 and "done" in names and "page_error" not in names, f"{run.stdout}\n{run.stderr}"
    by = {s["step"]: s for s in run.steps}

    missing = by["missing_token"]
    assert_all_disabled(missing, "pairing token missing: open the address the robot printed")
    assert missing["sent"] == 0  # not one frame from a refused page
    assert_all_disabled(by["wrong_token"], "pairing token wrong: open the address the robot printed")
    assert by["wrong_token"]["sent"] == 0
    busy = by["busy"]
    assert busy["reason"].startswith("not paired: another client") and "in control" in busy["reason"]
    assert_all_disabled(busy, busy["reason"])
    assert_all_disabled(by["link_lost"], "link lost: reconnecting…")

    # paired, e-stop clear: the stop, pause, confirm (hidden until a release is armed) and Enter VR act;
    # release (step 1) does not, as nothing is latched; no reason shown, every enabled one looks it
    paired = by["paired"]
    assert paired["reason"] == "" and enabled(paired) == {"estop", "pause", "confirm", "enter"}
    assert paired["controls"]["confirm"]["hidden"]
    assert all(paired["controls"][n]["cursor"] == "pointer" and not paired["controls"][n]["hatched"]
               for n in enabled(paired))
    assert paired["controls"]["estop"]["label"] == "E-STOP" and paired["ack"] == ""

    # a press lost on the way: "sent…", then the warning, and the robot did not latch
    lost = by["lost_press"]
    assert lost["label_at_press"] == "E-STOP sent…"
    assert lost["controls"]["estop"]["label"] == "NOT ACKNOWLEDGED — use the physical stop"
    assert lost["ack"].startswith("no acknowledgement within") and not lost["latched"]

    # a press that arrives: "sent…", then acknowledged by a latched state that applied its frame
    acked = by["acknowledged"]
    assert acked["label_at_press"] == "E-STOP sent…"
    assert acked["controls"]["estop"]["label"] == "STOP LATCHED (acknowledged)"
    assert acked["ack"].startswith("teleop latched the stop") and "not a check of the motors" in acked["ack"]
    assert acked["state"]["estop_latched"] and acked["state"]["page_seq"] >= acked["press_seq"]
    assert enabled(acked) >= {"estop", "release"}  # latched: the release's first step is offered

    # the node got the press: one latch, from the page's stop, on a report carrying it
    controllers = [decode("XrControllers", v) for v in run.xr.outputs["controllers"]]
    states = [decode("TeleopState", v) for v in run.teleop.outputs["state"]]
    xr_seqs = [m.get("xr_seq", -1) for m in run.teleop.metadata["state"]]
    latches = [i for i in range(1, len(states)) if states[i]["estop_latched"] and not states[i - 1]["estop_latched"]]
    assert len(latches) == 1 and "estop_latched:page_stop" in states[latches[0]]["events"]
    carried = [c["seq"] for c in controllers if c["ui_estop"]]
    assert carried and xr_seqs[latches[0] - 1] < carried[0] <= xr_seqs[latches[0]]

    details = json.loads(decode("Diagnostics", run.xr.outputs["diagnostics"][-1])["details_json"])
    assert details["rejected_by_reason"] == {"bad_token": 2, "busy": 1}
