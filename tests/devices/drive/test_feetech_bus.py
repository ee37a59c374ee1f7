"""FeetechBus against the pty servo emulator: real bytes both ways."""

import threading

import pytest

from teledora.devices.drive.feetech_bus import FeetechBus, ReplyChecksumError, ReplyLengthError, ServoTimeoutError
from teledora.fakes.feetech_bus import FakeFeetechBus, arm_servos  # noqa: E402


@pytest.fixture
def fake():
    with FakeFeetechBus(arm_servos()) as f:
        yield f


@pytest.fixture
def bus(fake):
    b = FeetechBus(fake.port, timeout_s=0.2)
    b.connect()
    yield b
    b.close()


def test_ping_read_write(fake, bus):
    assert bus.ping(3) == 777
    bus.write(3, "Operating_Mode", 0)
    bus.write(3, "Goal_Position", 2100)
    assert fake.servos[3].model.goal_position == 2100
    assert bus.read(3, "Torque_Enable") == 1  # a goal write switches torque on
    assert fake.writes_to(3, 42) == [(2100).to_bytes(2, "little")]


def test_sync_read_and_sync_write_seven_servos(fake, bus):
    bus.sync_write("Goal_Position", {i: 2048 + 10 * i for i in range(1, 8)})
    state = bus.sync_read(range(1, 8), ["Present_Position", "Present_Velocity", "Present_Current"])
    # the reply proves the servos have processed the (unanswered) SYNC_WRITE before it
    assert [fake.servos[i].model.goal_position for i in range(1, 8)] == [2048 + 10 * i for i in range(1, 8)]
    assert sorted(state) == list(range(1, 8))
    assert all(0 <= s["Present_Position"] < 4096 for s in state.values())


def test_silent_servo_raises_a_clear_timeout(fake, bus):
    fake.mute(5)
    with pytest.raises(ServoTimeoutError, match=r"servo id 5 .* did not answer SYNC_READ") as err:
        bus.sync_read(range(1, 8), ["Present_Position"])
    assert err.value.servo_ids == [5]
    assert bus.stats.retries == 1


def test_corrupt_reply_is_rejected_then_retried(fake, bus):
    fake.corrupt_replies = 1
    assert bus.read(2, "Model_Number") == 777
    assert bus.stats.checksum_errors == 1 and bus.stats.retries == 1
    fake.corrupt_replies = 10
    with pytest.raises(ReplyChecksumError, match="bad checksum"):
        bus.read(2, "Model_Number")


def test_bad_request_checksum_is_ignored_by_the_servo(fake, bus):
    frame = bytearray(b"\xff\xff\x01\x02\x01\xfb")  # PING id 1
    assert bus.transact(bytes(frame), [1], "PING")[1].code == 0
    frame[-1] ^= 1
    with pytest.raises(ServoTimeoutError, match="servo id 1"):
        bus.transact(bytes(frame), [1], "PING")
    assert fake.bad_requests == 2  # first attempt and its retry


@pytest.fixture
def slow_bus(fake):
    """Replies later than 50 ms are late; a late servo may still answer for a second."""
    b = FeetechBus(fake.port, timeout_s=0.05, retries=0, settle_max_s=1.0)
    b.connect()
    yield b
    b.close()


# Status packets name the servo, not the register: a late 2-byte Present_Position
# (2048) looks exactly like a 2-byte Model_Number (777) reply.
def test_late_reply_is_not_taken_for_the_next_read(fake, slow_bus):
    fake.delay_next_reply(3, 0.3)
    with pytest.raises(ServoTimeoutError, match="servo id 3"):
        slow_bus.read(3, "Present_Position")
    assert slow_bus.read(3, "Model_Number") == 777
    assert slow_bus.stats.settles == 1
    assert slow_bus.stats.late_replies == 1 and slow_bus.stats.late_bytes == 8
    assert slow_bus.read(3, "Model_Number") == 777  # clean again
    assert slow_bus.stats.settles == 1 and slow_bus.stats.length_errors == 0


def test_late_reply_is_not_taken_for_the_next_sync_read(fake, slow_bus):
    fake.delay_next_reply(3, 0.3)
    with pytest.raises(ServoTimeoutError, match="servo id 3"):
        slow_bus.read(3, "Present_Position")
    # a 2-byte block too: a stale 2048 would read as voltage 0, temperature 8
    state = slow_bus.sync_read(range(1, 8), ["Present_Voltage", "Present_Temperature"])
    assert state == {i: {"Present_Voltage": 120, "Present_Temperature": 30} for i in range(1, 8)}
    assert slow_bus.stats.late_replies == 1 and slow_bus.stats.settles == 1


def test_retry_discards_the_late_reply_of_its_first_attempt(fake, slow_bus):
    slow_bus.retries = 1
    fake.delay_next_reply(3, 0.3)
    assert slow_bus.read(3, "Present_Position") == 2048
    assert slow_bus.stats.retries == 1 and slow_bus.stats.late_replies == 1
    # both READs were answered once each: nothing is left in flight for the next request
    assert [r for r in fake.requests if r[1] == 0x02] == [(3, 0x02, bytes([56, 2]))] * 2
    assert slow_bus.read(3, "Model_Number") == 777
    assert slow_bus.stats.settles == 1


def test_late_servo_in_a_sync_read_holds_up_the_next_transaction(fake, slow_bus):
    fake.delay_next_reply(5, 0.3)  # 6 and 7 answer after it, late as well
    with pytest.raises(ServoTimeoutError) as err:
        slow_bus.sync_read(range(1, 8), ["Present_Position"])
    assert err.value.servo_ids == [5, 6, 7]
    assert slow_bus.read(6, "Model_Number") == 777
    assert slow_bus.stats.late_replies == 3 and slow_bus.stats.settles == 1


def test_clean_transactions_never_settle(fake, bus):
    for k in range(20):
        bus.sync_write("Goal_Position", {i: 2048 + k for i in range(1, 8)})
        bus.sync_read(range(1, 8), ["Present_Position", "Present_Velocity", "Present_Current"])
        bus.read(k % 7 + 1, "Model_Number")
        bus.write(k % 7 + 1, "Acceleration", k)
    s = bus.stats
    assert (s.settles, s.late_replies, s.late_bytes, s.length_errors, s.retries) == (0, 0, 0, 0, 0)


def test_silent_servo_settle_gives_up_when_its_reply_is_no_longer_owed(fake, bus):
    fake.mute(5)
    with pytest.raises(ServoTimeoutError):
        bus.read(5, "Model_Number")
    assert bus.stats.settles == 1  # before the retry
    fake.mute(5, False)
    assert bus.read(5, "Model_Number") == 777
    assert bus.stats.settles == 2 and bus.stats.late_replies == 0 and bus.stats.unsettled == 0


def test_reply_with_the_wrong_parameter_length_is_rejected(fake, bus):
    fake.wrong_length_replies = 1
    assert bus.read(2, "Model_Number") == 777
    assert bus.stats.length_errors == 1 and bus.stats.retries == 1
    fake.wrong_length_replies = 1  # servo 1 of the sync read answers 3 bytes
    state = bus.sync_read(range(1, 8), ["Present_Voltage", "Present_Temperature"])
    assert state == {i: {"Present_Voltage": 120, "Present_Temperature": 30} for i in range(1, 8)}
    assert bus.stats.length_errors == 2 and bus.stats.retries == 2 and bus.stats.timeouts == 0
    fake.wrong_length_replies = 2
    with pytest.raises(ReplyLengthError, match="servo id 4 .* answered 3 parameter bytes, expected 2"):
        bus.read(4, "Model_Number")
    assert bus.stats.length_errors == 4


def test_two_processes_share_the_bus_via_flock(fake):
    a, b = FeetechBus(fake.port, timeout_s=0.1), FeetechBus(fake.port, timeout_s=0.1)
    a.connect(), b.connect()
    errors = []

    def hammer(bus, ids):
        try:
            for _ in range(100):
                bus.sync_read(ids, ["Present_Position", "Present_Current"])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(a, [1, 2, 3])), threading.Thread(target=hammer, args=(b, [4, 5, 6, 7]))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    a.close(), b.close()
    assert errors == []
