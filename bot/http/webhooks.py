"""The client that delivers the approvals API's signed webhooks (`ExternalApprovals.send`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

__all__ = ["WebhookClient", "WebhookTimeout"]


class WebhookTimeout(Exception):
    """The receiver did not answer one try of a webhook in time (the try failed; retried)."""


class WebhookClient:
    """Delivers webhooks (`ExternalApprovals.send`) with one aiohttp session: `timeout` seconds
    per try (`SIGNOFF_WEBHOOK_TIMEOUT`, connecting and the answer included), redirects not
    followed (a receiver answers itself; a redirect is a failure, retried)."""

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._session: Any = None

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> int:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout))
        try:
            async with self._session.post(
                url, data=body, headers=dict(headers), allow_redirects=False
            ) as response:
                await response.read()
                return int(response.status)
        except TimeoutError as e:
            raise WebhookTimeout(
                f"no answer within {self.timeout:g}s (SIGNOFF_WEBHOOK_TIMEOUT)"
            ) from e

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
