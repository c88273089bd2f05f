"""What the routes allow of a JSON request body: its size, how deep it nests, how long a number
may be written, and that it is strict JSON (UTF-8, each key once, no NaN). `read_json` reads a
body under these limits, and says what was wrong when it is not."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from aiohttp import web

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_CHARS",
    "TOO_DEEP",
    "BodyRefused",
    "nested_deeper",
    "parse_json",
    "read_json",
]


MAX_BODY_BYTES = 1024 * 1024
"""The largest request body the bot reads (1 MiB); a larger one is refused with a 413."""
MAX_JSON_DEPTH = 64
"""How deep objects and arrays may nest in a request body; no Slack payload or run input needs
more, and the code that walks a value (schemas, canonical JSON) recurses."""
MAX_NUMBER_CHARS = 64
"""How many characters one number of a request body may be written with (`-12.5e3` is 7): a
float needs 25 at most, an integer of 64 digits is more than any amount or id; a longer one is
sent as a string. Python would spend seconds on a 100,000-digit integer, and refuses 4,300."""
TOO_DEEP = f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels of objects and arrays"
"""What a request nested deeper is told (a 400)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""How a lone surrogate gets into a parsed string: only through an escape (UTF-8 has none)."""


class BodyRefused(Exception):
    """A request body the routes do not take: `status` (400, or 413 when too large), what was
    wrong, in `message`, and its kind in a word, `code` (`too_deep`, `duplicate_key`, ...: the
    audit log counts repeats of one kind)."""

    def __init__(self, message: str, code: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status


async def read_json(request: web.Request) -> Any:
    """The request's body, parsed by `parse_json`.

    Raises:
        BodyRefused: too large (413), or not strict JSON within the limits (400).
    """
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BodyRefused(
            f"the body is larger than {MAX_BODY_BYTES:,} bytes (1 MiB), the most the bot reads; "
            "send the large values by reference (an id or a URL) instead",
            "too_large",
            413,
        ) from None
    return parse_json(raw)


def parse_json(raw: bytes) -> Any:
    """`raw` as JSON, refused unless it is strict JSON (RFC 8259) within the limits: UTF-8,
    each key once in an object, finite numbers of at most `MAX_NUMBER_CHARS` characters,
    nesting at most `MAX_JSON_DEPTH` deep, and strings of text (no lone surrogate escapes).

    Raises:
        BodyRefused: what was wrong, where it can be told (a 400).
    """
    if not raw.strip():
        raise BodyRefused("the body is empty: send a JSON object", "empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyRefused(
            f"the body is not UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start} is not "
            "valid there; send JSON encoded in UTF-8",
            "not_utf8",
        ) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_object,
            parse_int=_integer,
            parse_float=_float,
            parse_constant=_constant,
        )
    except RecursionError:
        raise BodyRefused(TOO_DEEP, "too_deep") from None
    except json.JSONDecodeError as e:
        raise BodyRefused(
            f"the body is not JSON: {e.msg} at line {e.lineno}, column {e.colno}", "not_json"
        ) from None
    if nested_deeper(value, MAX_JSON_DEPTH):
        raise BodyRefused(TOO_DEEP, "too_deep")
    if _SURROGATE_ESCAPE.search(text):
        _no_lone_surrogates(value)
    return value


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise BodyRefused(
                f"the JSON body has the key {_quoted(key)} twice in one object; each key may "
                "appear once (which one counts would depend on the reader)",
                "duplicate_key",
            )
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means one came twice")


def _integer(written: str) -> int:
    _short(written)
    return int(written)


def _float(written: str) -> float:
    _short(written)
    value = float(written)
    if math.isinf(value):
        raise BodyRefused(
            f"the number {written} in the JSON body is beyond what a 64-bit float holds "
            "(about 1.8e308); send it as a string",
            "number_too_large",
        )
    return value


def _constant(written: str) -> Any:
    raise BodyRefused(f"{written} is not JSON: numbers in a JSON body are finite", "not_finite")


def _short(written: str) -> None:
    if len(written) > MAX_NUMBER_CHARS:
        raise BodyRefused(
            f"a number in the JSON body is written with {len(written):,} characters "
            f"({written[:12]}...); at most {MAX_NUMBER_CHARS} are read: send a longer one as "
            "a string",
            "number_too_long",
        )


def _no_lone_surrogates(value: Any) -> None:
    """Refuse a string (or key) of `value` holding a surrogate that an escape left unpaired:
    it is not text, and no database or Slack takes it."""
    stack = [value]
    while stack:
        item = stack.pop()
        strings: list[str] = []
        if isinstance(item, str):
            strings = [item]
        elif isinstance(item, dict):
            strings = list(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        for text in strings:
            found = _SURROGATE.search(text)
            if found:
                raise BodyRefused(
                    "a string in the JSON body holds a lone surrogate "
                    f"(\\u{ord(found.group()):04x}), which is not text: escape a character "
                    "outside the BMP as a pair of them, or send it as UTF-8",
                    "lone_surrogate",
                )


def _quoted(key: str) -> str:
    shown = json.dumps(key[:40])
    return shown if len(key) <= 40 else shown[:-1] + '..."'


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
