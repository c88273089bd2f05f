"""docs/architecture.md stays the map of the code: every module of `graphs/` and `bot/` has its
line there, and every module a line names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "architecture.md"


def modules_on_disk() -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for package in ("graphs", "bot")
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts
    }


def modules_on_the_map() -> set[str]:
    return set(re.findall(r"^- `((?:graphs|bot)/[\w/]+\.py)`: \S", MAP.read_text(), re.MULTILINE))


def test_every_module_has_its_line_on_the_map() -> None:
    missing = sorted(modules_on_disk() - modules_on_the_map())
    assert not missing, f"add a line for each to docs/architecture.md: {missing}"


def test_the_map_names_no_module_that_is_gone() -> None:
    gone = sorted(modules_on_the_map() - modules_on_disk())
    assert not gone, f"docs/architecture.md names modules that no longer exist: {gone}"
