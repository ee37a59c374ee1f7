"""The viewer node's loop: newest message per input, drops counted, bad input skipped."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.operators.contract.messages import decode, encode
from teledora.operators.viewing import view_mapping as vm

viewer = pytest.importorskip("teledora.nodes.viewing.viewer", reason="rerun-sdk is not installed")

T0 = 1_800_000_000_000_000_000


class RecordingSink:
    """Stands in for RerunSink: keeps what would be logged."""

    def __init__(self) -> None:
        self.static: list = []
        self.logged: list[tuple[int, list]] = []
        self.closed = False

    def log_static(self, items) -> None:
        self.static += list(items)

    def log(self, stamp_ns: int, items) -> None:
        self.logged.append((stamp_ns, list(items)))

    def close(self) -> None:
        self.closed = True


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": T0 + i * 1_000_000, "height_m": i * 1e-3, "velocity_m_s": 0.0, "homed": True})


def test_a_burst_shows_only_the_newest_of_each_input_and_counts_the_rest() -> None:
    events = [("lift__state", lift(i)) for i in range(500)]
    events.insert(250, ("base__cmd_junk", pa.array([1.0, 2.0])))  # not a shown kind: ignored
    events.append(("lift__state", pa.array([1, 2, 3], pa.int8())))  # not a contract message either
    node = MockNode(events)
    sink = RecordingSink()
    viewer.main(["--output", "save"], node=node, sink=sink)
    assert sink.closed and any(isinstance(i, vm.ShapeItem) for i in sink.static)
    heights = [i.value for _, items in sink.logged for i in items if isinstance(i, vm.Scalar) and i.path == "plots/lift/height_m"]
    # the int8 array came last, so it is the newest lift__state and nothing of the burst is shown
    assert heights == []
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["dropped"] == 500 and diag["received"] == 2


def test_the_newest_state_of_a_burst_is_the_one_shown() -> None:
    node = MockNode([("lift__state", lift(i)) for i in range(300)])
    sink = RecordingSink()
    mapper = viewer.main([], node=node, sink=sink)
    heights = [i.value for _, items in sink.logged for i in items if isinstance(i, vm.Scalar) and i.path == "plots/lift/height_m"]
    assert heights == [pytest.approx(0.299)]
    assert sink.logged[-1][0] == T0 + 299 * 1_000_000  # on the message's own stamp
    assert mapper.counts.seen == {"lift__state": 1}
    assert decode("Diagnostics", node.outputs["diagnostics"][-1])["dropped"] == 299
