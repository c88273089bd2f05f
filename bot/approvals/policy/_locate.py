"""Finding the line where a key of the policy file is set: tomllib gives no positions."""

from __future__ import annotations

import tomllib
from typing import Any

Path = tuple[str | int, ...]
"""A key's place in the file: `("actions", "x", "auto_approve", 0, "when")`."""


class _Locator:
    """Finds the line where a key is set. Best effort, on text tomllib has already accepted.

    Knows `[table]` and `[[array.of.tables]]` headers (counting the entries of arrays of
    tables), dotted and quoted keys, and skips multi-line strings and arrays. A key inside an
    inline table or a multi-line array is found at the line of the enclosing key; a key that is
    not written at all (a missing required key) at its table's header.
    """

    def __init__(self, text: str) -> None:
        self.entries: list[tuple[Path, int]] = []
        self._scan(text.split("\n"))

    def line(self, path: Path) -> int | None:
        """The line setting `path`; else the first line setting a key under it (dotted keys);
        else the line of its closest enclosing table or inline table."""
        if not path:
            return None
        under: int | None = None
        best: tuple[int, int] | None = None  # (prefix length, line)
        for entry, lineno in self.entries:
            if entry == path:
                return lineno
            n = len(entry)
            if under is None and entry[: len(path)] == path:
                under = lineno
            elif path[:n] == entry and (best is None or n > best[0]):
                best = (n, lineno)
        if under is not None:
            return under
        return best[1] if best else None

    def first_duplicate(self) -> int | None:
        seen: set[Path] = set()
        for entry, lineno in self.entries:
            if entry in seen:
                return lineno
            seen.add(entry)
        return None

    def _scan(self, lines: list[str]) -> None:
        table: Path = ()
        arrays: dict[Path, int] = {}  # resolved path of an array of tables -> its last index
        state = _ScanState()
        for lineno, line in enumerate(lines, start=1):
            if state.busy:
                state.scan(line, 0)
                continue
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            if stripped.startswith("["):
                is_array = stripped.startswith("[[")
                start = 2 if is_array else 1
                end = _find_unquoted(stripped, "]", start)
                names = _parse_key(stripped[start:end]) if end >= 0 else None
                if names is None:
                    continue
                resolved: Path = ()
                for i, name in enumerate(names):
                    resolved += (name,)
                    if resolved in arrays and not (is_array and i == len(names) - 1):
                        resolved += (arrays[resolved],)
                if is_array:
                    index = arrays.get(resolved, -1) + 1
                    arrays[resolved] = index
                    if index == 0:
                        self.entries.append((resolved, lineno))
                    resolved += (index,)
                table = resolved
                self.entries.append((table, lineno))
                continue
            eq = _find_unquoted(stripped, "=", 0)
            if eq < 0:
                continue
            names = _parse_key(stripped[:eq])
            if names is not None:
                self.entries.append((table + names, lineno))
            state.scan(stripped, eq + 1)


class _ScanState:
    """Tracks multi-line strings and open brackets across lines of a value."""

    def __init__(self) -> None:
        self.closer: str | None = None  # '"""' or "'''" while inside a multi-line string
        self.depth = 0

    @property
    def busy(self) -> bool:
        return self.closer is not None or self.depth > 0

    def scan(self, s: str, i: int) -> None:
        n = len(s)
        while i < n:
            if self.closer is not None:
                j = s.find(self.closer, i)
                if self.closer == '"""':  # skip escaped quotes
                    while j > 0 and _escaped(s, j):
                        j = s.find(self.closer, j + 1)
                if j < 0:
                    return
                i = j + 3
                self.closer = None
                continue
            c = s[i]
            if c == "#":
                return
            if c in "\"'":
                if s.startswith(c * 3, i):
                    self.closer = c * 3
                    i += 3
                    continue
                j = i + 1
                while j < n and (s[j] != c or (c == '"' and _escaped(s, j))):
                    j += 1
                i = j + 1
                continue
            if c in "[{":
                self.depth += 1
            elif c in "]}":
                self.depth = max(0, self.depth - 1)
            i += 1


def _escaped(s: str, j: int) -> bool:
    backslashes = 0
    while j - backslashes - 1 >= 0 and s[j - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _find_unquoted(s: str, target: str, i: int) -> int:
    quote: str | None = None
    while i < len(s):
        c = s[i]
        if quote:
            if c == quote and not (quote == '"' and _escaped(s, i)):
                quote = None
        elif c in "\"'":
            quote = c
        elif c == target:
            return i
        elif c == "#":
            return -1
        i += 1
    return -1


def _parse_key(text: str) -> tuple[str, ...] | None:
    """`a."b.c" . d` -> ("a", "b.c", "d"), using tomllib itself; None if it is not a key."""
    try:
        node: Any = tomllib.loads(text.strip() + " = 0")
    except (ValueError, RecursionError):
        return None
    parts: list[str] = []
    while isinstance(node, dict) and len(node) == 1:
        ((key, node),) = node.items()
        parts.append(key)
    return tuple(parts) if parts and node == 0 else None
