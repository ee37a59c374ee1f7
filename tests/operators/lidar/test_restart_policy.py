import pytest

from teledora.operators.lidar.restart_policy import CONNECT, RESTART_SCAN, RestartPolicy

S = 1_000_000_000


def test_every_connect_waits_the_power_up_delay():
    p = RestartPolicy(max_restarts=5, power_up_delay_s=3.0)
    p.start(0)
    assert p.due(3 * S - 1) is None and p.due(3 * S) == CONNECT
    # the port vanished (unplug): reopen after the back-off and the delay again
    attempt = p.fault(10 * S, port_lost=True)
    assert attempt.action == CONNECT and attempt.due_ns == 10 * S + int(0.4 * S) + 3 * S


def test_faults_restart_the_scan_then_reopen_with_growing_backoff():
    p = RestartPolicy(max_restarts=5, power_up_delay_s=0.0)
    kinds = [p.fault(0, port_lost=False) for _ in range(4)]
    assert [k.action for k in kinds] == [RESTART_SCAN, RESTART_SCAN, CONNECT, CONNECT]
    assert [k.due_ns for k in kinds] == [int(0.4 * S), int(0.8 * S), int(1.6 * S), int(3.2 * S)]


def test_budget_spent_gives_up_for_good_and_a_turn_refills_it():
    p = RestartPolicy(max_restarts=2, power_up_delay_s=0.0)
    assert p.fault(0, False) is not None and p.fault(0, False) is not None
    p.turn_completed()
    assert p.fault(0, False) is not None and p.fault(0, False) is not None
    assert p.fault(0, False) is None and p.gave_up
    assert p.due(100 * S) is None


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        RestartPolicy(max_restarts=-1, power_up_delay_s=0.0)
