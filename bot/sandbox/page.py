"""The sandbox's web page: a small Slack in the browser, served next to the fake Slack.

`DemoPage.add_routes(app)` adds to the fake's aiohttp application:

| route | what |
| --- | --- |
| `GET /` | the page (`static/index.html`); its script and style under `/static/` |
| `GET /_demo/config` | the demo people, the workflows a person can start (inputs, examples, starters), the cards' channel |
| `POST /_demo/runs` | `{"user", "workflow", "input", "channel"?}`: start a run through the bot's `POST /api/runs`, as `user` |

The page reads the workspace with the long-poll `GET /_sandbox/state?after=V` and acts through
`/_sandbox/act/*` (see `bot.sandbox.control`). The bot's API token stays here: the page never
sees it. Nothing the page loads comes from anywhere but this server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from bot.sandbox.errors import SlackApiFailure
from bot.sandbox.people import APPROVALS_CHANNEL, DEMO_POLICY, PEOPLE

if TYPE_CHECKING:
    from bot.sandbox.slack_api import FakeSlack

__all__ = ["EXAMPLES", "STATIC", "DemoPage", "workflow_form"]

STATIC = Path(__file__).with_name("static")
"""The page's files: plain HTML, CSS and JavaScript, no build step."""

EXAMPLES: dict[str, dict[str, Any]] = {
    "refund": {"customer_id": "cust_9", "order_id": "o-1001", "amount": 42.5, "reason": "damaged item"},
    "delete_row": {"table": "users", "row_id": "7", "reason": "GDPR erasure request"},
    "vendor_payment": {"vendor": "acme-ltd", "invoice_id": "INV-2001", "amount": 1200},
    "support_agent": {"ticket": "My kettle from order o-1001 arrived broken.", "customer_id": "cust_9"},
}  # fmt: skip
"""What the "start a workflow" form is filled in with at first, per bundled workflow."""

_NO_STORE = {"Cache-Control": "no-store"}


def workflow_form(
    name: str,
    description: str,
    inputs: Sequence[str],
    starters: Sequence[str] = (),
    types: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """How the page offers one workflow: its inputs, each filled in with its example (`EXAMPLES`),
    and who may start it. An input is sent as a number when `types` (its schema's field types,
    for a workflow of one's own) says `number` or `integer`, or its example is one; else as text.
    """
    example = EXAMPLES.get(name, {})
    declared = types or {}

    def numeric(key: str) -> bool:
        if key in declared:
            return declared[key] in ("number", "integer")
        return isinstance(example.get(key), (int, float))

    fields = [
        {"name": key, "example": example.get(key, ""), "type": "number" if numeric(key) else "text"}
        for key in inputs
    ]
    return {"name": name, "description": description, "inputs": fields, "starters": list(starters)}


@dataclass
class DemoPage:
    """The page's routes for one fake Slack and one bot.

    Args:
        slack: The fake Slack whose workspace the page shows.
        bot_url: The bot's root URL (`http://127.0.0.1:PORT`); set once the bot is up.
        api_token: The bot's `SIGNOFF_API_TOKEN`, used for `POST /api/runs`.
        channel: Where started runs post their cards, unless the page names a channel.
        policy_path: The policy the bot runs with (its name is shown).
        workflows: The workflows a person can start from the page (`workflow_form`); the
            sandbox knows no workflows of its own, so the demo tells it.
    """

    slack: FakeSlack
    bot_url: str | None = None
    api_token: str | None = field(default=None, repr=False)
    channel: str = APPROVALS_CHANNEL[0]
    policy_path: Path = DEMO_POLICY
    workflows: Sequence[dict[str, Any]] = ()
    _session: aiohttp.ClientSession | None = field(default=None, repr=False)

    def add_routes(self, app: web.Application) -> None:
        """Serve the page, its files and the `/_demo/` routes from `app`."""
        app.router.add_get("/", self._index)
        app.router.add_get("/_demo/config", self._config)
        app.router.add_post("/_demo/runs", self._start_run)
        app.router.add_static("/static/", STATIC, append_version=False)
        app.on_response_prepare.append(self._no_cache)
        app.on_cleanup.append(self._close)

    async def _no_cache(self, request: web.Request, response: web.StreamResponse) -> None:
        if request.path == "/" or request.path.startswith("/static/"):
            response.headers.update(_NO_STORE)

    async def _close(self, app: web.Application) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _index(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html", headers=_NO_STORE)

    async def _config(self, request: web.Request) -> web.Response:
        people = [
            {"id": p.id, "name": p.name, "real_name": p.real_name, "role": p.role} for p in PEOPLE
        ]
        return web.json_response(
            {
                "people": people,
                "workflows": list(self.workflows),
                "channel": self.channel,
                "policy": self.policy_path.name,
                "bot": self.bot_url is not None,
            }
        )

    async def _start_run(self, request: web.Request) -> web.Response:
        """Start a run as the page's current person, through the bot's runs API."""
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("workflow"), str):
            return web.json_response(
                {"ok": False, "error": 'expected {"user", "workflow", "input"}'}, status=400
            )
        try:
            user = self.slack.workspace.user(str(body.get("user") or ""))
            channel = self.slack.workspace.channel(str(body.get("channel") or self.channel))
        except SlackApiFailure as failure:
            return web.json_response(failure.to_response(), status=400)
        if self.bot_url is None or self.api_token is None:
            return web.json_response({"ok": False, "error": "the bot is not running"}, status=503)
        run = {
            "workflow": body["workflow"],
            "input": body.get("input") or {},
            "requester": user.id,
            "channel": channel.id,
        }
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        headers = {"Authorization": f"Bearer {self.api_token}"}
        try:
            async with self._session.post(
                f"{self.bot_url}/api/runs", json=run, headers=headers
            ) as res:
                answer = await res.json(content_type=None)
                return web.json_response(answer, status=res.status)
        except (aiohttp.ClientError, ValueError) as exc:
            return web.json_response(
                {"ok": False, "error": f"the bot did not answer: {type(exc).__name__}: {exc}"},
                status=502,
            )
