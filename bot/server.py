"""The bot's process: the HTTP server (Slack requests, health, metrics, the runs API), Socket
Mode when configured, and the background work (job worker, sweep), all on one event loop.

Routes:
- `POST /slack/events`: every Slack request (events, interactivity, slash commands), verified
  by Bolt with the signing secret.
- `GET /healthz`: 200 when the database answers, 503 with the reason when it does not.
- `GET /metrics`: Prometheus text: approvals by status, decision latency, resume failures.
- `POST /api/runs`: start a workflow run, for services (`Authorization: Bearer $SIGNOFF_API_TOKEN`).
- `POST /api/approvals`, `GET /api/approvals/{id}?wait=N`, `GET /api/approvals`: approvals asked
  for by services (`[services.NAME]` tokens; `bot.approvals.external`), and their webhooks.
- `GET /api/openapi.json`: the OpenAPI description of the API routes (`bot.openapi`).
- `/mcp`: the MCP server over streamable HTTP, for services with a token (`bot.mcp_http`).

An `/api/` route that needs the database answers 503 when it is busy (every pooled connection
in use) or cannot be reached: nothing was recorded, the body says which and what to check, and
`Retry-After` when to ask again (`RETRY_AFTER`). A run whose start met that after its row was
recorded is not failed for it: 202, `running`, and the worker goes on with it
(`Runs._hand_over`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import json
import logging
import signal
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .approvals.errors import (
    ApprovalError,
    DatabaseBusy,
    DatabaseUnavailable,
    GroupsUnavailable,
    IdempotencyConflict,
    InvalidInputError,
    StartRefused,
    UnknownApprovalError,
    UnknownWorkflowError,
)
from .approvals.external import MAX_WAIT
from .approvals.policy import StaticGroups, load_policy
from .approvals.service import Signoff
from .config import Settings, SettingsError, build_signoff
from .mcp_http import mount_mcp
from .scheduler import Foreground, JobRunner, start_scheduler

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from .slack.health import SlackHealth

__all__ = ["Metrics", "build_web_app", "serve"]

log = logging.getLogger("signoff.server")


class Metrics:
    """The process's Prometheus metrics, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.approvals = Gauge(
            "signoff_approvals", "Approvals by status", ["status"], registry=self.registry
        )
        self.decision_latency = Histogram(
            "signoff_decision_latency_seconds",
            "Time from an approval's request to its decision",
            buckets=(60, 300, 900, 3600, 4 * 3600, 86400, 3 * 86400, 7 * 86400),
            registry=self.registry,
        )
        self.resume_failures = Counter(
            "signoff_resume_failures_total", "Resumed runs that failed", registry=self.registry
        )
        self.undeliverable = Counter(
            "signoff_slack_undeliverable_total",
            "Slack messages given up on (an error retrying cannot clear), by Slack error",
            ["error"],
            registry=self.registry,
        )
        self.waiting_reads = Gauge(
            "signoff_api_waiting_reads",
            "Reads of the approvals API waiting for a decision (?wait=N)",
            registry=self.registry,
        )
        self.requests = Counter(
            "signoff_slack_requests_total",
            "Slack requests by HTTP status",
            ["status"],
            registry=self.registry,
        )


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)


_STATUSES: tuple[tuple[type[ApprovalError], int], ...] = (
    (UnknownWorkflowError, 404),
    (UnknownApprovalError, 404),
    (StartRefused, 403),
    (GroupsUnavailable, 503),  # Slack could not say who is in a group: ask again later
    (DatabaseUnavailable, 503),
    (ApprovalError, 400),
)
"""The HTTP status of each governance error, most specific first."""


RETRY_AFTER: tuple[tuple[type[ApprovalError], int], ...] = (
    (DatabaseBusy, 2),  # every connection was in use: a burst, over in moments
    (DatabaseUnavailable, 10),  # down or unreachable: a restart takes some seconds
    (GroupsUnavailable, 10),
)
"""The `Retry-After` (seconds) of each 503: when asking again is worth it. Nothing was
recorded, so the same request can be made again as it is."""


def _error_response(error: ApprovalError) -> web.Response:
    """The one place the HTTP API turns a governance error into a status and a message."""
    status = next(code for kind, code in _STATUSES if isinstance(error, kind))
    if status != 503:
        return _json_error(status, error.message)
    after = next(seconds for kind, seconds in RETRY_AFTER if isinstance(error, kind))
    message = error.message
    if isinstance(error, DatabaseUnavailable) and "nothing was recorded" not in message:
        message += f"; nothing was recorded, try again in {after} s or more"
    return web.json_response(
        {"ok": False, "error": message}, status=503, headers={"Retry-After": str(after)}
    )


def _is_ssl_check(request: web.Request, text: str) -> bool:
    """Slack's certificate check of an HTTP request URL: an unsigned form POST
    `ssl_check=1&token=...`, to be answered 200. Only that: anything else stays verified."""
    if request.content_type != "application/x-www-form-urlencoded" or "ssl_check" not in text:
        return False  # not parsed: a click's form holds its whole message
    form = urllib.parse.parse_qs(text, keep_blank_values=True)
    return form.get("ssl_check") == ["1"] and set(form) <= {"ssl_check", "token"}


MAX_JSON_DEPTH = 64
"""How deep objects and arrays may nest in a request body; no Slack payload or run input needs
more, and the code that walks a value (schemas, canonical JSON) recurses."""
_TOO_DEEP = f"the JSON body is nested deeper than {MAX_JSON_DEPTH} levels of objects and arrays"


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


def _nested_deeper(value: Any, limit: int) -> bool:
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


def _malformed(body: Any) -> str | None:
    """What makes a verified Slack body unfit for Bolt's listener matching (which would fail
    with a 500 on it), or None. Slack never sends these; a forged or mangled request might."""
    if not isinstance(body, dict):
        return "the body is not an object"
    if _nested_deeper(body, MAX_JSON_DEPTH):
        return _TOO_DEEP
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


def build_web_app(
    signoff: Signoff,
    settings: Settings,
    *,
    bolt_app: Any | None,
    runner: JobRunner,
    metrics: Metrics,
    slack_health: SlackHealth | None = None,
) -> web.Application:
    """The aiohttp application. `bolt_app` is None in Socket Mode (no Slack route is served);
    `slack_health` (the sink's) degrades `/healthz` once Slack refuses the bot token."""
    routes = web.RouteTableDef()

    if bolt_app is not None:
        from slack_bolt.adapter.aiohttp import to_aiohttp_response
        from slack_sdk.signature import SignatureVerifier

        from .slack._request import bolt_request as slack_request
        from .slack.app import RECEIVED_AT

        verifier = SignatureVerifier(settings.slack_signing_secret or "socket-mode")

        async def dispatch(request: web.Request) -> web.Response:
            # Checked here before Bolt sees the request, so that a hostile one (a timestamp
            # that is not a number, a body that is not UTF-8 or not what its content type
            # says) gets a 4xx and not a 500 from deep inside Bolt. Bolt verifies it again.
            received = time.monotonic()  # a click's budget counts from here (`click_wait`)
            received_wall = time.time()
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge:
                return _json_error(413, "the request is too large to come from Slack")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return _json_error(400, "the body is not UTF-8")
            if _is_ssl_check(request, text):  # unsigned, as Slack sends it; it does nothing
                return web.Response(status=200)
            timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
            signature = request.headers.get("X-Slack-Signature", "")
            if not _signing_headers_fit(timestamp, signature) or not verifier.is_valid(
                text, timestamp, signature
            ):
                log.info("refused a Slack request: missing, wrong or stale signature")
                return _json_error(401, "missing, wrong or stale Slack signature")
            try:
                bolt_request = slack_request(  # Bolt's request, a click's form decoded in C
                    text,
                    query=request.query_string,
                    headers=request.headers,
                    context={RECEIVED_AT: _arrived(received, received_wall, timestamp)},
                )
            except RecursionError:
                return _json_error(400, _TOO_DEEP)
            except (ValueError, TypeError, AttributeError, KeyError):
                return _json_error(400, "the body is not a Slack request")
            problem = _malformed(bolt_request.body)
            if problem:
                return _json_error(400, problem)
            return await to_aiohttp_response(await bolt_app.async_dispatch(bolt_request))

        @routes.post("/slack/events")
        async def slack_events(request: web.Request) -> web.Response:
            response = await dispatch(request)
            metrics.requests.labels(str(response.status)).inc()
            return response

    @routes.get("/healthz")
    async def healthz(request: web.Request) -> web.Response:
        try:
            await signoff.db.ping(timeout=3.0)
        except DatabaseUnavailable as e:
            return _json_error(503, e.message)
        if slack_health is not None and slack_health.token_error:
            return web.json_response(
                {
                    "ok": False,
                    "slack": slack_health.token_error,
                    "error": f"Slack refuses the bot token ({slack_health.token_error}): no "
                    "card or update can be delivered, and signoff calls Slack no more until it "
                    "restarts (they wait, nothing is lost). Set a valid "
                    "SLACK_BOT_TOKEN (OAuth & Permissions on api.slack.com/apps; reinstall the "
                    "app if it was uninstalled) and restart signoff",
                },
                status=503,
            )
        return web.json_response({"ok": True, "database": signoff.db.display_url})

    @routes.get("/metrics")
    async def metrics_route(request: web.Request) -> web.Response:
        try:
            counts = await signoff.approval_counts()
        except DatabaseUnavailable as e:
            return _json_error(503, e.message)
        for status in ("pending", "approved", "rejected", "expired", "cancelled"):
            metrics.approvals.labels(status).set(counts.get(status, 0))
        metrics.waiting_reads.set(signoff.external.waiting)
        return web.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    @routes.post("/api/runs")
    async def start_run(request: web.Request) -> web.Response:
        if not settings.api_token:
            return _json_error(404, "the runs API is off: set SIGNOFF_API_TOKEN to enable it")
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), f"Bearer {settings.api_token}".encode()
        ):
            return _json_error(
                401, "missing or wrong bearer token (Authorization: Bearer $SIGNOFF_API_TOKEN)"
            )
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _json_error(
                400, 'the body must be JSON: {"workflow": ..., "input": {...}, "requester": ...}'
            )
        except RecursionError:
            return _json_error(400, _TOO_DEEP)
        if _nested_deeper(body, MAX_JSON_DEPTH):
            return _json_error(400, _TOO_DEEP)
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("workflow"), str)
            or not isinstance(body.get("input", {}), dict)
        ):
            return _json_error(
                400, 'expected {"workflow": str, "input": object, "requester": str, "channel": str}'
            )
        requester = body.get("requester")
        if not isinstance(requester, str) or not requester:
            return _json_error(
                400, '"requester" (who asks: a Slack user id or a service name) is required'
            )
        for key in ("channel", "thread_id"):
            if body.get(key) is not None and not isinstance(body[key], str):
                return _json_error(400, f'"{key}" must be a string when given')
        try:
            report = await signoff.start(
                body["workflow"],
                body.get("input") or {},
                requester=requester,
                channel=body.get("channel") or settings.default_channel,
                thread_id=body.get("thread_id"),
                check_starter=True,
            )
        except InvalidInputError as e:  # what is wrong, field by field
            return web.json_response(
                {"ok": False, "error": e.message, "problems": e.problems}, status=400
            )
        except ApprovalError as e:
            return _error_response(e)
        runner.kick()
        return web.json_response(
            {
                "ok": True,
                "thread_id": report.thread_id,
                "status": report.status,
                "approvals": list(report.approvals),
                "error": report.error,
            },
            # running: the database was busy mid-run, and the worker goes on with it (`error`)
            status=202 if report.status == "running" else 201,
        )

    _approval_routes(routes, signoff, runner)

    app = web.Application(client_max_size=1024 * 1024)
    app.add_routes(routes)
    mount_mcp(app, signoff)  # `/mcp`: the MCP server, for services with a bearer token
    return app


_REQUEST_KEYS = frozenset({"action", "args", "requester", "title", "dedupe_key", "callback_url"})


def _problems_response(error: InvalidInputError | IdempotencyConflict) -> web.Response:
    """422: what is wrong, field by field (`[{"field", "message"}]`)."""
    if isinstance(error, IdempotencyConflict):
        problems = [{"field": "Idempotency-Key", "message": "was used for a different request"}]
    else:
        problems = [{"field": k, "message": v} for k, v in error.problems.items()]
    return web.json_response(
        {"ok": False, "error": error.message, "problems": problems}, status=422
    )


def _approval_routes(routes: web.RouteTableDef, signoff: Signoff, runner: JobRunner) -> None:
    """The approvals API: services ask for approvals and read them (`bot.approvals.external`).
    A token names its service; it may request and read, never decide."""
    external = signoff.external

    async def service_of(request: web.Request) -> str | web.Response:
        """The service the request's bearer token names, or the 401 to answer (audited)."""
        header = request.headers.get("Authorization", "")
        service = external.authenticate_header(header)
        if service is not None:
            return service
        reason = "no bearer token" if not header else "a wrong bearer token"
        await external.refuse_unauthenticated(reason, route=f"{request.method} {request.path}")
        return _json_error(
            401,
            f"{reason}: send Authorization: Bearer <token>, the token of a service of the "
            "policy ([services.NAME] token_env names the variable that holds it)",
        )

    @routes.post("/api/approvals")
    async def request_approval(request: web.Request) -> web.Response:
        service = await service_of(request)
        if isinstance(service, web.Response):
            return service
        try:
            body = json.loads(await request.read())
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        problem = None
        if not isinstance(body, dict):
            problem = (
                'the body must be a JSON object: {"action": ..., "args": {...}, '
                '"requester": ..., "title"?, "dedupe_key"?, "callback_url"?}'
            )
        elif set(body) - _REQUEST_KEYS:
            problem = (
                f"unknown field(s) {', '.join(sorted(set(body) - _REQUEST_KEYS))}; the fields "
                f"are {', '.join(sorted(_REQUEST_KEYS))}"
            )
        elif not isinstance(body.get("action"), str) or not body["action"]:
            problem = '"action" (the policy\'s name of the action, a string) is required'
        if problem is not None:
            await external.refuse_malformed(service, problem)
            return _json_error(400, problem)
        assert isinstance(body, dict)
        try:
            found = await external.request(
                service=service,
                action=body["action"],
                args=body.get("args", {}),
                requester=body.get("requester"),  # type: ignore[arg-type]  # checked inside
                title=body.get("title"),
                dedupe_key=body.get("dedupe_key"),
                callback_url=body.get("callback_url"),
                idempotency_key=request.headers.get("Idempotency-Key"),
            )
        except (InvalidInputError, IdempotencyConflict) as e:
            return _problems_response(e)
        except ApprovalError as e:
            return _error_response(e)
        runner.kick()
        return web.json_response(found.to_json(), status=202 if found.created else 200)

    @routes.get("/api/approvals/{approval_id}")
    async def get_approval(request: web.Request) -> web.Response:
        service = await service_of(request)
        if isinstance(service, web.Response):
            return service
        raw = request.query.get("wait", "0")
        try:
            wait = float(raw)
        except ValueError:
            wait = -1.0
        if not (0 <= wait < float("inf")):
            return _json_error(
                400, f"wait must be a number of seconds from 0 to {MAX_WAIT:g}, got {raw!r}"
            )
        try:
            found = await external.get(
                request.match_info["approval_id"], service=service, wait=min(wait, MAX_WAIT)
            )
        except ApprovalError as e:
            return _error_response(e)
        return web.json_response(found.to_json())

    @routes.get("/api/approvals")
    async def list_approvals(request: web.Request) -> web.Response:
        service = await service_of(request)
        if isinstance(service, web.Response):
            return service
        if request.query.get("status", "pending") != "pending":
            return _json_error(400, "only pending approvals are listed: ?status=pending")
        try:
            found = await external.pending(service=service)
        except ApprovalError as e:
            return _error_response(e)
        return web.json_response({"approvals": [a.to_json() for a in found]})

    @routes.get("/api/openapi.json")
    async def openapi(request: web.Request) -> web.Response:
        from .openapi import document

        return web.json_response(document())


class WebhookClient:
    """Delivers webhooks (`ExternalApprovals.send`) with one aiohttp session: 10 s per try,
    redirects not followed (a receiver answers itself; a redirect is a failure, retried)."""

    def __init__(self) -> None:
        self._session: Any = None

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        async with self._session.post(
            url, data=body, headers=dict(headers), allow_redirects=False
        ) as response:
            await response.read()
            return int(response.status)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def build_runtime(
    settings: Settings, *, metrics: Metrics | None = None, session: Any = None
) -> tuple[Signoff, AsyncWebClient]:
    """The governance core wired to Slack: events go to Slack, groups come from Slack.

    Args:
        session: the `aiohttp.ClientSession` every call to Slack's Web API goes through (its
            connections kept alive), which the caller closes; without one, slack_sdk opens a
            session and a connection for each call.
    """
    from .slack.app import SlackGroups
    from .slack.guard import TokenGuard
    from .slack.health import SlackHealth
    from .slack.notify import SlackSink

    kwargs: dict[str, Any] = {
        "token": settings.slack_bot_token,
        "timeout": settings.slack_timeout,
        "session": session,
    }
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    health = SlackHealth()
    client = TokenGuard(health=health, **kwargs)  # no calls once the token is dead
    policy = load_policy(settings.policy_path)
    slack_groups = SlackGroups(client)
    groups = StaticGroups(policy.groups, fallback=slack_groups)
    signoff = build_signoff(settings, policy=policy, groups=groups)
    signoff.sink = SlackSink(
        client,
        signoff,
        default_channel=settings.default_channel,
        notify_channel=settings.notify_channel,
        metrics=metrics,
        group_ids=slack_groups,
        policy=lambda: signoff.policy,
        health=health,
    )

    async def card_link(approval: Any) -> str | None:
        found = await client.chat_getPermalink(
            channel=approval.channel, message_ts=approval.message_ts
        )
        link = found.get("permalink")
        return link if isinstance(link, str) else None

    signoff.external.card_link = card_link
    return signoff, client


SLACK_START_WAIT = 60.0
"""Seconds `serve` keeps asking a Slack it cannot reach before it gives up (see
`bot.slack.credentials`: stopping, said plainly, beats serving unchecked)."""


async def _check_tokens(client: AsyncWebClient, app_token: str | None) -> str | None:
    """Slack's word on the tokens before anything is served, as a `SettingsError` (one line,
    exit 1) when it refuses one or cannot be reached; the Socket Mode URL it gave, if any."""
    from .slack.credentials import CredentialsRefused, SlackUnreachable, check_credentials

    try:
        who = await check_credentials(client, app_token, wait=SLACK_START_WAIT)
    except (CredentialsRefused, SlackUnreachable) as e:
        raise SettingsError(e.message) from e
    log.info("Slack accepts the bot token: bot %s in workspace %s", who.user_id, who.team)
    return who.socket_url


async def _release_held(signoff: Signoff) -> None:
    """Messages held back because Slack refused the previous token go out now: this start's
    check found the token accepted (`SlackSink.deliver`, `TOKEN_HELD`)."""
    from .slack.notify import TOKEN_HELD

    held = await signoff.jobs.due_now(TOKEN_HELD)
    if held:
        log.info("Slack accepts the bot token again: sending the %d message(s) held back", held)


def _keep_groups_fresh(signoff: Signoff) -> asyncio.Task[None] | None:
    """Keep the Slack user groups the policy names cached, asked again in the background, so
    that a click is judged without waiting on Slack (`SlackGroups.refresh_forever`)."""
    from .slack.app import SlackGroups

    slack_groups = getattr(signoff.sink, "group_ids", None)
    if not isinstance(slack_groups, SlackGroups):
        return None
    return asyncio.ensure_future(slack_groups.refresh_forever(signoff.policy.external_groups))


def _share_rate_limits(signoff: Signoff, client: AsyncWebClient) -> None:
    """On PostgreSQL, the client's pacing draws on the budget every replica shares (Slack
    counts its limits per workspace). Once the schema is migrated: the token check before it
    calls Slack once, with nothing to share yet."""
    from .slack.guard import TokenGuard
    from .slack.shared_pace import SharedSlots

    if signoff.db.dialect == "postgresql" and isinstance(client, TokenGuard):
        client.pace.shared = SharedSlots(signoff.db)


async def serve(settings: Settings, *, port: int, host: str = "0.0.0.0") -> None:
    """Run the bot until SIGTERM or SIGINT.

    What it opens (the Slack session, the database, the Socket Mode connection, the port, the
    workers) is closed in the reverse order on the way out, also when start-up stops half way:
    a token Slack refuses, a database that is down, a port in use.
    """
    import aiohttp

    from .slack.app import build_bolt_app

    settings.check_slack()
    metrics = Metrics()
    async with contextlib.AsyncExitStack() as opened:
        # One session for every Web API call, its connections kept alive: slack_sdk would open
        # a session, a connection and (to Slack) a TLS handshake for each call otherwise. With
        # a session of ours, slack_sdk times each call by the session's timeout.
        slack_session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=settings.slack_timeout)
        )
        opened.push_async_callback(slack_session.close)
        signoff, client = build_runtime(settings, metrics=metrics, session=slack_session)
        opened.push_async_callback(signoff.db.aclose)
        socket_url = await _check_tokens(client, settings.slack_app_token)
        await signoff.db.upgrade()
        _share_rate_limits(signoff, client)
        await signoff.release_dead_leases()  # a crashed predecessor's jobs, at once
        await _release_held(signoff)
        foreground = Foreground()  # the clicks being served; the job workers give way to them
        runner = JobRunner(
            signoff,
            concurrency=settings.workers,
            kinds=("resume", "event", "webhook"),
            foreground=foreground,
        )
        webhooks = WebhookClient()
        opened.push_async_callback(webhooks.close)
        signoff.external.send = webhooks.send
        bolt_app = build_bolt_app(
            signoff,
            client,
            runner.kick,
            # Socket Mode envelopes come over the app token's WebSocket, unsigned
            signing_secret=None if settings.slack_app_token else settings.slack_signing_secret,
            default_channel=settings.default_channel,
            serving=foreground.serving,
        )
        socket_handler = None
        if settings.slack_app_token:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            socket_handler = AsyncSocketModeHandler(bolt_app, settings.slack_app_token)
            opened.push_async_callback(socket_handler.close_async)
            socket_handler.client.wss_uri = socket_url  # the check's URL: no second Tier 1 call
            await socket_handler.connect_async()  # type: ignore[no-untyped-call]
        web_app = build_web_app(
            signoff,
            settings,
            bolt_app=None if socket_handler else bolt_app,
            runner=runner,
            metrics=metrics,
            slack_health=getattr(signoff.sink, "health", None),
        )
        web_runner = web.AppRunner(web_app, access_log=None)
        await web_runner.setup()
        opened.push_async_callback(web_runner.cleanup)
        await _listen(web.TCPSite(web_runner, host, port), host, port)
        runner.start()
        opened.push_async_callback(_stop_workers, signoff, runner)
        groups_task = _keep_groups_fresh(signoff)
        if groups_task is not None:
            opened.callback(groups_task.cancel)
        scheduler = start_scheduler(signoff, sweep_every=settings.sweep_interval, jobs_every=None)
        opened.callback(scheduler.shutdown, wait=False)
        # first on the way out: reads waiting on a decision answer now, with what they would read
        opened.callback(signoff.external.close)
        mode = (
            "Socket Mode"
            if socket_handler
            else f"HTTP on {host}:{port}, Slack requests at /slack/events"
        )
        log.info("signoff running (%s); database %s", mode, signoff.db.display_url)

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()


async def _listen(site: web.TCPSite, host: str, port: int) -> None:
    """Start listening on `host:port`, or say why it cannot and what to do.

    Raises:
        SettingsError: the port is taken (another `signoff run` or `signoff demo`?), or the
            address is not one of this machine's, or the port needs privileges.
    """
    try:
        await site.start()
    except OSError as e:
        why = {
            errno.EADDRINUSE: "the port is in use (another signoff run or signoff demo?): stop "
            "that one, or pass --port with a free one",
            errno.EADDRNOTAVAIL: "the address is not one of this machine's: pass --host "
            "127.0.0.1 (this machine only) or 0.0.0.0 (every interface)",
            errno.EACCES: "a port below 1024 needs privileges: pass --port 1024 or above (the "
            "default is 3000)",
        }.get(e.errno or 0, f"{e.strerror or e}: pass another --host or --port")
        raise SettingsError(f"cannot listen on {host}:{port}: {why}") from e


async def _stop_workers(signoff: Signoff, runner: JobRunner) -> None:
    """Let the job workers finish what they hold, then link what was recorded in the last
    moments into the audit chain."""
    await runner.stop()
    try:
        await signoff.link_audit()
    except Exception as e:  # noqa: BLE001 -- another process or the next start links it
        log.warning("could not link the last audit entries on the way out: %s", e)
