"""Every exception teledora defines derives from TeledoraError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from teledora.operators.errors import ConfigError, DeviceError, ProtocolError, TeledoraError

# teledora.operators, .nodes and .models live in their own folders (package-dir
# mapping), so a walk of teledora alone would not reach them.
ROOTS = ("teledora", "teledora.operators", "teledora.nodes", "teledora.models")


def _all_modules() -> list[str]:
    names = set()
    for root in ROOTS:
        package = importlib.import_module(root)
        names.add(root)
        names.update(info.name for info in pkgutil.walk_packages(package.__path__, f"{root}."))
    return sorted(names)


def _defined_exceptions() -> list[type[BaseException]]:
    found = []
    for name in _all_modules():
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                found.append(obj)
    return found


def test_every_exception_defined_in_teledora_derives_from_teledora_error():
    exceptions = _defined_exceptions()
    # the walk must actually reach the subsystem packages, or the check below proves nothing
    modules = {e.__module__.split(".")[1] for e in exceptions}
    assert {"operators", "nodes", "recording", "commands", "devices"} <= modules
    assert len(exceptions) >= 80
    strays = [f"{e.__module__}.{e.__qualname__}" for e in exceptions if not issubclass(e, TeledoraError)]
    assert not strays, f"exceptions not derived from TeledoraError: {strays}"


@pytest.mark.parametrize("family, builtin", [(ConfigError, ValueError), (ProtocolError, ValueError)])
def test_families_keep_the_builtin_base_callers_catch(family, builtin):
    assert issubclass(family, TeledoraError) and issubclass(family, builtin)
    with pytest.raises(builtin):
        raise family("caught by the builtin clause")


def test_a_specific_error_is_caught_by_its_family_and_its_old_builtin_base():
    from teledora.devices.drive.feetech_bus import ServoTimeoutError
    from teledora.devices.estimation.mavlink_link import LinkError
    from teledora.operators.drive.drive_config import DriveConfigError
    from teledora.operators.mocap.natnet_protocol import NatNetTruncatedError

    assert issubclass(DriveConfigError, ConfigError) and issubclass(DriveConfigError, ValueError)
    assert issubclass(NatNetTruncatedError, ProtocolError) and issubclass(NatNetTruncatedError, ValueError)
    assert issubclass(ServoTimeoutError, DeviceError) and issubclass(ServoTimeoutError, RuntimeError)
    assert issubclass(LinkError, DeviceError) and issubclass(LinkError, OSError)
