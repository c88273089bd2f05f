"""`_TTLStore`: what the stores that keep TTLs share (internal): `ttl_config`, the reading
of `put`'s `ttl` and of `refresh_ttl`, and the sweepers (a thread, or an asyncio task) over
the store's `sweep_ttl()`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from .base import BaseStore, NotProvided, TTLConfig, _check_minutes

__all__ = ["_TTLStore"]

logger = logging.getLogger("graphs.store")  # the name the sweepers have always logged under


class _TTLStore(BaseStore):
    """A store that keeps TTLs: `ttl_config`, its reading of `put`'s `ttl` and of
    `refresh_ttl`, and the sweeper thread over its `sweep_ttl()`."""

    supports_ttl = True

    def __init__(self, ttl: TTLConfig | None, clock: Callable[[], float] | None) -> None:
        if ttl is not None:
            _check_ttl_config(ttl)
        self.ttl_config = ttl
        self._clock: Callable[[], float] = clock or time.time
        self._sweeper: threading.Thread | None = None
        self._sweep_stop = threading.Event()
        self._asweeper: asyncio.Task[None] | None = None
        self._asweep_stop: asyncio.Event | None = None

    def _ttl_minutes(self, ttl: float | None | NotProvided, where: str) -> float | None:
        """The minutes `put(..., ttl=ttl)` gives an item (None: no expiry)."""
        if isinstance(ttl, NotProvided):
            return (self.ttl_config or {}).get("default_ttl")
        if ttl is not None:
            _check_minutes(ttl, where)
        return ttl

    def _refreshes(self, refresh_ttl: bool | None) -> bool:
        if refresh_ttl is not None:
            return refresh_ttl
        return (self.ttl_config or {}).get("refresh_on_read", True)

    def sweep_ttl(self) -> int:
        """Delete the expired items now; the number deleted."""
        raise NotImplementedError

    async def asweep_ttl(self) -> int:
        """Async form of `sweep_ttl`."""
        return self.sweep_ttl()

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """Run `sweep_ttl()` every `sweep_interval_minutes` (default: the `TTLConfig`'s, or 5)
        on a daemon thread, until `stop_ttl_sweeper()` or the returned future is cancelled.

        Without a `TTLConfig` nothing is started (the future is already done), as in
        LangGraph; a sweeper already running is left running.
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config:
            future.set_result(None)
            return future
        future.add_done_callback(lambda f: self._sweep_stop.set() if f.cancelled() else None)
        if self._sweeper is not None and self._sweeper.is_alive():
            return future
        minutes = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        _check_minutes(minutes, "start_ttl_sweeper")
        self._sweep_stop.clear()

        def sweep() -> None:
            while not self._sweep_stop.wait(float(minutes) * 60):
                try:
                    if swept := self.sweep_ttl():
                        logger.info("store TTL sweep deleted %d expired items", swept)
                except Exception:  # keeps sweeping: the database may be back next time
                    logger.exception("store TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(target=sweep, daemon=True, name="store-ttl-sweeper")
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread, waiting up to `timeout` seconds (None: until it stops);
        True if it stopped or was not running."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._sweep_stop.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> asyncio.Task[None]:
        """Run `asweep_ttl()` every `sweep_interval_minutes` (default: the `TTLConfig`'s, or 5)
        in an asyncio task of the running loop, until `astop_ttl_sweeper()` or the task is
        cancelled: the async form of `start_ttl_sweeper`, LangGraph's `start_ttl_sweeper` of
        its async stores (`AsyncSqliteStore`, `AsyncPostgresStore`).

        Without a `TTLConfig` nothing is started (the task returned does nothing), as in
        LangGraph; while a sweeper task is running, that task is returned.
        """
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._asweeper is not None and not self._asweeper.done():
            return self._asweeper
        minutes = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        _check_minutes(minutes, "astart_ttl_sweeper")
        stop = self._asweep_stop = asyncio.Event()

        async def sweep() -> None:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(float(minutes) * 60):
                        await stop.wait()
                        return
                try:
                    if swept := await self.asweep_ttl():
                        logger.info("store TTL sweep deleted %d expired items", swept)
                except Exception:  # keeps sweeping: the database may be back next time
                    logger.exception("store TTL sweep failed")

        self._asweeper = asyncio.create_task(sweep(), name="store-ttl-sweeper")
        return self._asweeper

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task, waiting up to `timeout` seconds (None: until it stops); True
        if it stopped or was not running (LangGraph's async `stop_ttl_sweeper`)."""
        task = self._asweeper
        if task is None or task.done():
            self._asweeper = None
            return True
        if self._asweep_stop is not None:
            self._asweep_stop.set()
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(task)
        except TimeoutError:
            return False
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
        self._asweeper = None
        return True


def _check_ttl_config(config: Mapping[str, Any]) -> None:
    known = {"refresh_on_read", "omit_expired", "default_ttl", "sweep_interval_minutes"}
    if not isinstance(config, Mapping) or set(config) - known:
        raise ValueError(f"ttl: a TTLConfig takes {sorted(known)}, got {config!r}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        if config.get(name) is not None:
            _check_minutes(config[name], f"TTLConfig {name}")
