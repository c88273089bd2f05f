"""`Pace`: once Slack rate-limited something, the sink's calls to it keep inside Slack's window.

Slack limits `chat.postMessage` to about one message a second per channel (with a short
burst), and each other method to so many calls a minute (its tier, `limits.METHOD_TIERS`): at
most `calls` in any `seconds`. A 429 says so, with `Retry-After`. Retrying every refused job as
soon as that passes has all of them ask at once, and all but one refused again: under a burst,
most calls are 429s. So once a key (`post:C123`, `chat.update`) was limited, the calls to it
take turns in this process, never before `Retry-After` and never more than the key's window
holds, until `memory` seconds pass without a 429 or a call. A turn further away than
`longest_wait` is a `RetryLater` instead (the job goes back to the queue rather than hold a
worker). Keys never limited are not held back at all (Slack often allows more than its tiers).

The window is counted from when each call was *answered*, not sent: Slack counts a call when
it arrives, somewhere between the two, so a call sent a whole window after the answer to the
one `calls` before it can never be over the limit, however the requests were delayed on the
way. Pacing by the moment of sending (one every second) had a call that was slow to arrive
land within the same second as the next one, and be refused: the posts' 429s beyond the first.

Replicas (`shared`, on PostgreSQL: `shared_pace.SharedSlots`): Slack counts per workspace, so
each process's turns are not enough. With a shared budget, a 429 is told to every replica, a
key another replica was refused is paced here too, and each paced call also takes the next
slot of the key's shared schedule, after its turn here: this process's callers wait in line
here, and only the one whose turn it is asks the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..approvals.events import RetryLater

__all__ = ["MARGIN", "SHARED_SLACK", "Pace", "SharedBudget", "Turn"]

MARGIN = 0.02
"""Seconds added to every wait: Slack's clock and ours may tick a little apart."""
SHARED_SLACK = 0.05
"""The share of a window's pace a shared schedule (`shared`) leaves unused: at a channel's one
post a second, 50 ms a slot, so a post may arrive 150 ms late within Slack's 3 s window."""
_IN_FLIGHT_POLL = 0.05
"""Seconds between looks while every call the window holds is still waiting for its answer."""


class SharedBudget(Protocol):
    """Slack's limits as every process calling with the token shares them
    (`shared_pace.SharedSlots`)."""

    async def paced_for(self, key: str) -> float | None:
        """Seconds `key` stays paced for every process (None: not paced)."""
        ...

    async def reserve(self, key: str, spacing: float, memory: float, longest_wait: float) -> float:
        """Take the next free slot of `key`: seconds until it. `RetryLater` past `longest_wait`."""
        ...

    async def limited(self, key: str, retry_after: float, memory: float) -> None:
        """Slack answered 429 for `key` with `retry_after`."""
        ...


@dataclass
class _Key:
    calls: int
    seconds: float
    answered: deque[float]
    """When each of the latest `calls` calls was answered (oldest first)."""
    in_flight: int = 0
    not_before: float = 0.0
    """`Retry-After`: no call before this moment."""
    paced_until: float | None = None
    """None: never limited (or not lately); calls go at once."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def wait(self, now: float) -> float:
        """Seconds until one more call fits; `_IN_FLIGHT_POLL` when only an answer can tell."""
        wait = self.not_before - now
        window_start = now - self.seconds
        live = [t for t in self.answered if t > window_start - MARGIN]
        over = len(live) + self.in_flight - self.calls + 1
        if over > 0:
            if over > len(live):  # every slot is a call not answered yet
                return max(wait, _IN_FLIGHT_POLL)
            wait = max(wait, live[over - 1] + self.seconds + MARGIN - now)
        return max(wait, 0.0)


class Turn:
    """One call's turn (see `Pace.turn`); `refused` when Slack answered it 429."""

    def __init__(self, pace: Pace, key: str) -> None:
        self._pace = pace
        self._key = key
        self.counted = True
        """False once refused: Slack counts only the calls it accepts."""
        self.retry_after: float | None = None
        """Slack's `Retry-After` when it refused the call."""

    def refused(self, retry_after: float) -> None:
        """Slack answered this call 429 with `Retry-After` seconds."""
        self.counted = False
        self.retry_after = retry_after
        self._pace.limited(self._key, retry_after)


class Pace:
    """Takes turns for the keys Slack rate-limited.

    Args:
        window: a key's limit, `(calls, seconds)`: at most so many calls in any so many
            seconds (`post:C123`: the channel's posts; else a method's tier).
        memory: seconds without a 429 or a call after which a key is no longer paced.
        longest_wait: a turn further away raises `RetryLater`.
        shared: the budget other processes calling with the token share (replicas on
            PostgreSQL); None (the default) paces this process's calls alone.
    """

    def __init__(
        self,
        window: Callable[[str], tuple[int, float]],
        *,
        memory: float = 60.0,
        longest_wait: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedBudget | None = None,
    ) -> None:
        self.window = window
        self.memory = memory
        self.longest_wait = longest_wait
        self.clock = clock
        self.shared = shared
        self._keys: dict[str, _Key] = {}

    def _key(self, key: str) -> _Key:
        k = self._keys.get(key)
        if k is None:
            if len(self._keys) > 1000:
                self._forget_idle()
            calls, seconds = self.window(key)
            k = self._keys[key] = _Key(calls, seconds, deque(maxlen=max(1, calls)))
        return k

    def _forget_idle(self) -> None:
        """Drop keys not paced whose calls have all left their window."""
        now = self.clock()
        for name, k in list(self._keys.items()):
            last = k.answered[-1] if k.answered else -float("inf")
            if k.paced_until is None and not k.in_flight and last < now - k.seconds - MARGIN:
                del self._keys[name]

    def limited(self, key: str, retry_after: float) -> None:
        """Slack answered 429 for `key`: no call before `retry_after` seconds from now, then
        only as many as its window holds."""
        k = self._key(key)
        now = self.clock()
        k.not_before = max(k.not_before, now + retry_after)
        k.paced_until = max(k.paced_until or 0.0, now + retry_after + self.memory)

    def paced(self, key: str) -> bool:
        """Whether calls to `key` take turns now."""
        k = self._keys.get(key)
        return k is not None and k.paced_until is not None and self.clock() <= k.paced_until

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[Turn]:
        """`async with pace.turn(key) as turn:` make one call to `key` inside (at once when it
        is not paced); `turn.refused(retry_after)` when Slack answered 429.

        Raises:
            RetryLater: the turn is more than `longest_wait` seconds away.
        """
        k = self._key(key)
        if k.paced_until is not None and self.clock() > k.paced_until:
            k.paced_until = None
        if k.paced_until is None and self.shared is not None:
            left = await self.shared.paced_for(key)  # another process was refused
            if left is not None:
                k.paced_until = self.clock() + left
        if k.paced_until is not None:
            async with k.lock:  # the waiters in order, each taking the next free slot
                while (wait := k.wait(self.clock())) > 0:
                    if wait > self.longest_wait:
                        raise RetryLater(wait, f"Slack rate limit on {key}: waiting for its turn")
                    await asyncio.sleep(wait)
                if self.shared is not None:
                    # One call's share of the window, on the schedule every process keeps. The
                    # schedule is of sending, and Slack counts arrivals: the slack absorbs a
                    # call that was slower on its way than the one `calls` after it.
                    spacing = k.seconds / max(k.calls, 1) * (1 + SHARED_SLACK) + MARGIN
                    wait = await self.shared.reserve(key, spacing, self.memory, self.longest_wait)
                    if wait > 0:
                        await asyncio.sleep(wait)
                k.in_flight += 1
        else:
            k.in_flight += 1
        turn = Turn(self, key)
        try:
            yield turn
        finally:
            k.in_flight -= 1
            now = self.clock()
            if turn.counted:
                k.answered.append(now)
            elif self.shared is not None and turn.retry_after is not None:
                await self.shared.limited(key, turn.retry_after, self.memory)
            if k.paced_until is not None:
                # still in use: still paced. Pacing that ended a fixed time after the 429
                # while the burst went on had every waiting worker ask at once, and a 429
                # again, each minute
                k.paced_until = max(k.paced_until, now + self.memory)
