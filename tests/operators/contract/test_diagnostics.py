"""Diagnostics: counters, and the level raised by inputs rejected or clamped in a period."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.messages import DIAGNOSTIC_LEVELS, decode, encode


def test_a_quiet_node_reports_its_own_level() -> None:
    d = Diagnostics("base")
    assert d.snapshot(1)["level"] == "ok"
    d.set_status("warn", "homing")
    snap = d.snapshot(2)
    assert (snap["level"], snap["message"]) == ("warn", "homing")


def test_a_rejection_makes_the_next_report_warn_and_only_that_one() -> None:
    d = Diagnostics("base")
    d.received = 3
    d.reject("base_cmd: forward_m_s 1e+300 is absurd")
    snap = d.snapshot(1)
    assert snap["level"] == "warn"
    assert "1 input(s) rejected" in snap["message"] and "absurd" in snap["message"]
    assert snap["rejected"] == 1 and snap["clamped"] == 0
    later = d.snapshot(2)
    assert later["level"] == "ok" and later["message"] == "" and later["rejected"] == 1  # counters stay cumulative


def test_a_clamp_makes_the_next_report_warn() -> None:
    d = Diagnostics("lift")
    d.clamp("lift_cmd: velocity_m_s")
    d.clamp("lift_cmd: velocity_m_s")
    snap = d.snapshot(1)
    assert snap["level"] == "warn" and "2 input(s) clamped" in snap["message"] and snap["clamped"] == 2
    assert d.snapshot(2)["level"] == "ok"


def test_an_error_is_never_lowered_to_warn() -> None:
    d = Diagnostics("arms")
    d.set_status("error", "servo id 3 silent")
    d.reject("joint_commands: unknown joint names ['tail']")
    snap = d.snapshot(1)
    assert (snap["level"], snap["message"]) == ("error", "servo id 3 silent")


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="level"):
        Diagnostics("x").set_status("fine")


def test_a_snapshot_is_a_contract_message() -> None:
    d = Diagnostics("base")
    d.clamp("base_cmd: yaw_rad_s")
    d.details = {"limits": {"clamped": 1}}
    msg = decode("Diagnostics", encode("Diagnostics", d.snapshot(7)))
    assert msg["clamped"] == 1 and json.loads(msg["details_json"]) == {"limits": {"clamped": 1}}


_OPS = st.lists(
    st.one_of(
        st.just(("reject",)),
        st.just(("clamp",)),
        st.tuples(st.just("status"), st.sampled_from(DIAGNOSTIC_LEVELS)),
        st.just(("snapshot",)),
    ),
    max_size=60,
)


@given(_OPS)
def test_reported_level_matches_its_definition(ops) -> None:
    """Against a direct reading of the rule: the node's level, raised to warn if
    anything was rejected or clamped since the previous report."""
    d = Diagnostics("n")
    own, refused_in_period, rejected, clamped = "ok", False, 0, 0
    rank = {level: i for i, level in enumerate(DIAGNOSTIC_LEVELS)}
    for t, op in enumerate(ops):
        if op[0] == "reject":
            d.reject(f"r{t}")
            rejected += 1
            refused_in_period = True
        elif op[0] == "clamp":
            d.clamp(f"c{t}")
            clamped += 1
            refused_in_period = True
        elif op[0] == "status":
            d.set_status(op[1])
            own = op[1]
        else:
            snap = d.snapshot(t)
            expected = max(own, "warn", key=rank.get) if refused_in_period else own
            assert snap["level"] == expected
            assert (snap["rejected"], snap["clamped"]) == (rejected, clamped)
            refused_in_period = False


def test_the_warn_message_names_the_last_rejection_not_a_later_error() -> None:
    d = Diagnostics("lidar")
    d.reject("scan: wrong Arrow type")
    d.error("serial port closed")
    d.set_status("ok")
    snap = d.snapshot(1)
    assert "wrong Arrow type" in snap["message"] and snap["last_error"] == "serial port closed"
