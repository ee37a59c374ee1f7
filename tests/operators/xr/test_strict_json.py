"""The bounded JSON reader against independent truths: the nesting depth of the
value that was written, Python's own reading of plain JSON, and "nothing but
FeedFormatError escapes" for any bytes."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.feed_rejection import FeedFormatError
from teledora.operators.xr.strict_json import loads_bounded, nesting_depth_exceeds

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
values = st.recursive(scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
                      max_leaves=25)


def depth(v) -> int:
    """Nesting depth of a Python value: the truth the scanner must agree with."""
    if isinstance(v, list):
        return 1 + max((depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((depth(x) for x in v.values()), default=0)
    return 0


@settings(max_examples=400, deadline=None)
@given(values, st.integers(0, 6), st.booleans())
def test_depth_bound_agrees_with_the_value_written(value, max_depth, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert nesting_depth_exceeds(text, max_depth) == (depth(value) > max_depth)
    if depth(value) > max_depth:
        with pytest.raises(FeedFormatError) as info:
            loads_bounded(text, 10**6, max_depth)
        assert info.value.reason == "too_deep"
    else:
        assert loads_bounded(text, 10**6, max_depth) == json.loads(text)


@settings(max_examples=600, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
def test_any_bytes_give_a_value_or_a_reasoned_refusal(data):
    try:
        loads_bounded(data, 256, 4)
    except FeedFormatError as exc:
        assert exc.reason in {"oversize", "not_utf8", "too_deep", "not_json", "non_finite", "number_range", "duplicate_key"}


@pytest.mark.parametrize("text, reason", [
    ("[" * 3000, "too_deep"),
    ("{\"a\":" * 3000 + "1" + "}" * 3000, "too_deep"),
    ("[NaN]", "non_finite"),
    ("[-Infinity]", "non_finite"),
    ("[1e999]", "non_finite"),
    ("[-1e999]", "non_finite"),
    ("[" + "9" * 400 + ".0]", "non_finite"),
    ("[" + "9" * 20 + "]", "number_range"),
    ("[-" + "9" * 20 + "]", "number_range"),
    ('{"a": 1, "a": 1}', "duplicate_key"),
    ('[{"b": {"a": 1, "a": 2}}]', "duplicate_key"),
    ("\ufeff[1]", "not_json"),
    ("[1] x", "not_json"),
])
def test_what_python_json_would_let_through_or_crash_on(text, reason):
    with pytest.raises(FeedFormatError) as info:
        loads_bounded(text, 10**6, 4)
    assert info.value.reason == reason


def test_int64_limits_and_tiny_floats_are_read_exactly():
    assert loads_bounded("[9223372036854775807, -9223372036854775808, 1e-999, 1.7976931348623157e308]", 100, 1) == [
        2**63 - 1, -(2**63), 0.0, 1.7976931348623157e308]
    assert math.isfinite(loads_bounded("[1.7976931348623157e308]", 100, 1)[0])


def test_utf16_bytes_are_not_guessed():
    # json.loads(bytes) would detect UTF-16 and decode it; the feed speaks UTF-8 only
    with pytest.raises(FeedFormatError) as info:
        loads_bounded('{"a": 1}'.encode("utf-16"), 100, 2)
    assert info.value.reason == "not_utf8"
