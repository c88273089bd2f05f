"""Slack's Web API rate limits, as the stand-in enforces them when they are switched on.

Each method belongs to a tier (`limits.METHOD_TIERS`: so many calls a minute per method and
workspace); chat.postMessage is paced per channel instead, about one a second with short bursts.
A call over its limit is answered as Slack answers it: HTTP 429, `{"ok": false, "error":
"ratelimited"}` and `Retry-After` with the whole seconds until a call would be accepted again.

Both kinds are a sliding window: at most `limit` calls in any `period` seconds. That is the
strictest reading of Slack's "per minute" (a token bucket would let twice the limit through in
the first minute), so a client that keeps within it keeps within Slack.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.sandbox import limits

__all__ = ["RateLimiter", "Window"]


@dataclass
class Window:
    """At most `limit` accepted calls in any `period` seconds."""

    limit: int
    period: float
    accepted: deque[float] = field(default_factory=deque)
    """When each call still inside the window was accepted, oldest first."""

    def take(self, now: float) -> float:
        """Count a call at `now` if it fits; 0.0 when it did, else the seconds until one would."""
        while self.accepted and self.accepted[0] <= now - self.period:
            self.accepted.popleft()
        if len(self.accepted) < self.limit:
            self.accepted.append(now)
            return 0.0
        return self.accepted[0] + self.period - now


class RateLimiter:
    """Decides, per call, whether Slack would answer it or rate-limit it.

    Args:
        clock: Time source (monotonic seconds); swap it in tests.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._windows: dict[tuple[str, str], Window] = {}

    def check(self, method: str, channel: str | None = None) -> int | None:
        """Count one call of `method` (chat.postMessage: to `channel`).

        Returns:
            None when it is accepted; otherwise the `Retry-After` seconds (at least 1).
        """
        if method == "chat.postMessage":
            key = (method, channel or "")
            limit = limits.POST_MESSAGE_BURST
            period = limits.POST_MESSAGE_BURST * limits.POST_MESSAGE_INTERVAL
        else:
            key, limit, period = (method, ""), limits.METHOD_TIERS.get(method, limits.TIER_3), 60.0
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = Window(limit, period)
        wait = window.take(self.clock())
        return None if wait <= 0 else max(1, math.ceil(wait))

    def clear(self) -> None:
        """Forget every call counted so far."""
        self._windows.clear()
