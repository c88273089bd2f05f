"""The client that delivers the approvals API's signed webhooks (`ExternalApprovals.send`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

__all__ = ["WebhookClient"]


class WebhookClient:
    """Delivers webhooks (`ExternalApprovals.send`) with one aiohttp session: 10 s per try,
    redirects not followed (a receiver answers itself; a redirect is a failure, retried)."""

    def __init__(self) -> None:
        self._session: Any = None

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        async with self._session.post(
            url, data=body, headers=dict(headers), allow_redirects=False
        ) as response:
            await response.read()
            return int(response.status)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
