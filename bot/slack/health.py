"""What the Slack side knows of its own health: whether Slack still accepts the bot token, and
what could never be delivered. `/healthz` and `/metrics` read it; the sink writes it."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["SlackHealth"]


@dataclass
class SlackHealth:
    """Shared by the sink (which writes), the Web API client (`TokenGuard`: no call goes out
    once the token is dead) and the HTTP routes (which read)."""

    token_error: str | None = None
    """Slack's error code when it refused the bot token (`token_revoked`), or Slack's event
    (`tokens_revoked`); None while it accepts it. Never cleared: a new token means a restart,
    whose start-up check verifies it."""
    token_error_at: float | None = None
    """When (epoch seconds) the token was refused."""
    undeliverable: Counter[str] = field(default_factory=Counter)
    """Messages given up on, by Slack error code (`channel_not_found`: 2)."""

    def token_refused(self, code: str) -> bool:
        """Mark the token dead; True the first time (the caller says so in the log, once)."""
        if self.token_error is not None:
            return False
        self.token_error, self.token_error_at = code, time.time()
        return True

    def gave_up(self, code: str) -> None:
        self.undeliverable[code or "unknown"] += 1
