"""The approvals API, for services (`Authorization: Bearer ...`):

- `POST /api/runs`: start a workflow run (`Bearer $SIGNOFF_API_TOKEN`).
- `POST /api/approvals`, `GET /api/approvals/{id}?wait=N`, `GET /api/approvals`: approvals asked
  for by services (`[services.NAME]` tokens; `bot.approvals.external`), and their webhooks.
- `GET /api/openapi.json`: the OpenAPI description of these routes (`bot.http.openapi`).

A route that needs the database answers 503 when it is busy (every pooled connection in use)
or cannot be reached: nothing was recorded, the body says which and what to check, and
`Retry-After` when to ask again (`RETRY_AFTER`). A run whose start met that after its row was
recorded is not failed for it: 202, `running`, and the worker goes on with it
(`Runs._hand_over`).

A body is read under `bot.http._limits` (1 MiB, strict JSON, nested at most 64 deep, numbers of
at most 64 characters): one that is not is a 400 (413 when too large) saying what was wrong,
and on the audit log (`api_refused` for a service, `start_refused` for a run).
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from ..approvals.errors import ApprovalError, IdempotencyConflict, InvalidInputError
from ..approvals.external import MAX_WAIT
from ..approvals.service import Signoff
from ..config import Settings
from ..scheduler import JobRunner
from ._limits import BodyRefused, read_json
from ._responses import error_response, json_error, problems_response
from .openapi import document

__all__ = ["api_routes"]


def api_routes(signoff: Signoff, settings: Settings, runner: JobRunner) -> web.RouteTableDef:
    """The `/api/` routes; `runner` is woken when a request leaves work for the job workers."""
    routes = web.RouteTableDef()

    @routes.post("/api/runs")
    async def start_run(request: web.Request) -> web.Response:
        if not settings.api_token:
            return json_error(404, "the runs API is off: set SIGNOFF_API_TOKEN to enable it")
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), f"Bearer {settings.api_token}".encode()
        ):
            return json_error(
                401, "missing or wrong bearer token (Authorization: Bearer $SIGNOFF_API_TOKEN)"
            )
        try:
            body = await read_json(request)
        except BodyRefused as e:
            await signoff.runs.refuse_at_door(e.message)
            return json_error(e.status, f"{e.message}; {_RUN_SHAPE}")
        problem = _run_problem(body)
        if problem is not None:
            await signoff.runs.refuse_at_door(problem, body)
            return json_error(400, problem)
        if not (body.get("channel") or settings.default_channel):
            await signoff.runs.refuse_at_door(NO_RUN_CHANNEL, body, "unreachable")
            return json_error(400, NO_RUN_CHANNEL)
        try:
            report = await signoff.start(
                body["workflow"],
                body.get("input") or {},
                requester=body["requester"],
                channel=body.get("channel") or settings.default_channel,
                thread_id=body.get("thread_id"),
                check_starter=True,
            )
        except InvalidInputError as e:  # what is wrong, field by field
            return web.json_response(
                {"ok": False, "error": e.message, "problems": e.problems}, status=400
            )
        except ApprovalError as e:
            return error_response(e)
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
    return routes


NO_RUN_CHANNEL = (
    'no channel to post the run\'s cards in, so no one would be asked: send "channel" (a '
    "channel id like C0123ABCD) in the request, or set SIGNOFF_DEFAULT_CHANNEL where signoff "
    "run runs; nothing was recorded"
)


_RUN_SHAPE = (
    'the body must be a JSON object: {"workflow": str, "input": object, "requester": str, '
    '"channel"?: str, "thread_id"?: str}'
)


def _run_problem(body: Any) -> str | None:
    """What makes `body` (parsed JSON) not a request to start a run, or None."""
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("workflow"), str)
        or not isinstance(body.get("input", {}), dict)
    ):
        return _RUN_SHAPE.replace("the body must be", "expected")
    requester = body.get("requester")
    if not isinstance(requester, str) or not requester:
        return '"requester" (who asks: a Slack user id or a service name) is required'
    for key in ("channel", "thread_id"):
        if body.get(key) is not None and not isinstance(body[key], str):
            return f'"{key}" must be a string when given'
    return None


_REQUEST_KEYS = frozenset({"action", "args", "requester", "title", "dedupe_key", "callback_url"})
_APPROVAL_SHAPE = (
    'the body must be a JSON object: {"action": ..., "args": {...}, "requester": ..., '
    '"title"?, "dedupe_key"?, "callback_url"?}'
)


def _approval_problem(body: Any) -> tuple[str | None, str]:
    """What makes `body` (parsed JSON) not a request for an approval, or None; and the kind
    of it, for the audit log's count of repeated refusals."""
    if not isinstance(body, dict):
        return _APPROVAL_SHAPE, "not_an_object"
    if set(body) - _REQUEST_KEYS:
        return (
            f"unknown field(s) {', '.join(sorted(set(body) - _REQUEST_KEYS))}; the fields "
            f"are {', '.join(sorted(_REQUEST_KEYS))}"
        ), "unknown_fields"
    if not isinstance(body.get("action"), str) or not body["action"]:
        return '"action" (the policy\'s name of the action, a string) is required', "no_action"
    return None, "malformed"


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
        await external.refuse_unauthenticated(
            reason, route=f"{request.method} {request.path}", source=request.remote
        )
        return json_error(
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
            body = await read_json(request)
        except BodyRefused as e:
            raw = await request.read() if e.status != 413 else None  # cached when read whole
            await external.refuse_malformed(service, e.message, body=raw, code=e.code)
            return json_error(e.status, f"{e.message}; {_APPROVAL_SHAPE}")
        raw = await request.read()
        problem, code = _approval_problem(body)
        if problem is not None:
            await external.refuse_malformed(service, problem, body=raw, code=code)
            return json_error(400, problem)
        try:
            found = await external.request(
                service=service,
                action=body["action"],
                args=body.get("args", {}),
                requester=body.get("requester"),  # checked inside
                title=body.get("title"),
                dedupe_key=body.get("dedupe_key"),
                callback_url=body.get("callback_url"),
                idempotency_key=request.headers.get("Idempotency-Key"),
                body=raw,
            )
        except (InvalidInputError, IdempotencyConflict) as e:
            return problems_response(e)
        except ApprovalError as e:
            return error_response(e)
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
            return json_error(
                400, f"wait must be a number of seconds from 0 to {MAX_WAIT:g}, got {raw!r}"
            )
        try:
            found = await external.get(
                request.match_info["approval_id"], service=service, wait=min(wait, MAX_WAIT)
            )
        except ApprovalError as e:
            return error_response(e)
        return web.json_response(found.to_json())

    @routes.get("/api/approvals")
    async def list_approvals(request: web.Request) -> web.Response:
        service = await service_of(request)
        if isinstance(service, web.Response):
            return service
        if request.query.get("status", "pending") != "pending":
            return json_error(400, "only pending approvals are listed: ?status=pending")
        try:
            found = await external.pending(service=service)
        except ApprovalError as e:
            return error_response(e)
        return web.json_response({"approvals": [a.to_json() for a in found]})

    @routes.get("/api/openapi.json")
    async def openapi(request: web.Request) -> web.Response:
        return web.json_response(document())
