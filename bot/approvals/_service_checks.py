"""A service's check (`check_url` in `[services.NAME]`): the facts its request rests on, asked
of the service over HTTP when the request is asked and again once it is approved.

signoff POSTs, signed as its webhooks are (`Signoff-Signature`, the service's webhook secret):

    {"event": "approval.check", "approval_id": "api.billing.…", "service": "billing",
     "action": "send_refund", "args": {...}}

and the service answers 2xx with a JSON object of named facts: `{"balance": "120.00"}`. Any
other answer (another status, not JSON, not facts, no answer within `CHECK_TIMEOUT`) is a failed
check: a refusal, never a pass. The HTTP itself is the process's (`post`, set by `signoff
run` on aiohttp, as webhooks are): governance does no HTTP, and a process without it fails the
check rather than skipping it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

from ._external_wire import SIGNATURE_HEADER, sign_webhook
from .checks import CHECK_TIMEOUT, checked

if TYPE_CHECKING:
    from .policy import Policy

__all__ = ["FactsPoster", "ServiceChecks", "ServiceFacts", "bridge"]

FactsPoster = Callable[..., Awaitable[tuple[int, bytes]]]
"""`await post(url, body, headers, allow_private=False, timeout=...)` POSTs and returns the
HTTP status and the answer's body; raises `CallbackRefused` for an address the service may not
be reached at (checked after DNS, as webhooks are), or anything else for a failed try."""

ServiceFacts = Callable[[str, Mapping[str, Any]], Coroutine[Any, Any, dict[str, Any]]]
"""`await read(service, request)`: the record of what a service's check answered now."""

MAX_ANSWER = 64 * 1024
"""The largest answer a check may give, in bytes."""


class ServiceChecks:
    """Reads services' checks (`ExternalApprovals.checks`)."""

    def __init__(self, policy: Policy, secret: Callable[[str], str | None]) -> None:
        self.policy = policy
        self.secret = secret
        self.post: FactsPoster | None = None
        """POSTs a check; set by the process that can (`signoff run`)."""

    async def read(self, service: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """The record (`bot.approvals.checks`) of what `service`'s `check_url` answers about
        `request` now; never raises."""
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                found = await self._ask(service, request)
        except TimeoutError:
            return _error(f"the check_url did not answer within {CHECK_TIMEOUT:g}s")
        except Exception as e:  # noqa: BLE001 - a failed check is a refusal, recorded
            return _error(f"the check_url could not be read: {type(e).__name__}: {e}")
        return found if "error" in found else checked(found["facts"])

    async def _ask(self, service: str, request: Mapping[str, Any]) -> dict[str, Any]:
        svc = self.policy.services.get(service)
        if svc is None or svc.check_url is None:
            return _error(f"service {service} has no check_url in the policy any more")
        problem = svc.check_url_problem()
        if problem is not None:
            return _error(f"the check_url is refused: {problem}")
        secret = self.secret(service)
        if self.post is None or secret is None:
            why = "this process cannot make HTTP requests" if secret else "it has no secret"
            return _error(f"the check_url was not asked: {why}")
        body = json.dumps(
            {"event": "approval.check", "service": service, **request},
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=False,
        ).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign_webhook(secret, int(time.time()), body),
        }
        status, answer = await self.post(
            svc.check_url, body, headers, allow_private=svc.callback_private, timeout=CHECK_TIMEOUT
        )
        if not 200 <= status < 300:
            return _error(f"the check_url answered HTTP {status}")
        if len(answer) > MAX_ANSWER:
            return _error(f"the check_url answered more than {MAX_ANSWER} bytes")
        try:
            facts = json.loads(answer)
        except ValueError:
            return _error("the check_url answered something that is not JSON")
        return {"facts": facts}


def _error(text: str) -> dict[str, Any]:
    return {"at": time.time(), "error": text}


def bridge(
    read: ServiceFacts | None,
) -> Callable[[str, Mapping[str, Any]], dict[str, Any]] | None:
    """`read` made callable from a node's worker thread (sync nodes run in threads under the
    event loop that is running now), or None outside a loop or without `read`."""
    if read is None:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None

    def sync(service: str, request: Mapping[str, Any]) -> dict[str, Any]:
        future = asyncio.run_coroutine_threadsafe(read(service, request), loop)
        try:
            found: dict[str, Any] = future.result(timeout=CHECK_TIMEOUT + 5)
            return found
        except Exception as e:  # noqa: BLE001 - never a pass: the record says it failed
            future.cancel()
            return _error(f"the check_url could not be read: {type(e).__name__}: {e}")

    return sync
