"""Robot models and configuration shipped with teledora (package data).

Config files are read through :mod:`teledora.models.config_files`
(``load_config`` and one ``load_*`` per subsystem file).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from teledora.operators.model.robot_profile import RobotProfile

MODELS_DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """Absolute path of a file shipped under models/, e.g. ``path("alohamini2/scene.xml")``."""
    p = MODELS_DIR / name
    if not p.exists():
        raise FileNotFoundError(f"teledora model file not found: {name}")
    return p


def load_yaml(name: str) -> dict[str, Any]:
    """The raw mapping of a YAML file shipped under models/, unchecked: for
    tools and tests that edit a shipped config before parsing it."""
    from teledora.models.config_files import read_config_file

    return dict(read_config_file(path(name))[1])


def load_profile(name: str | None = None) -> RobotProfile:
    """The robot profile shipped under models/ (see ``config_files.load_profile``)."""
    from teledora.models.config_files import load_profile as load

    return load(name)
