"""The heads-up line's rules (nodes/xr/web/hud.js), run in node: every state is named
in words and marked by a glyph and frame of its own, the colours of the states differ
and keep WCAG contrast, and the link age shown is steady on a sound link while the
link is called lost on the raw age. test_operator_view.py reads the same from the
rendered pixels."""

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


@pytest.fixture(scope="module")
def hud():
    proc = subprocess.Popen(["node", str(HERE / "hud_runner.mjs")], cwd=HERE, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def ask(request):
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield ask
    proc.stdin.close()
    proc.wait(10)


STATE_KEYS = ("estop_latched", "arms_paused", "left_clutched", "right_clutched", "left_slow", "right_slow", "release_armed")


def model(hud, why="", state=None, episode=None, raw=50.0, smooth=50):
    return hud({"model": dict(why=why, state=state, episode=episode, rawAgeMs=raw, smoothAgeMs=smooth)})


def test_each_state_has_its_own_words_glyph_and_colours(hud):
    t = hud({"tones": True})
    tones, frame = t["TONES"], t["FRAME"]
    shown = {
        "notPaired": model(hud, why="not paired: another client (1.2.3.4) is in control"),
        "linkLost": model(hud, why="link lost: reconnecting…"),
        "unknown": model(hud),
        "latched": model(hud, state={"estop_latched": True}),
        "paused": model(hud, state={"arms_paused": True}),
        "live": model(hud, state={}),
    }
    words = {"notPaired": "NOT PAIRED", "linkLost": "LINK LOST", "unknown": "ROBOT STATE UNKNOWN",
             "latched": "E-STOP LATCHED", "paused": "ARMS PAUSED", "live": "ARMS LIVE"}
    for key, m in shown.items():
        assert m["key"] == key and words[key] in m["title"], (key, m)
    # the reason for not being paired is shown, not only the two words
    assert "another client (1.2.3.4) is in control" in shown["notPaired"]["details"]
    # shapes: the stop, the pause, a live link and a missing one each have their own glyph and frame
    marks = {k: (tones[k]["glyph"], tones[k]["frame"]) for k in ("notPaired", "linkLost", "latched", "paused", "live")}
    assert len(set(marks.values())) == len(marks)
    # colours: distinct fills (recording's chip included), text >= 4.5:1 on each, the frame >= 3:1 on every background
    fills = [tones[k]["fill"] for k in ("notPaired", "linkLost", "latched", "paused", "live")] + [t["RECORDING"]["fill"]]
    assert len(set(fills)) == len(fills)
    for k, tone in tones.items():
        assert hud({"contrast": [tone["fill"], tone["text"]]}) >= 4.5, k
        bg = [round(255 * x) for x in t["BACKGROUNDS"][k]]
        assert hud({"contrast": [frame, bg]}) >= 3, k
        assert hud({"contrast": [tone["fill"], bg]}) >= 1.0  # the fill may match; the frame separates them
    for chip in (t["RECORDING"], t["DETAIL"]):
        assert hud({"contrast": [chip["fill"], chip["text"]]}) >= 4.5


def test_contrast_extremes(hud):
    assert hud({"contrast": ["#000000", "#ffffff"]}) == pytest.approx(21.0)
    assert hud({"contrast": ["#777777", "#777777"]}) == pytest.approx(1.0)
    assert hud({"contrast": ["#767676", "#ffffff"]}) == pytest.approx(4.54, abs=0.01)  # the usual 4.5:1 grey


@settings(max_examples=60, deadline=None)
@given(flags=st.fixed_dictionaries({k: st.booleans() for k in STATE_KEYS}),
       raw=st.floats(0, 3000), recording=st.one_of(st.none(), st.booleans()))
def test_every_active_state_is_named_in_words(hud, flags, raw, recording):
    episode = None if recording is None else {"open": recording, "number": 3, "seconds": 12}
    m = model(hud, state=flags, episode=episode, raw=raw, smooth=40)
    text = f"{m['title']} · {m['details']} · {m['chip']['text']}"
    lost = raw > 1000
    assert ("LINK LOST" in m["title"]) == lost and (m["key"] == "linkLost") == lost
    assert ("E-STOP LATCHED" in text) == flags["estop_latched"]
    assert ("PAUSED" in text) == flags["arms_paused"]
    clutch = "L" * flags["left_clutched"] + "R" * flags["right_clutched"]
    slow = "L" * flags["left_slow"] + "R" * flags["right_slow"]
    assert (f"CLUTCH {clutch}" in text) if clutch else ("no clutch" in text)
    assert (f"SLOW {slow}" in text) if slow else ("full speed" in text)
    assert ("REC episode 3" in text) == bool(recording)
    assert m["alarm"] == (lost or flags["estop_latched"])
    if not lost:
        assert m["key"] == ("latched" if flags["estop_latched"] else "paused" if flags["arms_paused"] else "live")


def sawtooth(period_ms, jitter, frames_ms=16, seconds=4.0):
    """Ages sampled each frame while states arrive every period (+ jitter): [[age, t], ...]."""
    out, last, t, k = [], 0.0, 0.0, 0
    arrivals = []
    a = 0.0
    while a < seconds * 1000:
        arrivals.append(a)
        k += 1
        a = k * period_ms + jitter[k % len(jitter)]
    i = 0
    while t < seconds * 1000:
        while i + 1 < len(arrivals) and arrivals[i + 1] <= t:
            i += 1
        last = arrivals[i]
        out.append([t - last, t])
        t += frames_ms
    return out


def test_link_age_is_steady_on_a_sound_link(hud):
    # teleop's state every 0.1 s: the raw age runs 0..100 ms and, rounded to 50 ms, shows 0, 50 and 100 in turn
    samples = sawtooth(100, [0.0])
    raw_shown = {round(a / 50) * 50 for a, t in samples if t > 1000}
    assert raw_shown == {0, 50, 100}
    shown = [v for v, (a, t) in zip(hud({"ages": samples}), samples) if t > 1000]
    assert max(shown) - min(shown) <= 10 and 40 <= min(shown) <= 60


@settings(max_examples=40, deadline=None)
@given(period=st.floats(20, 400), jitter=st.lists(st.floats(0, 15), min_size=1, max_size=8))
def test_link_age_shown_lies_within_the_last_second_of_raw_ages(hud, period, jitter):
    samples = sawtooth(period, jitter, seconds=2.5)
    shown = hud({"ages": samples})
    for k, (v, (a, t)) in enumerate(zip(shown, samples)):
        window = [s[0] for s in samples[:k + 1] if s[1] >= t - 1000]
        assert min(window) - 5 <= v <= max(window) + 5


@settings(max_examples=40, deadline=None)
@given(flags=st.fixed_dictionaries({k: st.booleans() for k in STATE_KEYS}),
       driver=st.sampled_from([None, "operator", "policy", "stopped"]))
def test_who_drives_is_named_in_words(hud, flags, driver):
    state = dict(flags) if driver is None else dict(flags, driver=driver)
    m = model(hud, state=state)
    words = {None: "OPERATOR DRIVING", "operator": "OPERATOR DRIVING", "policy": "POLICY DRIVING",
             "stopped": "NOBODY DRIVING" if flags["estop_latched"] else "POLICY STALE: HOLDING"}[driver]
    # always in the details; in the title too whenever the policy holds the robot
    # (a latched e-stop leads the title alone: it stops every driver)
    assert m["details"].split(" · ")[0] == words
    assert (words in m["title"]) == (words not in ("OPERATOR DRIVING", "NOBODY DRIVING") and not flags["estop_latched"])
    others = {"OPERATOR DRIVING", "POLICY DRIVING", "NOBODY DRIVING", "POLICY STALE: HOLDING"} - {words}
    assert not any(o in f"{m['title']} · {m['details']}" for o in others)
