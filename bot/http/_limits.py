"""What the routes allow of a JSON request body beyond its size: how deep it may nest."""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_JSON_DEPTH", "TOO_DEEP", "nested_deeper"]


MAX_JSON_DEPTH = 64
"""How deep objects and arrays may nest in a request body; no Slack payload or run input needs
more, and the code that walks a value (schemas, canonical JSON) recurses."""
TOO_DEEP = f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels of objects and arrays"
"""What a request nested deeper is told (a 400)."""


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether `value` (parsed JSON) nests objects and arrays more than `limit` deep."""
    if not isinstance(value, (dict, list)):
        return False
    stack = [(value, 1)]  # objects and arrays only: a click's message has hundreds of scalars
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
