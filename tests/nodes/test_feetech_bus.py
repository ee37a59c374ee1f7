"""FeetechBus against the pty servo emulator: real bytes both ways."""

import sys
import threading
from pathlib import Path

import pytest

from teledora.nodes.feetech_bus import FeetechBus, ReplyChecksumError, ServoTimeoutError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fakes.feetech_bus import FakeFeetechBus, arm_servos  # noqa: E402


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
