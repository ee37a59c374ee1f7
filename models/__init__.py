"""Robot models and configuration shipped with teledora (package data)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MODELS_DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """Absolute path of a file shipped under models/, e.g. ``path("alohamini2/scene.xml")``."""
    p = MODELS_DIR / name
    if not p.exists():
        raise FileNotFoundError(f"teledora model file not found: {name}")
    return p


def load_yaml(name: str) -> dict[str, Any]:
    """Loads a YAML file shipped under models/ (e.g. ``"alohamini2/profile.yaml"``)."""
    with path(name).open() as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{name}: expected a mapping at top level")
    return data


def load_profile(name: str = "alohamini2/profile.yaml"):
    """The robot profile shipped under models/, as a ``RobotProfile``."""
    from teledora.operators.model.robot_profile import profile_from_dict

    return profile_from_dict(load_yaml(name))
