"""Why an input from the operator's side was refused: one exception, one reason code.

Every refusal on the XR input path (a malformed frame, a stamp from the
future, a datagram without a valid MAC, a socket without a hello) carries a
short reason code. The feed nodes count refusals per code in their
diagnostics (``rejected_by_reason``) and raise the diagnostics level while
they happen, so an operator sees *what* is being refused, not only how much.
"""

from __future__ import annotations

from teledora.operators.errors import ProtocolError

#: Every reason code, with what it means. Parsing (operators/xr/xr_feed_format.py,
#: strict_json.py), assembly (feed_assembler.py), UDP authentication
#: (udp_envelope.py) and the feed devices use only these.
REASONS: dict[str, str] = {
    "oversize": "a frame, message or datagram larger than its limit",
    "not_utf8": "bytes that are not UTF-8 text",
    "too_deep": "JSON nested deeper than the format itself (checked before parsing)",
    "not_json": "not a JSON text",
    "duplicate_key": "a JSON object with the same key twice",
    "non_finite": "NaN, Infinity, or a number beyond the range of a double (1e999)",
    "number_range": "a number outside its field's range (integers beyond int64, trigger, stick, stamps)",
    "schema": "a missing, unknown or mistyped field",
    "version": "a feed version this reader does not speak",
    "quaternion_norm": "an orientation whose norm is off 1 by more than the tolerance",
    "position_range": "a position outside the tracking volume",
    "stamp_order": "a sample stamp later than the frame's send stamp",
    "future_stamp": "a stamp later than the host's now plus the skew tolerance, once mapped to the host clock",
    "no_clock": "a frame from a sender whose clock is not mapped to the host's yet",
    "short_datagram": "a UDP datagram too short to hold the envelope",
    "bad_magic": "a UDP datagram without the feed's envelope marker",
    "bad_mac": "a UDP datagram whose MAC does not verify with the pairing token",
    "replay": "a UDP datagram whose sequence number is not above its session's last one",
    "foreign_nonce": "a UDP datagram sealed for another run of the receiver (captured before a restart)",
    "stale_datagram": "a UDP datagram sent longer ago than the replay window",
    "future_datagram": "a UDP datagram stamped later than the host's now plus the skew tolerance",
    "refused_sender": "a UDP datagram from another sender session while the current one is alive",
    "binary": "a binary WebSocket message (the page sends text)",
    "bad_hello": "a first WebSocket message that is not a well-formed hello",
    "hello_timeout": "a WebSocket that sent no hello in time (closed)",
    "bad_token": "a hello with the wrong pairing token",
    "bad_origin": "a WebSocket upgrade from a page of another origin (refused before opening)",
    "busy": "a second page while another one is in control",
    "bad_control": "a malformed control message (pong) from the page",
    "internal_error": "a frame whose handling raised unexpectedly (a bug: logged with its traceback)",
}


class FeedRejected(ProtocolError):
    """An input refused on the XR input path.

    Args:
        reason: One of :data:`REASONS`.
        message: What exactly was wrong (logged, and kept as ``last_error``).
    """

    def __init__(self, reason: str, message: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown rejection reason {reason!r}")
        super().__init__(message)
        self.reason = reason


class FeedFormatError(FeedRejected):
    """A frame or message that is malformed, oversized, out of range or of an unsupported version."""
