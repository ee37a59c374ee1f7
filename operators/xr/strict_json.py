"""JSON from the network, read with bounds that hold before the parser runs.

Python's ``json`` recurses once per nesting level (``b'[' * 3000`` raises
``RecursionError``), accepts ``NaN``/``Infinity``, turns ``1e999`` into
``inf``, keeps the last of two equal keys and converts integers of any
length. :func:`loads_bounded` closes each of these:

* size: the UTF-8 length is checked first;
* depth: a linear scan over the structural characters (quotes, backslashes,
  brackets), outside strings, refuses nesting beyond ``max_depth`` before
  ``json`` sees the text, so the parser never recurses deeper than that;
* numbers: ``NaN``/``Infinity`` and floats that overflow a double are refused,
  integers longer than 19 digits (beyond int64) too, before conversion;
* keys: an object with a key twice is refused.

Every refusal is a :class:`FeedFormatError` with a reason code; nothing else
escapes for any input.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from teledora.operators.xr.feed_rejection import FeedFormatError

_STRUCTURAL = re.compile(r'["\\\[\]{}]')
_MAX_INT_DIGITS = 19  # int64 has at most 19 decimal digits


def _reject_constant(name: str) -> float:
    raise FeedFormatError("non_finite", f"{name} is not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise FeedFormatError("non_finite", f"{text[:40]} is beyond the range of a double")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise FeedFormatError("number_range", f"integer of {len(text.lstrip('-'))} digits (at most {_MAX_INT_DIGITS})")
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FeedFormatError("duplicate_key", f"key {key[:40]!r} appears twice in one object")
        out[key] = value
    return out


def nesting_depth_exceeds(text: str, max_depth: int) -> bool:
    """True when ``text`` opens more than ``max_depth`` nested arrays/objects
    outside strings. Linear in the number of structural characters; stops at
    the first level beyond the bound."""
    depth = 0
    in_string = False
    skip_to = -1
    for m in _STRUCTURAL.finditer(text):
        pos = m.start()
        if pos < skip_to:
            continue  # the character escaped by a backslash
        c = m.group()
        if in_string:
            if c == "\\":
                skip_to = pos + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif c in "]}":
            depth -= 1
    return False


def loads_bounded(data: bytes | str, max_bytes: int, max_depth: int) -> Any:
    """Parses one JSON text within the bounds above.

    Args:
        data: The text, as received (bytes must be UTF-8).
        max_bytes: Largest accepted UTF-8 length.
        max_depth: Deepest accepted nesting of arrays and objects.

    Raises:
        FeedFormatError: reasons ``oversize``, ``not_utf8``, ``too_deep``,
            ``not_json``, ``non_finite``, ``number_range``, ``duplicate_key``.
    """
    if isinstance(data, str):
        if len(data) > max_bytes:  # a character is at least one byte
            raise FeedFormatError("oversize", f"{len(data)} characters exceed {max_bytes} bytes")
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError:
            raise FeedFormatError("not_utf8", "text with unpaired surrogates") from None
        text = data
    else:
        size = len(data)
    if size > max_bytes:
        raise FeedFormatError("oversize", f"{size} bytes exceed {max_bytes}")
    if not isinstance(data, str):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FeedFormatError("not_utf8", f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    if nesting_depth_exceeds(text, max_depth):
        raise FeedFormatError("too_deep", f"nested deeper than {max_depth} levels")
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_bounded_int,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise FeedFormatError("not_json", f"not JSON: {exc.msg} at {exc.pos}") from None
