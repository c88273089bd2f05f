"""Stores of each kind for the store tests: `InMemoryStore`, or `SQLStore` on one database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from graphs.store import BaseStore, InMemoryStore, SearchItem
from graphs.store.sql import SQLStore

MakeStore = Callable[..., Any]
"""`make(index=..., ttl=..., clock=...)`: a new store of the test's kind."""


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def minutes(self, n: float) -> None:
        self.now += n * 60


def store_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database of a `kind` ("memory", "sqlite", "postgres") store; "" for memory."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    if kind == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return ""


@contextmanager
def store_maker(url: str) -> Iterator[MakeStore]:
    """A `MakeStore` on `url` ("" for memory); every `SQLStore` it made is closed on exit."""
    made: list[SQLStore] = []

    def make(**kw: Any) -> BaseStore:
        if not url:
            return InMemoryStore(**kw)
        store = SQLStore(url, **kw)
        store.setup()
        made.append(store)
        return store

    try:
        yield make
    finally:
        for s in made:
            s.close()


def keys(found: list[SearchItem]) -> list[str]:
    return [i.key for i in found]
