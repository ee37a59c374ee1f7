"""The pairing address as a text QR code: the printed blocks are the code's modules,
with the quiet zone, in either rendering."""

from __future__ import annotations

import re

import segno
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.pairing_qr import QUIET_ZONE, qr_matrix, qr_text

URL = "https://192.168.1.20:8443/?token=Xq3vR9kLm2Pz"
TOP = {"█": (True, True), "▀": (True, False), "▄": (False, True), " ": (False, False)}


def read_back(text: str) -> list[list[bool]]:
    rows = []
    for line in re.sub(r"\x1b\[[0-9;]*m", "", text).split("\n"):
        rows.append([TOP[ch][0] for ch in line])
        rows.append([TOP[ch][1] for ch in line])
    return rows


def finder_at(m, r, c):
    """The 7x7 finder pattern (dark ring, light ring, dark 3x3 centre) with its top left at (r, c)."""
    for i in range(7):
        for j in range(7):
            ring = max(abs(i - 3), abs(j - 3))
            if m[r + i][c + j] != (ring != 2):
                return False
    return True


@settings(max_examples=30, deadline=None)
@given(token=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=40),
       ansi=st.booleans())
def test_the_printed_blocks_are_the_code_of_the_address(token, ansi):
    url = f"https://10.0.0.7:8443/?token={token}"
    m = qr_matrix(url)
    got = read_back(qr_text(url, ansi=ansi))[:len(m)]
    assert got == m
    inner = [row[QUIET_ZONE:-QUIET_ZONE] for row in m[QUIET_ZONE:-QUIET_ZONE]]
    assert inner == [[bool(v) for v in row] for row in segno.make(url, error="l", boost_error=False).matrix]


def test_quiet_zone_and_the_three_finder_patterns():
    m = qr_matrix(URL)
    n = len(m)
    for k in range(QUIET_ZONE):
        assert not any(m[k]) and not any(m[n - 1 - k])
        assert not any(row[k] for row in m) and not any(row[n - 1 - k] for row in m)
    q, far = QUIET_ZONE, n - QUIET_ZONE - 7
    assert finder_at(m, q, q) and finder_at(m, q, far) and finder_at(m, far, q)
    assert not finder_at(m, far, far)  # only three corners: the code's orientation


def test_ansi_draws_black_on_white_and_resets_every_line():
    lines = qr_text(URL, ansi=True).split("\n")
    assert all(line.startswith("\x1b[30;47m") and line.endswith("\x1b[0m") for line in lines)
    assert "\x1b" not in qr_text(URL)
