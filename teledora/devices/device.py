"""The one interface of every device backend, and the rule that leaves a device safe.

Every backend a node drives or listens to (a servo bus, a lidar, a headset
feed, a motion-capture server, an autopilot), simulated or on the wire, has
the same four verbs: ``connect()``, ``read()``, ``write(command)``,
``close()``. A node's loop therefore never knows which variant it runs.

What a device is left doing when its node ends is said once per device
(:meth:`Device.stop`, :meth:`Device.stop_after_error`) and carried out once
for every node (:func:`stopped_on_exit`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Mapping

if TYPE_CHECKING:
    from teledora.runtime.node_io import NodeIO


class Device(ABC):
    """A device backend: connect, read, write, close.

    Subclasses fill in the verbs with the device's own types (the wheels read
    and write wheel ticks, a feed reads frames). The safe states default to
    commanding nothing, which is right for sensors; actuators override
    :meth:`stop` (and :meth:`stop_after_error` where an error calls for
    another state than a normal end).
    """

    @abstractmethod
    def connect(self) -> None:
        """Opens the device and puts it in its working mode; never moves anything."""

    @abstractmethod
    def read(self) -> Any:
        """What the device measured or received since the last read."""

    def write(self, command: Any) -> Any:
        """Commands the device. A sensor takes no commands.

        Raises:
            NotImplementedError: the device takes no commands.
        """
        raise NotImplementedError(f"{type(self).__name__} takes no commands")

    @abstractmethod
    def close(self) -> None:
        """Releases the device (port, sockets, threads); safe to call twice."""

    def stop(self) -> None:
        """Commands the state the device is left in when its node ends
        normally (wheels at zero, the lift holding); nothing by default."""

    def stop_after_error(self) -> None:
        """Commands the state the device is left in after an error; the same
        as :meth:`stop` unless the device says otherwise."""
        self.stop()

    def diagnostics_details(self) -> Mapping[str, Any]:
        """Extra counters for the node's ``diagnostics`` (bus statistics, say)."""
        return {}


@contextmanager
def stopped_on_exit(device: Device, io: NodeIO, name: str) -> Iterator[Device]:
    """Runs a node's work on ``device`` and leaves the device safe however it ends.

    On any exception inside the block: the node's diagnostics turn to error
    with the reason, :meth:`Device.stop_after_error` is commanded (if even
    that fails, e.g. the bus is gone, the failure is logged), diagnostics are
    published, the device is closed and the exception goes on. At a normal
    end: :meth:`Device.stop`, close, diagnostics published.

    Args:
        device: The device the block drives (connected inside the block, so
            that a failed connect also leaves it safe and closed).
        io: The node's runtime (diagnostics and logs).
        name: What the node calls the device in its messages ("base", "lift").
    """
    try:
        yield device
    except Exception as exc:
        io.diag.set_status("error", f"{name} stopped: {exc}")
        io.diag.error(str(exc))
        io.log("error", f"{name} stopped: {exc}")
        try:
            device.stop_after_error()
        except Exception as stop_exc:  # the bus may be gone entirely
            io.log("error", f"could not stop {name}: {stop_exc}")
        io.publish_diagnostics(force=True)
        device.close()
        raise
    device.stop()
    device.close()
    io.publish_diagnostics(force=True)
