"""Where the upstream reference data (URDF, meshes) lives for the tests that
compare the project's model with it. It is not part of the repository: by
default ``../shared/reference`` beside the repository root, or the folder named
by ``TELEDORA_REFERENCE_DIR``. Tests skip, saying so, when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "reference"


def reference_dir() -> Path:
    return Path(os.environ.get("TELEDORA_REFERENCE_DIR", _DEFAULT))


def require(relative: str) -> Path:
    """The reference file or folder ``relative``; skips the test when absent."""
    path = reference_dir() / relative
    if not path.exists():
        pytest.skip(f"reference data {relative} not found under {reference_dir()} "
                    "(not part of the repository; set TELEDORA_REFERENCE_DIR to its folder)")
    return path
