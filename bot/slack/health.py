"""What the Slack side knows of its own health: whether Slack still accepts the bot token, and
what could never be delivered. `/healthz` and `/metrics` read it; the sink writes it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["SlackHealth"]


@dataclass
class SlackHealth:
    """Shared by the sink (which writes) and the HTTP routes (which read)."""

    token_error: str | None = None
    """Slack's error code the last time it refused the bot token (`token_revoked`), or None
    while it accepts it. Cleared by the next call that succeeds."""
    token_error_at: float | None = None
    """When (epoch seconds) the token was last refused."""
    undeliverable: Counter[str] = field(default_factory=Counter)
    """Messages given up on, by Slack error code (`channel_not_found`: 2)."""

    def token_refused(self, code: str) -> None:
        self.token_error, self.token_error_at = code, time.time()

    def token_accepted(self) -> None:
        self.token_error = self.token_error_at = None

    def gave_up(self, code: str) -> None:
        self.undeliverable[code or "unknown"] += 1
