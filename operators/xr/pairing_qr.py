"""The pairing address as a QR code drawn with text, for the node's terminal: the
operator scans it with the headset instead of typing a long token.

Two rows of modules share one line of text (upper and lower half blocks), with
the four-module quiet zone the QR standard asks for. With ``ansi`` the modules
are drawn black on white by colour codes, right whatever the terminal's colours;
without (a log file, dora's captured output) dark modules are full blocks, which
reads right on a light background.
"""

from __future__ import annotations

import segno

QUIET_ZONE = 4
_BLACK_ON_WHITE, _RESET = "\x1b[30;47m", "\x1b[0m"


def qr_matrix(text: str) -> list[list[bool]]:
    """The QR code of ``text`` (error correction level L, smallest version), True for a dark
    module, quiet zone included."""
    code = segno.make(text, error="l", boost_error=False, micro=False)
    inner = [[bool(v) for v in row] for row in code.matrix]
    n = len(inner) + 2 * QUIET_ZONE
    blank = [False] * n
    return ([blank[:] for _ in range(QUIET_ZONE)]
            + [[False] * QUIET_ZONE + row + [False] * QUIET_ZONE for row in inner]
            + [blank[:] for _ in range(QUIET_ZONE)])


def qr_text(text: str, ansi: bool = False) -> str:
    """``text`` as a QR code in half-block characters, one line per two module rows."""
    m = qr_matrix(text)
    if len(m) % 2:
        m.append([False] * len(m[0]))
    glyph = {(True, True): "█", (True, False): "▀", (False, True): "▄", (False, False): " "}
    lines = []
    for top, bottom in zip(m[0::2], m[1::2]):
        line = "".join(glyph[(a, b)] for a, b in zip(top, bottom))
        lines.append(f"{_BLACK_ON_WHITE}{line}{_RESET}" if ansi else line)
    return "\n".join(lines)
