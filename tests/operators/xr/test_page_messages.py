"""The page's hello and pongs: parsed strictly, told apart from frames."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.feed_rejection import FeedFormatError
from teledora.operators.xr.page_messages import MAX_HELLO_BYTES, Hello, Pong, parse_control, parse_hello


def test_hello_and_pong():
    assert parse_hello('{"type": "hello", "token": "tok", "session": "ab"}') == Hello("tok", "ab")
    assert parse_control('{"type": "pong", "id": 3, "page_ns": 1700000000000000000}') == Pong(3, 1700000000000000000)


@pytest.mark.parametrize("data, reason", [
    ("[" * 3000, "oversize"),
    ("[" * 1000, "too_deep"),
    ('{"type": "hello", "token": ["tok"]}', "too_deep"),
    ('{"type": "hello", "token": 1e999}', "non_finite"),
    ('{"type": "hello", "token": "a", "token": "b"}', "duplicate_key"),
    ('{"type": "hello"}', "bad_hello"),
    ('{"type": "hello", "token": 5}', "bad_hello"),
    ('{"type": "hello", "token": "t", "admin": true}', "bad_hello"),
    ('{"type": "frame", "token": "t"}', "bad_hello"),
    ('"hello"', "bad_hello"),
    ('{"type": "hello", "token": "' + "x" * MAX_HELLO_BYTES + '"}', "oversize"),
])
def test_bad_hellos_are_refused_with_a_reason(data, reason):
    with pytest.raises(FeedFormatError) as info:
        parse_hello(data)
    assert info.value.reason == reason


@pytest.mark.parametrize("data", [
    '{"type": "pong", "id": -1, "page_ns": 5}',
    '{"type": "pong", "id": 1.5, "page_ns": 5}',
    '{"type": "pong", "id": true, "page_ns": 5}',
    '{"type": "pong", "id": 1}',
    '{"type": "ping", "id": 1, "page_ns": 5}',
    '{"type": "pong", "id": 1, "page_ns": 5, "x": 0}',
])
def test_malformed_pongs_are_refused(data):
    with pytest.raises(FeedFormatError) as info:
        parse_control(data)
    assert info.value.reason == "bad_control"


@pytest.mark.parametrize("data", [
    '{"version": 1, "ui": {"estop": true}, "hands": {}}',  # a frame (deeper than a control message)
    '{"version": 1}',  # flat, no type: a frame candidate the frame parser will judge
    "[1e999]", "not json", "[" * 3000,
])
def test_anything_without_a_type_goes_to_the_frame_parser(data):
    assert parse_control(data) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.dictionaries(st.sampled_from(["type", "id", "page_ns", "token", "session"]),
                                                  st.none() | st.integers() | st.text(max_size=5) | st.floats())
       .map(lambda d: json.dumps(d).encode()))
def test_any_bytes_give_a_message_or_a_reasoned_refusal(data):
    for parse in (parse_hello, parse_control):
        try:
            parse(data)
        except FeedFormatError:
            pass
