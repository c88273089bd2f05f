"""A verified HTTP request from Slack as Bolt's `AsyncBoltRequest`, its form decoded in C.

A click arrives as one form field, `payload=<the whole interaction as url-encoded JSON>`: the
clicked card's message, blocks and all, some 1,500 `%XX` escapes. Bolt decodes it with
`urllib.parse.parse_qsl`, whose `unquote` is a Python loop over the escapes: about 0.2 ms of
the bot's one core per click, the largest part of what a click over HTTP costs the bot beyond
one over Socket Mode (whose envelope is JSON, decoded in C). `bolt_request` builds the request
Bolt would build, with that one field decoded by the C codecs; any other body (a slash
command's fields, an event's JSON, an escape these would decode differently) goes to Bolt's
own parser as before. `tests/slack/test_bolt_request.py` holds the two to the same result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_internals import build_async_context
from slack_bolt.request.async_request import AsyncBoltRequest

__all__ = ["bolt_request", "form_unquote"]

_PAYLOAD = "payload="
_FORM = "application/x-www-form-urlencoded"


def form_unquote(value: str) -> str | None:
    """`urllib.parse.unquote_plus(value)` (what `parse_qsl` does to a form value), or None when
    this cannot say it exactly: `value` holds a non-ASCII character or a backslash, or a `%`
    without two hex digits after it (which urllib keeps as it is).

    The escapes become `\\xXX` and Python's `unicode_escape` codec turns each into the
    character of that byte; as latin-1 those are the bytes, decoded as UTF-8 with errors
    replaced, as `unquote` decodes a run of escapes."""
    if not value.isascii() or "\\" in value:
        return None
    try:
        escaped = value.replace("+", " ").replace("%", "\\x").encode("ascii")
        raw = escaped.decode("unicode_escape")
    except UnicodeDecodeError:  # a `%` not followed by two hex digits
        return None
    return raw.encode("latin-1").decode("utf-8", "replace")


def bolt_request(
    text: str, *, query: str, headers: Mapping[str, str], context: dict[str, Any]
) -> AsyncBoltRequest:
    """What `AsyncBoltRequest(body=text, query=query, headers=headers, context=context)` is
    (HTTP mode: Bolt still verifies `raw_body`), decoding a one-field `payload=` form fast.

    Raises what Bolt's would: `ValueError` for a payload that is not JSON, `AttributeError`
    or `TypeError` for one that is not an object, `RecursionError` for one nested too deep.
    """
    request = AsyncBoltRequest(
        body="",
        query=query,
        headers=headers,  # type: ignore[arg-type]  # a Mapping is enough
        context=context,
    )
    payload = None
    if (
        request.content_type == _FORM  # Bolt parses as JSON a body of that type, or one "{..."
        and text.startswith(_PAYLOAD)
        and "&" not in text  # one field: parse_qsl would split at "&"
    ):
        payload = form_unquote(text[len(_PAYLOAD) :])
    if payload is None:
        return AsyncBoltRequest(
            body=text,
            query=query,
            headers=headers,  # type: ignore[arg-type]
            context=context,
        )
    body = json.loads(payload)
    # as AsyncBoltRequest.__init__ sets them from a body it parsed itself
    request.raw_body = text
    request.body = body
    request.context = build_async_context(AsyncBoltContext(context), body)
    return request
