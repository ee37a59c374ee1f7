"""A copy of the shipped robot profile with some keys changed, for tests that
check a node takes a name from the profile it runs with (``TELEDORA_PROFILE``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from teledora import models
from teledora.models.config_files import PROFILE, PROFILE_ENV


def use_profile(monkeypatch: Any, tmp_path: Path, **changes: Any) -> None:
    """Writes the shipped profile with ``changes`` (top-level keys) under
    ``tmp_path`` and points ``TELEDORA_PROFILE`` at it."""
    data = {**models.load_yaml(PROFILE), **changes}
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv(PROFILE_ENV, str(path))
