"""The docs stay pages a newcomer can read: none over the length a reader takes in at a
sitting, and every page reachable from the README's documentation list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
# A page longer than this has become a log or wants splitting (a protocol reference, say).
MAX_LINES = 420


def test_there_are_docs_pages() -> None:
    assert len(DOCS) >= 10


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_page_is_short_enough(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{page.name} has {lines} lines; split it or move history out"


def test_readme_lists_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"docs/([A-Za-z0-9_]+\.md)", readme))
    missing = [p.name for p in DOCS if p.name not in listed]
    assert not missing, f"README's documentation list leaves out {missing}"
