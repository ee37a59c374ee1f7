"""Counting what a recorded camera leaves repeated, missing or unused on a frame clock."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.datasets.camera_frame_reuse import frame_reuse
from teledora.operators.datasets.frame_clock import frame_times_ns, latest_at_or_before


def test_a_10_hz_camera_on_a_30_fps_clock_repeats_two_frames_of_three():
    frames = frame_times_ns(0, 999_999_999, 30)  # 30 frames
    images = np.arange(10) * 100_000_000  # 0, 0.1, ... 0.9 s
    r = frame_reuse(latest_at_or_before(images, frames))
    assert (r.frames, r.repeated, r.missing, r.unused) == (30, 20, 0, 0)


def test_frames_before_the_first_image_are_missing_and_a_burst_leaves_images_unused():
    rows = np.array([-1, -1, 0, 0, 3, 4, 4, 6])
    r = frame_reuse(rows, first=2)
    assert (r.frames, r.repeated, r.missing, r.unused) == (6, 2, 2, 3)  # images 1, 2 and 5 never shown


def test_frames_cut_for_another_stream_are_not_counted():
    rows = np.array([0, 0, 1, 1, 2])
    r = frame_reuse(rows, first=2)  # the episode starts at frame 2 (another stream began there)
    assert (r.frames, r.repeated, r.missing, r.unused) == (3, 1, 0, 0)


def test_rows_going_back_are_refused():
    with pytest.raises(ValueError):
        frame_reuse(np.array([0, 2, 1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 200_000_000), min_size=1, max_size=60), st.integers(0, 300_000_000),
       st.sampled_from([10, 15, 30, 60]))
def test_every_frame_is_new_repeated_or_missing_and_every_image_in_range_shown_or_unused(gaps, offset, fps):
    images = offset + np.cumsum(gaps).astype(np.int64)
    frames = frame_times_ns(0, int(images[-1]) + 100_000_000, fps)
    rows = latest_at_or_before(images, frames)
    r = frame_reuse(rows)
    shown = rows[rows >= 0]
    distinct = len(set(shown.tolist()))
    assert r.frames + r.missing == len(frames)
    assert r.frames - r.repeated == distinct
    if distinct:
        assert distinct + r.unused == shown.max() - shown.min() + 1
