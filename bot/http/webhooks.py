"""The client that delivers the approvals API's signed webhooks (`ExternalApprovals.send`) and
asks services' checks (`ServiceChecks.post`)."""

from __future__ import annotations

import socket
import urllib.parse
from collections.abc import Mapping

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from ..approvals.external import CallbackRefused
from ..approvals.policy import address_kind

__all__ = ["WebhookClient", "WebhookTimeout"]


class WebhookTimeout(Exception):
    """The receiver did not answer one try of a webhook in time (the try failed; retried)."""


class _PublicOnly(AbstractResolver):
    """Resolves as aiohttp does, and refuses a name that resolves to any address that is not
    public (loopback, private, link-local, ...): checked on the addresses the connection is
    then made to, so a name cannot be checked once and point elsewhere when it is used."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        for result in found:
            kind = address_kind(result["host"])
            if kind is not None:
                raise CallbackRefused(f"{host} resolves to {result['host']}, {kind} address")
        return found

    async def close(self) -> None:
        await self._inner.close()


class WebhookClient:
    """Delivers webhooks (`ExternalApprovals.send`): `timeout` seconds per try
    (`SIGNOFF_WEBHOOK_TIMEOUT`, connecting and the answer included), redirects not followed (a
    receiver answers itself; a redirect is a failure, retried). Unless `allow_private`, the
    host's addresses must be public (`CallbackRefused` otherwise), checked after DNS."""

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._sessions: dict[bool, aiohttp.ClientSession] = {}

    def _session(self, allow_private: bool) -> aiohttp.ClientSession:
        session = self._sessions.get(allow_private)
        if session is None:
            connector = aiohttp.TCPConnector(resolver=None if allow_private else _PublicOnly())
            session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout)
            )
            self._sessions[allow_private] = session
        return session

    async def send(
        self, url: str, body: bytes, headers: Mapping[str, str], *, allow_private: bool = False
    ) -> int:
        host = urllib.parse.urlsplit(url).hostname or ""
        kind = None if allow_private else address_kind(host)
        if kind is not None:  # an address, not a name: no resolver is asked
            raise CallbackRefused(f"{host} is {kind} address")
        try:
            async with self._session(allow_private).post(
                url, data=body, headers=dict(headers), allow_redirects=False
            ) as response:
                await response.read()
                return int(response.status)
        except TimeoutError as e:
            raise WebhookTimeout(
                f"no answer within {self.timeout:g}s (SIGNOFF_WEBHOOK_TIMEOUT)"
            ) from e

    async def ask_facts(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        allow_private: bool = False,
        timeout: float = 10.0,
    ) -> tuple[int, bytes]:
        """POST a service's check (`ServiceChecks.post`) as a webhook is sent (the same address
        rules, no redirects), within `timeout` seconds; its status and at most 64 KiB and one
        byte of its answer (more is refused by the caller)."""
        host = urllib.parse.urlsplit(url).hostname or ""
        kind = None if allow_private else address_kind(host)
        if kind is not None:
            raise CallbackRefused(f"{host} is {kind} address")
        async with self._session(allow_private).post(
            url,
            data=body,
            headers=dict(headers),
            allow_redirects=False,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            return int(response.status), await response.content.read(64 * 1024 + 1)

    async def close(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()
