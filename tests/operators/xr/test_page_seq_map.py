"""The map from the xr node's report numbers to the page's frame numbers
(operators/xr/page_seq_map.py), which the page's stop acknowledgement rests on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.page_seq_map import PageSeqMap


def test_a_state_maps_to_the_newest_page_frame_it_applied():
    m = PageSeqMap()
    m.add(10, 500)
    m.add(11, 501)
    m.add(13, 504)  # report 12 was the node's own (a disconnect): no page frame
    assert m.page_seq(11) == 501
    assert m.page_seq(12) == 501  # applied 12 = every page frame up to 501
    assert m.page_seq(13) == 504 and m.page_seq(99) == 504
    assert m.page_seq(9) is None  # before anything this client sent
    assert m.page_seq(None) is None and m.page_seq("13") is None and m.page_seq(True) is None


def test_a_new_client_forgets_the_old_ones_frames():
    m = PageSeqMap()
    m.add(1, 40)
    m.clear()
    assert m.page_seq(1) is None
    m.add(2, 1)
    assert m.page_seq(2) == 1


def test_reports_must_come_in_order():
    m = PageSeqMap()
    m.add(5, 1)
    with pytest.raises(ValueError):
        m.add(5, 2)


@settings(max_examples=200, deadline=None)
@given(keep=st.integers(1, 12),
       history=st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3), st.booleans()), min_size=1, max_size=60),
       probe=st.integers(0, 250))
def test_the_answer_is_the_full_history_s_or_nothing(keep, history, probe):
    # random histories: report numbers and page numbers each rise by 1 to 3 (node-made
    # reports and stale frames in between), sometimes a new client; the bounded map
    # agrees with the whole history wherever it answers, and answers for every
    # report it still holds
    m, full = PageSeqMap(keep), []
    report, page = 0, 0
    for dr, dp, new_client in history:
        report, page = report + dr, page + dp
        if new_client:
            m.clear()
            full = []
        m.add(report, page)
        full.append((report, page))
    truth = [p for r, p in full if r <= probe]
    got = m.page_seq(probe)
    kept = full[-keep:]
    if probe >= kept[0][0]:
        assert got == truth[-1]
    else:
        assert got is None
