"""The stand-in's HTTP control API, under `/_sandbox/`, for tests and tools in other processes.

All bodies are JSON. Errors answer `{"ok": false, "error": ...}` with 400 (bad request or a
Slack refusal, whose code is the error), 404 (unknown response_url), 409 (no app connected) or
502 (the app could not be reached).

| route | what |
| --- | --- |
| `GET /_sandbox/calls?method=M&since=N&limit=L` | recorded calls (from index N, at most L), `{"calls": [...], "total": T, "next": I}` (I: the `since` of the next page) |
| `GET /_sandbox/calls/summary?since=N` | counts of the calls (from index N) by method and HTTP status, `{"by_method": {"chat.update": {"200": 5, "429": 1}}, "total": T}` |
| `GET /_sandbox/state?after=V&timeout=S` | the workspace; waits up to S seconds for version > V |
| `POST /_sandbox/fail_next` | `{"method", "status"?, "error"?, "retry_after"?, "count"?}` |
| `POST /_sandbox/lose_next` | `{"method", "count"?}`: done, then the connection dropped before the answer |
| `POST /_sandbox/reset` | initial workspace; calls, faults, triggers, response_urls forgotten |
| `POST /_sandbox/app` | `{"url", "signing_secret"}`: where the app listens; `{"transport": "socket"}`: over Socket Mode |
| `POST /_sandbox/delay` | `{"method", "seconds"}`: the method's answers wait that long (0: no wait) |
| `POST /_sandbox/issue_token` | `{"token"?, "app_level"?}`: the workspace issues it (or one made up), as an install does → `{"token"}` |
| `POST /_sandbox/revoke` | `{"token", "error"?}`: calls with it get `token_revoked` (or `error`) from now on |
| `POST /_sandbox/rate_limits` | `{"enabled"}`: answer 429 past Slack's rate limits, or stop |
| `POST /_sandbox/socket/disconnect` | `{"reason"?}`: Socket Mode `disconnect` (`refresh_requested`) → `{"told"}` |
| `POST /_sandbox/act/ssl_check` | Slack's unsigned ssl_check POST to the app → the app's answer |
| `POST /_sandbox/triggers` | `{"user"}` → `{"trigger_id"}` |
| `POST /_sandbox/response_urls` | `{"channel", "user", "message_ts"?}` → `{"response_url"}` |
| `POST /_sandbox/response/{id}` | a response_url: what the app posts there is applied and recorded |
| `POST /_sandbox/act/click` | `{"user", "channel", "ts", "action_id", "value"?}` → the app's answer |
| `POST /_sandbox/act/submit` | `{"user", "inputs", "view_id"?}` → answer, errors, view after |
| `POST /_sandbox/act/command` | `{"user", "channel", "text", "command"?, "trigger_id"?}` → the app's answer (`trigger_id`: send that one, e.g. an earlier command's, instead of a fresh one) |
| `POST /_sandbox/act/home` | `{"user"}` → the app's answer |
| `POST /_sandbox/act/home_click` | `{"user", "action_id", "value"?}`: a button on the user's Home tab → the app's answer |
| `POST /_sandbox/act/close` | `{"user", "view_id"?}`: the user closes their top modal (or `view_id`) |
| `POST /_sandbox/act/message` | `{"user", "channel", "text", "thread_ts"?}`: the user writes a message |
| `POST /_sandbox/act/status` | `{"user", "emoji"?, "text"?, "expiration"?}`: the user sets their status (none given: clears it); `user_change` and `user_status_changed` go to the app → `{"answers"}` |
| `POST /_sandbox/act/dnd` | `{"user", "until"?}`: the user's do-not-disturb on until `until` (Unix time), or off without it; `dnd_updated_user` goes to the app → the app's answer |

Only a program on this machine, or the sandbox's own page, may drive it: a request whose
`Host` is not this server (a DNS-rebound name) or whose `Origin` is another site's is refused
with 403, and a POST that is not `application/json` with 415 (a web page elsewhere can send a
form or plain text across origins without asking; JSON it cannot). The same holds for the
page's `/_demo/` routes. A response_url (`/_sandbox/response/{id}`) also takes the form posts
Slack accepts there.

An app's answer is `{"status", "body", "json"}` (`json` is the body parsed, or null), with
`"late": true` added when it came after Slack's 3 seconds (Slack ignored it and showed the user
an error).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.interactions import apply_response
from bot.sandbox.signing import AppResponse

if TYPE_CHECKING:
    from bot.sandbox.state import SlackState

__all__ = ["add_control_routes"]

JSON = dict[str, Any]
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_GONE = {"no_such_url", "expired_url", "used_url"}


def _error(status: int, error: str, **extra: Any) -> web.Response:
    return web.json_response({"ok": False, "error": error, **extra}, status=status)


_GUARDED = ("/_sandbox/", "/_demo/")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _guard(slack: SlackState) -> Middleware:
    """The middleware that keeps other sites' pages from driving the sandbox (module doc)."""

    @web.middleware
    async def guard(request: web.Request, handler: _Handler) -> web.StreamResponse:
        if not request.path.startswith(_GUARDED):
            return await handler(request)
        served = {URL(slack.base_url).host} if slack.base_url else set()
        host = URL(f"http://{request.host}").host if request.host else None
        if host not in _LOOPBACK | served:
            return _error(403, f"the sandbox answers only on this machine, not as {request.host!r}")
        origin = request.headers.get("Origin")
        if origin is not None and origin.lower() != f"{request.scheme}://{request.host}".lower():
            return _error(403, f"requests from {origin} may not drive the sandbox")
        if (
            request.method == "POST"
            and request.content_type != "application/json"
            and not request.path.startswith("/_sandbox/response/")
        ):
            return _error(
                415, "the sandbox's control API takes JSON (Content-Type: application/json)"
            )
        return await handler(request)

    return guard


@web.middleware
async def _errors(request: web.Request, handler: _Handler) -> web.StreamResponse:
    if not request.path.startswith("/_sandbox/"):
        return await handler(request)
    try:
        return await handler(request)
    except SlackApiFailure as failure:
        return web.json_response(failure.to_response(), status=400)
    except RuntimeError as exc:
        return _error(409, str(exc))
    except aiohttp.ClientError as exc:
        return _error(502, f"the app did not answer: {type(exc).__name__}: {exc}")
    except (KeyError, LookupError, ValueError, TypeError) as exc:
        return _error(400, f"{type(exc).__name__}: {exc}")


def _answer(response: AppResponse) -> JSON:
    answer: JSON = {"status": response.status, "body": response.body, "json": response.json()}
    if response.late:
        answer["late"] = True
    return answer


async def _body(request: web.Request) -> JSON:
    if not request.can_read_body:
        return {}
    body = await request.json()
    if not isinstance(body, dict):
        raise TypeError("the request body must be a JSON object")
    return body


def add_control_routes(app: web.Application, slack: SlackState) -> None:
    """Add the `/_sandbox/` routes for `slack` to its aiohttp application."""
    app.middlewares.append(_guard(slack))
    app.middlewares.append(_errors)
    _inspection_routes(app.router, slack)
    _setup_routes(app.router, slack)
    _user_routes(app.router, slack)


def _inspection_routes(r: web.UrlDispatcher, slack: SlackState) -> None:
    """The reading routes: the calls made (`calls`, a page at a time, or counted), and the
    workspace's state (waiting for a change past `after`)."""

    async def calls(request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        method = request.query.get("method")
        limit = int(request.query.get("limit", "0")) or None  # a long log comes in pages
        total, i = len(slack.calls), since
        picked: list[JSON] = []
        while i < total and (limit is None or len(picked) < limit):
            if method in (None, slack.calls[i].method):
                picked.append(slack.calls[i].to_json())
            i += 1
        return web.json_response({"calls": picked, "total": total, "next": i})

    async def calls_summary(request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0"))
        counts: dict[str, dict[str, int]] = {}
        for c in slack.calls[since:]:
            by_status = counts.setdefault(c.method, {})
            by_status[str(c.status)] = by_status.get(str(c.status), 0) + 1
        return web.json_response({"by_method": counts, "total": len(slack.calls)})

    async def state(request: web.Request) -> web.Response:
        if "after" in request.query:
            after = int(request.query["after"])
            await slack.wait_for_change(after, float(request.query.get("timeout", "25")))
        return web.json_response({"version": slack.version, **slack.workspace.to_state()})

    r.add_get("/_sandbox/calls", calls)
    r.add_get("/_sandbox/calls/summary", calls_summary)
    r.add_get("/_sandbox/state", state)


def _setup_routes(r: web.UrlDispatcher, slack: SlackState) -> None:
    """The routes that set the fake up: faults, lost answers, delays, revoked tokens, rate
    limits, the way to the app, Socket Mode disconnects, reset; trigger_ids and response_urls to
    hand out, and the response_urls themselves."""

    async def fail_next(request: web.Request) -> web.Response:
        body = await _body(request)
        slack.fail_next(
            str(body["method"]),
            status=body.get("status"),
            error=body.get("error"),
            retry_after=body.get("retry_after"),
            count=int(body.get("count", 1)),
        )
        return web.json_response({"ok": True})

    async def lose_next(request: web.Request) -> web.Response:
        body = await _body(request)
        slack.lose_next(str(body["method"]), count=int(body.get("count", 1)))
        return web.json_response({"ok": True})

    async def reset(request: web.Request) -> web.Response:
        slack.reset()
        return web.json_response({"ok": True})

    async def connect(request: web.Request) -> web.Response:
        body = await _body(request)
        if body.get("transport") == "socket":
            slack.use_socket_mode()
        else:
            slack.connect_app(str(body["url"]), str(body["signing_secret"]))
        return web.json_response({"ok": True})

    async def delay(request: web.Request) -> web.Response:
        body = await _body(request)
        slack.delay(str(body["method"]), float(body["seconds"]))
        return web.json_response({"ok": True})

    async def issue_token(request: web.Request) -> web.Response:
        body = await _body(request)
        given = body.get("token")
        try:
            token = slack.issue_token(
                str(given) if given is not None else None, app_level=bool(body.get("app_level"))
            )
        except ValueError as e:
            return web.json_response({"ok": False, "error": str(e)}, status=400)
        return web.json_response({"ok": True, "token": token})

    async def revoke(request: web.Request) -> web.Response:
        body = await _body(request)
        slack.revoke_token(str(body["token"]), str(body.get("error") or "token_revoked"))
        return web.json_response({"ok": True})

    async def rate_limits(request: web.Request) -> web.Response:
        slack.rate_limits = bool((await _body(request))["enabled"])
        return web.json_response({"ok": True})

    async def disconnect(request: web.Request) -> web.Response:
        reason = str((await _body(request)).get("reason") or "refresh_requested")
        return web.json_response({"ok": True, "told": await slack.sockets.disconnect(reason)})

    async def triggers(request: web.Request) -> web.Response:
        user = slack.workspace.user(str((await _body(request))["user"]))
        return web.json_response({"trigger_id": slack.triggers.issue(user.id)})

    async def response_urls(request: web.Request) -> web.Response:
        body = await _body(request)
        user = slack.workspace.user(str(body["user"]))
        channel = slack.workspace.channel(str(body["channel"]))
        url = slack.responses.issue(channel.id, user.id, body.get("message_ts"))
        return web.json_response({"response_url": url})

    async def response(request: web.Request) -> web.Response:
        rid = request.match_info["id"]
        if request.content_type == "application/json":
            body = await _body(request)
        else:  # a form post: `payload=<json>`, or plain fields
            form = {k: v[-1] for k, v in parse_qs(await request.text()).items()}
            body = json.loads(form["payload"]) if "payload" in form else form
        try:
            apply_response(slack, slack.responses.use(rid), body)
            status, answer = 200, {"ok": True}
        except SlackApiFailure as failure:
            status, answer = (404 if failure.error in _GONE else 400), failure.to_response()
        slack.record("response_url", {**body, "response_url_id": rid}, status, answer)
        return web.json_response(answer, status=status)

    r.add_post("/_sandbox/fail_next", fail_next)
    r.add_post("/_sandbox/lose_next", lose_next)
    r.add_post("/_sandbox/reset", reset)
    r.add_post("/_sandbox/app", connect)
    r.add_post("/_sandbox/delay", delay)
    r.add_post("/_sandbox/issue_token", issue_token)
    r.add_post("/_sandbox/revoke", revoke)
    r.add_post("/_sandbox/rate_limits", rate_limits)
    r.add_post("/_sandbox/socket/disconnect", disconnect)
    r.add_post("/_sandbox/triggers", triggers)
    r.add_post("/_sandbox/response_urls", response_urls)
    r.add_post("/_sandbox/response/{id}", response)


def _user_routes(r: web.UrlDispatcher, slack: SlackState) -> None:
    """The routes that play the user (`/_sandbox/act/...`): a click, a submission, a command,
    opening Home, closing a modal, typing a message, and Slack's own `ssl_check`."""

    async def ssl_check(request: web.Request) -> web.Response:
        return web.json_response(_answer(await slack.ssl_check()))

    async def click(request: web.Request) -> web.Response:
        b = await _body(request)
        res = await slack.click(
            b["user"], b["channel"], b["ts"], b["action_id"], value=b.get("value")
        )
        return web.json_response(_answer(res))

    async def submit(request: web.Request) -> web.Response:
        b = await _body(request)
        result = await slack.submit(b["user"], b.get("inputs") or {}, view_id=b.get("view_id"))
        return web.json_response(
            {
                "response": _answer(result.response) if result.response else None,
                "errors": result.errors,
                "view": result.view,
            }
        )

    async def command(request: web.Request) -> web.Response:
        b = await _body(request)
        trigger_id = b.get("trigger_id")
        res = await slack.command(
            b["user"], b["channel"], b.get("text", ""), b.get("command", "/agent"),
            trigger_id=str(trigger_id) if trigger_id else None,
        )  # fmt: skip
        return web.json_response(_answer(res))

    async def home(request: web.Request) -> web.Response:
        return web.json_response(_answer(await slack.open_home((await _body(request))["user"])))

    async def home_click(request: web.Request) -> web.Response:
        b = await _body(request)
        res = await slack.click_home(b["user"], b["action_id"], value=b.get("value"))
        return web.json_response(_answer(res))

    async def close(request: web.Request) -> web.Response:
        b = await _body(request)
        ws = slack.workspace
        stack = ws.views.get(ws.user(str(b["user"])).id) or []
        view_id = b.get("view_id")
        view = next((v for v in stack if v.id == view_id), None) if view_id else None
        view = view or (stack[-1] if stack and not view_id else None)
        if view is None:
            raise SlackApiFailure("not_found")
        if view.spec.get("clear_on_close"):
            stack.clear()
        else:
            stack.remove(view)
        slack.touch()
        return web.json_response({"ok": True})

    async def message(request: web.Request) -> web.Response:
        b = await _body(request)
        ws = slack.workspace
        user, channel = ws.user(str(b["user"])), ws.channel(str(b["channel"]))
        # Slack's client encodes these three, so typed text is never a mention or a link.
        text = str(b.get("text") or "").replace("&", "&amp;").replace("<", "&lt;")
        text = text.replace(">", "&gt;")
        if not text.strip():
            raise SlackApiFailure("no_text")
        msg = ws.post(channel, user.id, text, [], thread_ts=b.get("thread_ts") or None)
        slack.touch()
        return web.json_response({"ok": True, "channel": channel.id, "ts": msg.ts})

    r.add_post("/_sandbox/act/ssl_check", ssl_check)
    r.add_post("/_sandbox/act/click", click)
    r.add_post("/_sandbox/act/submit", submit)
    r.add_post("/_sandbox/act/command", command)
    r.add_post("/_sandbox/act/home", home)
    r.add_post("/_sandbox/act/home_click", home_click)
    r.add_post("/_sandbox/act/close", close)
    r.add_post("/_sandbox/act/message", message)

    async def status(request: web.Request) -> web.Response:
        b = await _body(request)
        answers = await slack.set_status(
            str(b["user"]), str(b.get("emoji") or ""), str(b.get("text") or ""),
            int(b.get("expiration") or 0),
        )  # fmt: skip
        return web.json_response({"answers": [_answer(a) for a in answers]})

    async def dnd(request: web.Request) -> web.Response:
        b = await _body(request)
        until = b.get("until")
        res = await slack.set_dnd(str(b["user"]), int(until) if until else None)
        return web.json_response(_answer(res) if res is not None else {"ok": True})

    r.add_post("/_sandbox/act/status", status)
    r.add_post("/_sandbox/act/dnd", dnd)
