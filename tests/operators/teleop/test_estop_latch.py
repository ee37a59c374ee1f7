"""The latched stop and its two-step release, driven directly (time injected)."""

from __future__ import annotations

import pytest

from teledora.operators.teleop.estop_latch import EStopLatch

S = 1_000_000_000


def latch() -> tuple[EStopLatch, list[str]]:
    seen: list[str] = []
    stop = EStopLatch(2.0, seen.append)
    stop.latch("test")
    return stop, seen


@pytest.mark.parametrize("window_s", [0.0, -1.0, float("nan")])
def test_window_must_be_positive(window_s):
    with pytest.raises(ValueError, match="confirm_window_s"):
        EStopLatch(window_s, lambda _: None)


@pytest.mark.parametrize(
    "steps, latched, armed, tail",
    [
        # (time s, reasons to refuse) per release edge
        ([(1.0, [])], True, True, ["estop_release_armed"]),
        ([(1.0, []), (2.5, [])], False, False, ["estop_release_armed", "estop_released"]),
        ([(1.0, []), (3.0, [])], False, False, ["estop_release_armed", "estop_released"]),  # window inclusive
        ([(1.0, []), (3.001, [])], True, True, ["estop_release_armed", "estop_release_expired", "estop_release_armed"]),
        ([(1.0, ["left_menu"])], True, False, ["estop_release_refused:left_menu"]),
        ([(1.0, []), (1.5, ["page_stop"])], True, False,
         ["estop_release_armed", "estop_release_cancelled:page_stop", "estop_release_refused:page_stop"]),
        ([(1.0, []), (1.5, ["page_stop"]), (1.7, [])], True, True,
         ["estop_release_armed", "estop_release_cancelled:page_stop", "estop_release_refused:page_stop",
          "estop_release_armed"]),
        ([(1.0, ["a", "b"])], True, False, ["estop_release_refused:a+b"]),
    ],
)
def test_release_steps(steps, latched, armed, tail):
    stop, seen = latch()
    released = [stop.release_step(int(t * S), refuse) for t, refuse in steps]
    assert stop.latched is latched and stop.armed is armed
    assert seen == ["estop_latched:test", *tail]
    assert released[-1] is not latched and not any(released[:-1])


def test_a_new_stop_voids_an_armed_release_and_is_reported_once():
    stop, seen = latch()
    stop.release_step(1 * S, [])
    stop.latch("again")
    stop.latch("again")
    assert stop.latched and not stop.armed
    assert seen == ["estop_latched:test", "estop_release_armed", "estop_release_cancelled:again"]
    assert not stop.release_step(2 * S, [])  # arms only


def test_release_steps_while_not_latched_do_nothing():
    seen: list[str] = []
    stop = EStopLatch(2.0, seen.append)
    assert not stop.release_step(1 * S, []) and not stop.release_step(2 * S, [])
    assert not stop.armed and seen == []


def test_expire_and_cancel_are_no_ops_when_nothing_is_armed():
    stop, seen = latch()
    stop.expire(100 * S)
    stop.cancel("why")
    assert seen == ["estop_latched:test"]
