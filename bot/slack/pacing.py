"""`Pace`: after Slack rate-limited something, the sink's next calls to it wait their turn.

Slack limits `chat.postMessage` to about one message a second per channel, and each other
method to so many calls a minute (its tier). A 429 says so, with `Retry-After`. Retrying every
refused job as soon as that passes has all of them ask at once, and all but one refused again:
under a burst, most calls are 429s. So once a key (`post:C123`, `chat.update`) was limited, the
calls to it take turns in this process, one every `interval` seconds, until `memory` seconds
pass without a 429 or a call (under a sustained burst the limit stays where it was); a turn further away than `longest_wait` is a `RetryLater` instead (the job
goes back to the queue rather than hold a worker). Keys never limited are not paced at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..approvals.events import RetryLater

__all__ = ["Pace"]


class Pace:
    def __init__(
        self,
        *,
        memory: float = 60.0,
        longest_wait: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.memory = memory
        self.longest_wait = longest_wait
        self.clock = clock
        self._next: dict[str, float] = {}
        """Key to the earliest moment its next call may go."""
        self._interval: dict[str, float] = {}
        self._until: dict[str, float] = {}
        """Key to the moment its pacing ends (`memory` after its last 429 or turn)."""
        self._locks: dict[str, asyncio.Lock] = {}

    def limited(self, key: str, retry_after: float, interval: float) -> None:
        """Slack answered 429 for `key`: no call before `retry_after` seconds, then one every
        `interval` seconds for a while."""
        now = self.clock()
        self._next[key] = max(self._next.get(key, now), now + retry_after)
        self._interval[key] = interval
        self._until[key] = now + retry_after + self.memory

    async def turn(self, key: str) -> None:
        """Wait for the next turn of `key` (at once when it is not paced).

        Raises:
            RetryLater: the turn is more than `longest_wait` seconds away.
        """
        until = self._until.get(key)
        if until is None:
            return
        if self.clock() > until:
            for d in (self._until, self._next, self._interval, self._locks):
                d.pop(key, None)
            return
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            wait = self._next.get(key, 0.0) - self.clock()
            if wait > self.longest_wait:
                raise RetryLater(wait, f"Slack rate limit on {key}: waiting for its turn")
            if wait > 0:
                await asyncio.sleep(wait)
            self._next[key] = self.clock() + self._interval.get(key, 1.0)
            # still in use: still paced. Pacing that ended a fixed time after the 429 while the
            # burst went on had every waiting worker ask at once, and a 429 again, each minute
            self._until[key] = max(self._until.get(key, 0.0), self.clock() + self.memory)
