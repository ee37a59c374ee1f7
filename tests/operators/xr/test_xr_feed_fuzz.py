"""Fuzzing the XR feed reader (parse + assemble), with hypothesis.

Three truths, none of them the reader itself:

* a reference validator written here from docs/xr_protocol.md, in another style
  (stdlib ``json``, the tree walked after parsing): the reader must accept
  exactly the frames it accepts (differential test);
* the fuzz classes break frames by construction (teledora/fakes/xr_feed_fuzz.py):
  every broken frame must be refused;
* the message rules (finite, inside the tracking volume, unit quaternions,
  no stamp in the future), checked on every message the reader produces.

And the state: a refused frame changes nothing (no partial update), and the
disconnect message can always be built and sent, whatever came before.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from teledora.fakes.xr_feed_fuzz import CLASSES, FeedFuzzer, message_violations
from teledora.operators.contract.messages import encode
from teledora.operators.xr.feed_assembler import FeedAssembler, StaleFrameError
from teledora.operators.xr.feed_rejection import REASONS, FeedRejected
from teledora.operators.xr.headset_clock import HOST_CLOCK
from teledora.operators.xr.xr_feed_format import parse_frame

# ---------------------------------------------------------------- reference
_TOP = {"version", "session", "seq", "sent_ns", "frame", "focused", "ui", "hands"}
_HAND = {"connected", "pose_valid", "position", "orientation", "pose_ns", "trigger", "squeeze", "stick", "input_ns",
         "primary", "secondary", "stick_click", "menu"}
_UI = {"estop", "release_stop", "pause", "episode_start", "episode_keep", "episode_discard"}
_I64 = 2**63


def _is_num(v) -> bool:
    return type(v) in (int, float)


def _is_stamp(v) -> bool:
    return type(v) is int and 0 <= v < _I64


def _depth(v) -> int:
    if isinstance(v, dict):
        return 1 + max(map(_depth, v.values()), default=0)
    if isinstance(v, list):
        return 1 + max(map(_depth, v), default=0)
    return 0


def _numbers_finite_and_short(v) -> bool:
    if isinstance(v, dict):
        return all(_numbers_finite_and_short(x) for x in v.values())
    if isinstance(v, list):
        return all(_numbers_finite_and_short(x) for x in v)
    if type(v) is float:
        return math.isfinite(v)
    if type(v) is int:
        return len(str(abs(v))) <= 19
    return True


def _hand_ok(h, sent: int, flu: bool) -> bool:
    if type(h) is not dict or not set(h) <= _HAND or type(h.get("connected")) is not bool:
        return False
    if any(k in h and type(h[k]) is not bool for k in ("pose_valid", "primary", "secondary", "stick_click", "menu")):
        return False
    for k in ("trigger", "squeeze"):
        if k in h and not (_is_num(h[k]) and -1e-6 <= h[k] <= 1 + 1e-6):
            return False
    if "stick" in h and not (type(h["stick"]) is list and len(h["stick"]) == 2
                             and all(_is_num(s) and -1 - 1e-6 <= s <= 1 + 1e-6 for s in h["stick"])):
        return False
    for k in ("pose_ns", "input_ns"):
        if k in h and not (_is_stamp(h[k]) and h[k] <= sent):
            return False
    if h["connected"] and h.get("pose_valid", False):
        p, q = h.get("position"), h.get("orientation")
        if not (type(p) is list and len(p) == 3 and all(map(_is_num, p))):
            return False
        if not (type(q) is list and len(q) == 4 and all(map(_is_num, q))):
            return False
        if abs(math.hypot(*q) - 1) > 0.01:
            return False
        x, y, z = p if flu else (-p[2], -p[0], p[1])
        if not (abs(x) <= 10 and abs(y) <= 10 and abs(z) <= 3):
            return False
    return True


def reference_accepts(data: bytes) -> bool:
    """docs/xr_protocol.md's frame rules, written independently of the reader."""
    if len(data) > 4096:
        return False
    try:
        pairs_ok = []
        d = json.loads(data.decode("utf-8"), object_pairs_hook=lambda kv: pairs_ok.append(len(kv) == len({k for k, _ in kv})) or dict(kv))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not all(pairs_ok) or _depth(d) > 4 or not _numbers_finite_and_short(d):
        return False
    if type(d) is not dict or not set(d) <= _TOP or type(d.get("version")) is not int or d["version"] != 1:
        return False
    if not (type(d.get("session", "")) is str and len(d.get("session", "")) <= 64):
        return False
    if not (_is_stamp(d.get("seq")) and _is_stamp(d.get("sent_ns")) and d.get("frame") in ("flu", "webxr")):
        return False
    if type(d.get("focused", True)) is not bool:
        return False
    ui = d.get("ui", {})
    if type(ui) is not dict or not set(ui) <= _UI or any(type(v) is not bool for v in ui.values()):
        return False
    hands = d.get("hands")
    if type(hands) is not dict or set(hands) != {"left", "right"}:
        return False
    return all(_hand_ok(hands[h], d["sent_ns"], d["frame"] == "flu") for h in ("left", "right"))


def reader_accepts(data: bytes) -> bool:
    try:
        parse_frame(data)
    except FeedRejected as exc:
        assert exc.reason in REASONS
        return False
    return True


# ------------------------------------------------------ frame-ish generator
def mostly(valid, weird):
    """Four draws in five from ``valid``: whole frames are often valid, so the
    boundaries (not only the obvious refusals) are compared."""
    return st.one_of(valid, valid, valid, valid, weird)


_any_value = (st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats() | st.text(max_size=4)
              | st.lists(st.floats(-20, 20) | st.integers(-20, 20), max_size=5))
_weird_num = st.sampled_from([float("nan"), float("inf"), 1e308, 1 + 1e-7, -1e-7, 2**63, True]) | _any_value
_unit = st.floats(0, 1)
_quat = st.tuples(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda q: math.hypot(*q) > 0.1),
                  st.floats(0.985, 1.015)).map(lambda qs: [x / math.hypot(*qs[0]) * qs[1] for x in qs[0]])
_num = st.floats(-12, 12) | _weird_num
_extra = mostly(st.just({}), st.fixed_dictionaries({"extra": _any_value}))  # an unknown key, now and then


def _merge(parts):
    out = dict(parts[0])
    out.update(parts[1])
    return out


_hands = st.tuples(st.fixed_dictionaries(
    {"connected": mostly(st.just(True), st.just(False) | _any_value)},
    optional={
        "pose_valid": mostly(st.just(True), st.just(False) | _any_value),
        "position": mostly(st.tuples(st.floats(-10.5, 10.5), st.floats(-3.3, 10.5), st.floats(-10.5, 10.5)).map(list),
                           st.lists(_num, min_size=2, max_size=4)),
        "orientation": mostly(_quat, st.lists(st.floats(-1.01, 1.01) | _weird_num, min_size=3, max_size=5)),
        "trigger": mostly(_unit, _weird_num), "squeeze": mostly(_unit, _weird_num),
        "stick": mostly(st.lists(st.floats(-1, 1), min_size=2, max_size=2), st.lists(_num, min_size=1, max_size=3)),
        "primary": mostly(st.booleans(), _any_value), "menu": st.booleans(),
        "pose_ns": mostly(st.integers(0, 1_000_000_000), st.integers(-5, 2**64) | _any_value),
        "input_ns": st.integers(999_999_000, 1_000_001_000),
    },
), _extra).map(_merge)
frames_ish = st.tuples(st.fixed_dictionaries(
    {
        "hands": mostly(st.fixed_dictionaries({"left": _hands, "right": _hands}),
                        st.dictionaries(st.sampled_from(["left", "right", "x"]), _hands)),
        "version": mostly(st.just(1), st.sampled_from([2, 1.0, True, "1"])),
        "seq": mostly(st.integers(0, 2**63 - 1), st.integers(-2, 2**64) | _any_value),
        "sent_ns": mostly(st.just(1_000_000_000), st.integers(-1, 2**64)),
        "frame": mostly(st.sampled_from(["flu", "webxr"]), st.just("enu")),
    },
    optional={
        "session": st.text(max_size=70),
        "focused": mostly(st.booleans(), _any_value),
        "ui": st.dictionaries(st.sampled_from(["estop", "pause", "release_stop", "episode_start", "episode_keep",
                                              "episode_discard", "episode", "nuke"]),
                             mostly(st.booleans(), _any_value), max_size=4),
    },
), _extra).map(_merge)


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames_ish)
def test_the_reader_accepts_exactly_what_the_reference_accepts(frame):
    data = json.dumps(frame).encode()
    assert reader_accepts(data) == reference_accepts(data), data[:300]


@pytest.mark.parametrize("verdict", [True, False])
def test_the_differential_test_sees_both_verdicts(verdict):
    # the comparison above means little unless the generator makes frames of both kinds
    find(frames_ish, lambda f: reference_accepts(json.dumps(f).encode()) == verdict, settings=settings(max_examples=2000))


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(CLASSES), st.integers(0, 2**32 - 1))
def test_every_fuzz_case_is_judged_like_the_reference(kind, seed):
    fuzzer = FeedFuzzer(seed)
    fuzzer.case("valid")
    case = fuzzer.case(kind)
    if kind == "stamp_disorder" and case.what.startswith(("stamped", "seq")):
        return  # a stream property (clock, sequence): the stream test below covers it
    assert reader_accepts(case.data) == reference_accepts(case.data) == (not case.must_refuse), case.what


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.sampled_from(CLASSES), min_size=1, max_size=40))
def test_a_stream_of_fuzz_cases_applies_only_valid_frames_and_only_whole(seed, kinds):
    fuzzer = FeedFuzzer(seed)
    assembler = FeedAssembler("fuzz")
    for kind in ["valid", *kinds]:
        case = fuzzer.case(kind)
        before = assembler.snapshot()
        try:
            msg = assembler.assemble(parse_frame(case.data), case.recv_ns, HOST_CLOCK)
        except (FeedRejected, StaleFrameError):
            assert assembler.snapshot() == before, f"partial update by {case.kind}: {case.what}"
            continue
        assert not case.must_refuse, f"applied an invalid frame: {case.kind}: {case.what}"
        assert message_violations(msg, case.recv_ns) == []
        encode("XrControllers", msg)
    gone = assembler.disconnect(fuzzer.now_ns)  # whatever came before, the disconnect can be sent
    encode("XrControllers", gone)
    assert not gone["left"]["connected"] and not gone["right"]["connected"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=5000))
def test_raw_bytes_never_escape_as_anything_but_a_refusal(data):
    assert reader_accepts(data) == reference_accepts(data)
