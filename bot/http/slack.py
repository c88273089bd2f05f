"""The Slack surface: `POST /slack/events`, every Slack request (events, interactivity, slash
commands) of HTTP mode, checked here and handed to Bolt, which verifies it again.

A hostile request (a timestamp that is not a number, a body that is not UTF-8, not what its
content type says, or nested too deep) gets a 4xx here, never a 500 from deep inside Bolt.
Slack's certificate check (`ssl_check=1`, unsigned) is answered 200 and does nothing.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_sdk.signature import SignatureVerifier

from ..slack._request import bolt_request as slack_request
from ..slack.app import RECEIVED_AT
from ._limits import MAX_JSON_DEPTH, TOO_DEEP, nested_deeper
from ._responses import json_error
from .metrics import Metrics

__all__ = ["SENT_SKEW", "slack_routes"]

log = logging.getLogger("signoff.server")


def _is_ssl_check(request: web.Request, text: str) -> bool:
    """Slack's certificate check of an HTTP request URL: an unsigned form POST
    `ssl_check=1&token=...`, to be answered 200. Only that: anything else stays verified."""
    if request.content_type != "application/x-www-form-urlencoded" or "ssl_check" not in text:
        return False  # not parsed: a click's form holds its whole message
    form = urllib.parse.parse_qs(text, keep_blank_values=True)
    return form.get("ssl_check") == ["1"] and set(form) <= {"ssl_check", "token"}


SENT_SKEW = 1.0
"""Seconds Slack's clock may be ahead of ours (or ours behind) when its request timestamp is
used to tell how long a click waited before the route saw it (`_arrived`)."""


def _arrived(received: float, now_wall: float, timestamp: str) -> float:
    """When a click's 2 s budget (`click_wait`) starts, as a `time.monotonic()` instant: when
    the route received it (`received`, read with `now_wall`), or earlier for a request Slack
    signed so long ago that it must have waited before that, in the kernel's accept queue of
    a starved process or on a slow network. `X-Slack-Request-Timestamp` is whole seconds, so
    Slack sent it before `timestamp + 1`; only what is past that and `SENT_SKEW` is counted
    (an upper bound on the wait: a fresh click is never made busy by clock skew under it)."""
    waited = now_wall - (int(timestamp) + 1) - SENT_SKEW
    return received - waited if waited > 0 else received


def _signing_headers_fit(timestamp: str, signature: str) -> bool:
    """Whether Slack's signing headers have Slack's shape (epoch seconds in ASCII digits, an
    ASCII signature), so that checking them cannot fail other than by saying no."""
    return (
        timestamp.isascii()
        and timestamp.isdigit()
        and len(timestamp) <= 12
        and signature.isascii()
        and len(signature) <= 256
    )


def _malformed(body: Any) -> str | None:
    """What makes a verified Slack body unfit for Bolt's listener matching (which would fail
    with a 500 on it), or None. Slack never sends these; a forged or mangled request might."""
    if not isinstance(body, dict):
        return "the body is not an object"
    if nested_deeper(body, MAX_JSON_DEPTH):
        return TOO_DEEP
    if "actions" in body or body.get("type") == "block_actions":
        actions = body.get("actions")
        if (
            not isinstance(actions, list)
            or not actions
            or not all(isinstance(a, dict) and isinstance(a.get("action_id"), str) for a in actions)
        ):
            return '"actions" must be a list of objects with an action_id'
    for key in ("user", "view", "channel", "container", "message", "team", "event"):
        if body.get(key) is not None and not isinstance(body[key], dict):
            return f'"{key}" must be an object'
    if body.get("type") in ("view_submission", "view_closed") and not isinstance(
        (body.get("view") or {}).get("callback_id"), str
    ):
        return "a view submission needs a view with a callback_id"
    if body.get("type") in ("shortcut", "message_action") and not isinstance(
        body.get("callback_id"), str
    ):
        return "a shortcut needs a callback_id"
    if body.get("type") == "event_callback" and not isinstance(
        (body.get("event") or {}).get("type"), str
    ):
        return "an event callback needs an event with a type"
    return None


def slack_routes(bolt_app: Any, signing_secret: str | None, metrics: Metrics) -> web.RouteTableDef:
    """`POST /slack/events` for `bolt_app`, its answers counted by status (`metrics.requests`).

    Args:
        signing_secret: the Slack app's signing secret, which every request must be signed with.
    """
    routes = web.RouteTableDef()
    verifier = SignatureVerifier(signing_secret or "socket-mode")

    async def dispatch(request: web.Request) -> web.Response:
        # Checked here before Bolt sees the request, so that a hostile one (a timestamp
        # that is not a number, a body that is not UTF-8 or not what its content type
        # says) gets a 4xx and not a 500 from deep inside Bolt. Bolt verifies it again.
        received = time.monotonic()  # a click's budget counts from here (`click_wait`)
        received_wall = time.time()
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return json_error(413, "the request is too large to come from Slack")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return json_error(400, "the body is not UTF-8")
        if _is_ssl_check(request, text):  # unsigned, as Slack sends it; it does nothing
            return web.Response(status=200)
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not _signing_headers_fit(timestamp, signature) or not verifier.is_valid(
            text, timestamp, signature
        ):
            log.info("refused a Slack request: missing, wrong or stale signature")
            return json_error(401, "missing, wrong or stale Slack signature")
        try:
            bolt_request = slack_request(  # Bolt's request, a click's form decoded in C
                text,
                query=request.query_string,
                headers=request.headers,
                context={RECEIVED_AT: _arrived(received, received_wall, timestamp)},
            )
        except RecursionError:
            return json_error(400, TOO_DEEP)
        except (ValueError, TypeError, AttributeError, KeyError):
            return json_error(400, "the body is not a Slack request")
        problem = _malformed(bolt_request.body)
        if problem:
            return json_error(400, problem)
        return await to_aiohttp_response(await bolt_app.async_dispatch(bolt_request))

    @routes.post("/slack/events")
    async def slack_events(request: web.Request) -> web.Response:
        response = await dispatch(request)
        metrics.requests.labels(str(response.status)).inc()
        return response

    return routes
