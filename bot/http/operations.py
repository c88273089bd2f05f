"""The operations surface: `GET /healthz` (200 when the database answers, 503 with the reason
when it does not, when Slack refuses the bot token, or when the Socket Mode connection has been
gone past its grace) and `GET /metrics` (Prometheus text:
approvals by status, decision latency, resume failures)."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..approvals.errors import DatabaseUnavailable
from ..approvals.service import Signoff
from ..slack.health import SlackHealth
from ..slack.socket_link import SocketLink
from ._responses import json_error
from .metrics import Metrics

__all__ = ["operation_routes"]


def operation_routes(
    signoff: Signoff,
    metrics: Metrics,
    slack_health: SlackHealth | None,
    socket_link: SocketLink | None = None,
) -> web.RouteTableDef:
    """`/healthz` and `/metrics`; `slack_health` (the sink's) degrades `/healthz` once Slack
    refuses the bot token, `socket_link` (Socket Mode) once the connection to Slack has been
    gone longer than its grace."""
    routes = web.RouteTableDef()

    @routes.get("/healthz")
    async def healthz(request: web.Request) -> web.Response:
        try:
            await signoff.db.ping(timeout=3.0)
        except DatabaseUnavailable as e:
            return json_error(503, e.message)
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
        if socket_link is not None and socket_link.problem is not None:
            return web.json_response(
                {"ok": False, "slack": "socket_mode", "error": socket_link.problem}, status=503
            )
        return web.json_response({"ok": True, "database": signoff.db.display_url})

    @routes.get("/metrics")
    async def metrics_route(request: web.Request) -> web.Response:
        try:
            counts = await signoff.approval_counts()
        except DatabaseUnavailable as e:
            return json_error(503, e.message)
        for status in ("pending", "approved", "rejected", "expired", "cancelled"):
            metrics.approvals.labels(status).set(counts.get(status, 0))
        metrics.waiting_reads.set(signoff.external.waiting)
        return web.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    return routes
