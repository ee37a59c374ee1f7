"""The error raised for positions and orientations that cannot be used."""

from __future__ import annotations

from teledora.operators.errors import TeledoraError


class PoseError(TeledoraError, ValueError):
    """A position or orientation has the wrong shape or is not finite/normalisable."""
