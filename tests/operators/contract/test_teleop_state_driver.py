"""TeleopState.driver: who drives; a message from before the field reads as the operator."""

from __future__ import annotations

import pyarrow as pa
import pytest

from teledora.operators.contract import messages as m
from teledora.operators.policy.authority import DRIVERS

STATE = dict(stamp_ns=5, estop_latched=False, release_armed=False, arms_paused=False, left_clutched=False,
             right_clutched=False, left_slow=False, right_slow=False, left_pinch="full", right_pinch="full",
             reset_count=2, events=["left_anchored"])


def older_state_array() -> pa.Array:
    """A TeleopState as runs recorded it before the driver field existed."""
    older = pa.struct([f for f in m.schema("TeleopState") if f.name != "driver"])
    return pa.array([STATE], type=older)


def test_the_drivers_are_the_selectors() -> None:
    assert m.TELEOP_DRIVERS == DRIVERS


@pytest.mark.parametrize("driver", DRIVERS)
def test_driver_round_trips(driver: str) -> None:
    assert m.decode("TeleopState", m.encode("TeleopState", dict(STATE, driver=driver)))["driver"] == driver


def test_a_recorded_state_without_the_field_reads_as_operator() -> None:
    back = m.decode("TeleopState", older_state_array())
    assert back["driver"] == "operator"
    assert back["reset_count"] == 2 and back["events"] == ["left_anchored"]


def test_a_sender_without_the_field_sends_operator() -> None:
    arr = m.encode("TeleopState", STATE)
    assert arr.type == m.schema("TeleopState") and m.decode("TeleopState", arr)["driver"] == "operator"


def test_an_unknown_driver_is_rejected() -> None:
    with pytest.raises(m.MessageError, match="driver"):
        m.encode("TeleopState", dict(STATE, driver="autopilot"))
    bad = pa.array([dict(STATE, driver="autopilot")], type=m.schema("TeleopState"))
    with pytest.raises(m.MessageError, match="driver"):
        m.decode("TeleopState", bad)


def test_only_the_added_fields_may_be_absent() -> None:
    older = pa.struct([f for f in m.schema("TeleopState") if f.name not in ("driver", "events")])
    row = {k: v for k, v in STATE.items() if k != "events"}
    with pytest.raises(m.MessageError, match="wrong Arrow type"):
        m.decode("TeleopState", pa.array([row], type=older))
