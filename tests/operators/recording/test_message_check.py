"""What the recorder refuses: the checks alone, and over random shapes."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, strategies as st

from teledora.operators.recording.message_check import MessageCheck, image_problem, message_problem, metadata_problem


def test_a_dictionary_type_is_refused_even_after_clean_messages_on_the_topic():
    check = MessageCheck()
    assert check("a__b", pa.array(["x"]), {})[0] is not None
    array, why = check("a__b", pa.array(["x"]).dictionary_encode(), {})
    assert array is None and "dictionary" in why
    nested = pa.StructArray.from_arrays([pa.array(["x"]).dictionary_encode()], names=["f"])
    assert "dictionary" in check("c__d", nested, {})[1]


def test_timestamps_inside_int64_nanoseconds_pass_and_outside_are_refused():
    utc = dt.timezone.utc
    assert metadata_problem({"timestamp": dt.datetime(2261, 12, 31, tzinfo=utc)}) == ""
    assert metadata_problem({"timestamp": dt.datetime(1678, 1, 1, tzinfo=utc)}) == ""
    assert "timestamp" in metadata_problem({"timestamp": dt.datetime(2263, 1, 1, tzinfo=utc)})
    assert "timestamp" in metadata_problem({"timestamp": 2**63})
    assert metadata_problem({"timestamp": 2**63 - 1, "stamp_ns": -(2**63)}) == ""


def test_an_image_is_checked_only_when_its_metadata_names_one():
    pixels = pa.array(np.zeros(12, np.uint8))
    assert image_problem(pixels, {"camera": "chest"}) == ""
    assert image_problem(pixels, {"width": 2, "height": 2, "encoding": "rgb8"}) == ""
    assert image_problem(pixels, {"width": 4, "height": 1, "encoding": "rgb8"}) == ""
    assert "positive" in image_problem(pixels, {"width": True, "height": 2, "encoding": "rgb8"})
    assert "needs 4" in image_problem(pixels, {"width": 2, "height": 2, "encoding": "mono8"})


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                    st.datetimes(timezones=st.just(dt.timezone.utc)))
anything = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                          st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), inner, max_size=3)),
                        max_leaves=8)


@given(st.one_of(anything, st.dictionaries(st.sampled_from(["width", "height", "encoding", "timestamp", "stamp_ns", "x"]),
                                           anything, max_size=5)),
       st.sampled_from([pa.array(np.zeros(12, np.uint8)), pa.array([1.0]), pa.array([], pa.int8())]))
def test_any_metadata_gets_an_answer_never_an_exception(meta, value):
    array, why = message_problem(value, meta)
    assert (array is None) == bool(why)
    if array is not None:  # what passes can be stored: a mapping of strings to dora parameter values
        assert all(isinstance(k, str) for k in meta)


def test_a_jpeg_frame_is_stored_whole_and_bytes_that_are_no_such_frame_are_refused():
    from teledora.operators.contract.compressed_image import encode_jpeg

    y, x = np.mgrid[0:48, 0:64]
    data = encode_jpeg(np.stack([x * 4, y * 5, x + y], -1).astype(np.uint8))
    frame = pa.array(data)
    jpeg = {"width": 64, "height": 48, "encoding": "jpeg"}
    array, why = message_problem(frame, jpeg)
    assert why == "" and array.to_numpy().tobytes() == data.tobytes()
    assert "header says 64x48" in image_problem(frame, dict(jpeg, width=640))
    assert "cut short" in image_problem(pa.array(data[:-100]), jpeg)
    assert "not a JPEG" in image_problem(pa.array(np.zeros(64 * 48 * 3, np.uint8)), jpeg)
    assert "not uint8" in image_problem(pa.array(data.astype(np.int32)), jpeg)
    assert "jpeg" in image_problem(frame, dict(jpeg, encoding="png"))  # named among the known ones
