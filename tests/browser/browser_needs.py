"""What the browser tests need, in one place: Debian's Chromium, the npm
packages under tests/browser (playwright-core, iwer) and node; a test module
sets ``pytestmark = NEEDS_BROWSER`` and is skipped, saying why, without them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
IWER = HERE / "node_modules" / "iwer" / "build" / "iwer.module.js"
PLAYWRIGHT = HERE / "node_modules" / "playwright-core"

NEEDS_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="needs node on PATH")
NEEDS_BROWSER = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium)"),
    pytest.mark.skipif(not (IWER.exists() and PLAYWRIGHT.exists()),
                       reason="needs npm packages under tests/browser (cd tests/browser && npm ci)"),
    NEEDS_NODE,
]
