"""Hostile XR feed frames, by class, for the fuzz tests and benchmarks/xr_fuzz.py.

:class:`FeedFuzzer` draws a valid frame (both hands, poses inside the
tracking volume, unit quaternions, ordered stamps) from a seeded generator and
breaks it in one way per class. Every class but ``valid`` breaks the frame by
construction (``must_refuse``): a reader that accepts one has applied an
invalid frame. :func:`message_violations` says what is wrong with an
``XrControllers`` message by the contract's own rules, independently of the
reader, so accepted frames can be judged too.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Any, Mapping

#: The classes of the acceptance: garbage, truncation, deep nesting, huge and
#: non-finite numbers, bad quaternions, out-of-range positions, stamp
#: disorder, duplicate keys, oversize; and valid frames between them.
CLASSES = ("valid", "garbage", "truncation", "deep_nesting", "huge_number", "non_finite", "bad_quaternion",
           "position_range", "stamp_disorder", "duplicate_key", "oversize")

# The limits of docs/xr.md, restated here so the fuzzer does not read them from the reader it tests.
TRACKING_HALF_WIDTH_M = 10.0
TRACKING_HALF_HEIGHT_M = 3.0
QUAT_NORM_TOLERANCE = 0.01
FUTURE_TOLERANCE_NS = 50_000_000
MAX_FRAME_BYTES = 4096
MS = 1_000_000


@dataclass(frozen=True)
class FuzzCase:
    kind: str
    data: bytes
    sent_ns: int  # the frame's send stamp (the fuzzer's clock)
    recv_ns: int  # when the case is to be delivered (later than sent_ns, except for future stamps)
    must_refuse: bool
    what: str  # the mutation, for reports


def _flu_to_webxr(p: list[float]) -> list[float]:
    # FLU x = -z_xr, y = -x_xr, z = y_xr
    return [-p[1], p[2], -p[0]]


class FeedFuzzer:
    """Draws fuzz cases from a seeded generator; frames carry rising sequence numbers.

    Args:
        seed: Generator seed (the same seed gives the same cases).
        start_ns: The first frame's send time.
    """

    def __init__(self, seed: int, start_ns: int = 1_700_000_000_000_000_000) -> None:
        self.rng = random.Random(seed)
        self.seq = 0
        self.now_ns = start_ns
        self.last_valid_seq: int | None = None

    # ------------------------------------------------------------ valid frame
    def _unit_quaternion(self) -> list[float]:
        """A unit quaternion; one in five off unit by up to 0.99 of the tolerance (still valid)."""
        q = [self.rng.gauss(0, 1) for _ in range(4)]
        n = math.sqrt(sum(x * x for x in q)) or 1.0
        if self.rng.random() < 0.2:
            n /= 1 + self.rng.uniform(-0.99, 0.99) * QUAT_NORM_TOLERANCE
        return [x / n for x in q]

    def _hand(self, frame_kind: str, sent_ns: int, used: bool) -> dict[str, Any]:
        r = self.rng
        if not used and r.random() < 0.3:
            return {"connected": False}
        reach = 0.9999 if r.random() < 0.2 else 0.9  # now and then right at the edge of the volume
        p_flu = [r.uniform(-reach, reach) * TRACKING_HALF_WIDTH_M, r.uniform(-reach, reach) * TRACKING_HALF_WIDTH_M,
                 r.uniform(-reach, reach) * TRACKING_HALF_HEIGHT_M]
        return {
            "connected": True, "pose_valid": True,
            "position": _flu_to_webxr(p_flu) if frame_kind == "webxr" else p_flu,
            "orientation": self._unit_quaternion(),
            "pose_ns": sent_ns - r.randrange(0, 40 * MS),
            "trigger": r.random(), "squeeze": r.random(), "stick": [r.uniform(-1, 1), r.uniform(-1, 1)],
            "primary": r.random() < 0.2, "secondary": r.random() < 0.2, "stick_click": False, "menu": False,
            "input_ns": sent_ns - r.randrange(0, 40 * MS),
        }

    def valid_frame(self, sent_ns: int | None = None) -> tuple[dict[str, Any], int, int]:
        """A valid frame (left hand always connected with a pose), its send and
        receive times; sent ``sent_ns``, or 5-15 ms after the previous one."""
        self.seq += 1
        self.now_ns = sent_ns if sent_ns is not None else self.now_ns + self.rng.randrange(5 * MS, 15 * MS)
        sent = self.now_ns
        kind = self.rng.choice(["webxr", "flu"])
        frame = {"version": 1, "session": "fuzz", "seq": self.seq, "sent_ns": sent, "frame": kind,
                 "focused": self.rng.random() < 0.9,
                 "ui": {"estop": False, "release_stop": False, "pause": False,
                        **{k: self.rng.random() < 0.1 for k in ("episode_start", "episode_keep", "episode_discard")}},
                 "hands": {"left": self._hand(kind, sent, True), "right": self._hand(kind, sent, False)}}
        return frame, sent, sent + self.rng.randrange(0, 30 * MS)

    # ------------------------------------------------------------- mutations
    def case(self, kind: str, sent_ns: int | None = None) -> FuzzCase:
        """One case of ``kind`` (one of :data:`CLASSES`), its frame sent at
        ``sent_ns`` (default: 5-15 ms after the previous case's)."""
        frame, sent, recv = self.valid_frame(sent_ns)
        text = json.dumps(frame)
        r = self.rng
        left = frame["hands"]["left"]
        if kind == "valid":
            self.last_valid_seq = frame["seq"]
            return FuzzCase(kind, text.encode(), sent, recv, False, "valid")
        if kind == "garbage":
            n = r.randrange(0, 600)
            data = bytes(r.randrange(256) for _ in range(n)) if r.random() < 0.5 else \
                "".join(r.choice('{}[]",:0123456789.eE-+ ntruefalsnul\\"') for _ in range(n)).encode()
            return FuzzCase(kind, data, sent, recv, True, f"{n} random bytes")
        if kind == "truncation":
            cut = r.randrange(0, len(text) - 1)
            return FuzzCase(kind, text[:cut].encode(), sent, recv, True, f"cut at {cut}/{len(text)}")
        if kind == "deep_nesting":
            how = r.randrange(3)
            if how == 0:
                n = r.choice([5, 64, 999, 3000, 4000, 10000])
                return FuzzCase(kind, (r.choice("[{") * n).encode(), sent, recv, True, f"{n} openers")
            if how == 1:
                k = r.randrange(2, 40)
                left["position"] = [json.loads("[" * k + "0" + "]" * k)] * 3
                return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"position nested {k} deep")
            k = r.randrange(4, 60)
            frame["ui"]["estop"] = json.loads("[" * k + "true" + "]" * k)
            return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"ui.estop nested {k} deep")
        if kind == "huge_number":
            target = r.choice(["position", "trigger", "stick", "seq", "sent_ns", "pose_ns", "orientation"])
            huge = r.choice([1e308, -1.5e308, 1e30, 10**19, 10**30, -(10**19)])
            if target == "position":
                left["position"][r.randrange(3)] = huge
            elif target == "orientation":
                left["orientation"][r.randrange(4)] = huge
            elif target == "stick":
                left["stick"][r.randrange(2)] = huge
            elif target in ("trigger", "pose_ns"):
                left[target] = huge
            else:
                frame[target] = huge
            return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"{target} = {huge:g}")
        if kind == "non_finite":
            literal = r.choice(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" + "0" * 400 + ".0"])
            target = r.choice(["trigger", "stick", "position", "seq", "squeeze"])
            marker = 123456.5
            if target == "position":
                left["position"][r.randrange(3)] = marker
            elif target == "stick":
                left["stick"][r.randrange(2)] = marker
            elif target == "seq":
                frame["seq"] = marker
            else:
                left[target] = marker
            data = json.dumps(frame).replace("123456.5", literal, 1).encode()
            return FuzzCase(kind, data, sent, recv, True, f"{target} = {literal[:12]}")
        if kind == "bad_quaternion":
            q = left["orientation"]
            n = math.sqrt(sum(x * x for x in q))
            just_off = 1 + r.choice([-1, 1]) * QUAT_NORM_TOLERANCE * r.uniform(1.001, 1.5)
            scale = r.choice([0.0, r.uniform(0.0, 1 - 2 * QUAT_NORM_TOLERANCE), r.uniform(1 + 2 * QUAT_NORM_TOLERANCE, 1e6),
                              just_off, just_off]) / n
            left["orientation"] = [x * scale for x in q]
            return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"norm {scale:.4g}")
        if kind == "position_range":
            axis = r.randrange(3)
            limit = TRACKING_HALF_HEIGHT_M if axis == 2 else TRACKING_HALF_WIDTH_M
            p_flu = [0.0, 0.0, 1.0]
            p_flu[axis] = r.choice([-1, 1]) * (limit + r.choice([1e-6, 0.01, r.uniform(0.01, 100.0), 1e6]))
            left["position"] = _flu_to_webxr(p_flu) if frame["frame"] == "webxr" else p_flu
            return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"FLU axis {axis} = {p_flu[axis]:.3g}")
        if kind == "stamp_disorder":
            how = r.randrange(4) if self.last_valid_seq is not None else r.randrange(3)
            if how == 0:
                left["pose_ns"] = sent + r.choice([1, MS, 10**12])
                return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, "pose_ns after sent_ns")
            if how == 1:
                left["input_ns"] = sent + r.choice([1, MS, 10**12])
                return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, "input_ns after sent_ns")
            if how == 2:  # every stamp in the future (beyond the tolerance, delays included)
                ahead = r.choice([FUTURE_TOLERANCE_NS + 30 * MS + 1, 1_000 * MS, 1_000_000 * MS])
                frame["sent_ns"] += ahead
                for h in frame["hands"].values():
                    for key in ("pose_ns", "input_ns"):
                        if key in h:
                            h[key] += ahead
                return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, f"stamped {ahead / MS:g} ms ahead")
            frame["seq"] = self.last_valid_seq  # the sequence number of the last valid frame, again
            return FuzzCase(kind, json.dumps(frame).encode(), sent, recv, True, "seq already used")
        if kind == "duplicate_key":
            where = r.randrange(3)
            if where == 0:
                data = '{"seq": 1, ' + text[1:]
            elif where == 1:
                data = text.replace('"left": {', '"left": {"trigger": 0.5, ', 1)
            else:
                data = text.replace('"ui": {', '"ui": {"estop": true, ', 1)
            return FuzzCase(kind, data.encode(), sent, recv, True, ("top level", "hand", "ui")[where])
        if kind == "oversize":
            pad = r.randrange(1, 60_000)
            data = text[:-1] + " " * (MAX_FRAME_BYTES - len(text) + pad) + "}"
            return FuzzCase(kind, data.encode(), sent, recv, True, f"{len(data)} bytes")
        raise ValueError(f"unknown fuzz class {kind!r}; known: {CLASSES}")


def message_violations(msg: Mapping[str, Any], recv_ns: int) -> list[str]:
    """What breaks the rules of docs/xr.md in an ``XrControllers`` message (empty when nothing)."""
    out = []
    for hand in ("left", "right"):
        h = msg[hand]
        nums = [*h["position"], *h["orientation"], h["trigger"], h["squeeze"], *h["stick"]]
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in nums):
            out.append(f"{hand}: a number is not finite")
            continue
        x, y, z = (float(c) for c in h["position"])
        if h["pose_valid"] and not (abs(x) <= TRACKING_HALF_WIDTH_M and abs(y) <= TRACKING_HALF_WIDTH_M
                                    and abs(z) <= TRACKING_HALF_HEIGHT_M):
            out.append(f"{hand}: position {x, y, z} outside the tracking volume")
        if abs(math.sqrt(sum(float(c) ** 2 for c in h["orientation"])) - 1.0) > 1e-9:
            out.append(f"{hand}: orientation not a unit quaternion")
        if not (0.0 <= h["trigger"] <= 1.0 and 0.0 <= h["squeeze"] <= 1.0):
            out.append(f"{hand}: trigger/squeeze outside [0, 1]")
        if not all(-1.0 <= s <= 1.0 for s in h["stick"]):
            out.append(f"{hand}: stick outside [-1, 1]")
        for key in ("pose_stamp_ns", "input_stamp_ns"):
            if not 0 <= h[key] <= recv_ns + FUTURE_TOLERANCE_NS:
                out.append(f"{hand}: {key} in the future or negative")
    return out
