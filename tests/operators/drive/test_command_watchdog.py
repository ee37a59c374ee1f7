import pytest

from teledora.operators.drive.command_watchdog import CommandWatchdog


def test_expires_after_timeout_and_counts_trips():
    wd = CommandWatchdog(1.0)
    assert wd.expired(0)  # nothing received yet
    wd.feed(0)
    assert not wd.expired(1_000_000_000)
    assert wd.expired(1_000_000_001)
    assert wd.expired(2_000_000_000)
    assert wd.trips == 1
    wd.feed(3_000_000_000)
    assert not wd.expired(3_500_000_000)
    assert wd.expired(5_000_000_000)
    assert wd.trips == 2


def test_rejects_nonpositive_timeout():
    with pytest.raises(ValueError):
        CommandWatchdog(0.0)
