"""The project's exception hierarchy.

Every exception teledora defines derives from :class:`TeledoraError`, so a
caller can catch anything the project raises on purpose with one clause. The
families below group errors by what went wrong; a specific error keeps the
builtin base it always had (``ValueError``, ``RuntimeError``, ``OSError``...)
beside its family, so ``except ValueError`` callers keep working.
"""

from __future__ import annotations


class TeledoraError(Exception):
    """Base of every exception defined in teledora."""


class ConfigError(TeledoraError, ValueError):
    """A configuration (YAML file, robot profile, script, command-line setting) is
    missing a key or holds an unusable value."""


class ProtocolError(TeledoraError, ValueError):
    """Bytes or frames from a device or peer do not follow its wire protocol."""


class DeviceError(TeledoraError):
    """A device or link failed to do what was asked (no answer, fault, lost link)."""
