"""The bot's HTTP side: one route table per surface, and the app that mounts them.

- `app`: `build_web_app` (mounts the surfaces) and `serve` (start-up and shutdown of
  `signoff run`).
- `slack`: `POST /slack/events`, every Slack request (events, interactivity, slash commands),
  checked and handed to Bolt, which verifies it with the signing secret.
- `operations`: `GET /healthz`, `GET /metrics`.
- `api`: the approvals API for services (`/api/runs`, `/api/approvals`, `/api/openapi.json`),
  described in `openapi`.
- `mcp`: the MCP server over streamable HTTP at `/mcp`, for services with a token.
- `runtime`: the governance core wired to Slack (`build_runtime`), and start-up's Slack steps.
- `metrics`, `webhooks`: the Prometheus metrics; the client that delivers webhooks.
"""

from __future__ import annotations

from .app import build_web_app, serve
from .metrics import Metrics
from .runtime import build_runtime

__all__ = ["Metrics", "build_runtime", "build_web_app", "serve"]
