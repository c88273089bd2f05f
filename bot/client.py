"""Ask a running signoff for an approval from any Python program: a script, a service, a tool
of an agent built on another SDK. Over the approvals HTTP API (`POST /api/approvals`, then
`GET /api/approvals/{id}?wait=N` until it is decided), with the service's bearer token.

```python
from bot.client import request_approval

decision = request_approval(
    "send_refund", {"customer_id": "c-1", "amount": 40},
    url="http://127.0.0.1:3000", token=os.environ["SIGNOFF_SERVICE_BILLING_TOKEN"],
)
if decision.approved:
    send_refund(**decision.args)  # with the approvers' edits
```

The answer is the `Decision` a graph's `request_approval()` gets: `approved` is true only when
the action may run, `args` are the arguments to run it with, and a rejection (or an expiry) is
a `Decision` with `approved=False` and the note, not an exception.

Exceptions (all `SignoffClientError`):

    SignoffClientError
    ├── RequestRefused        signoff said no to the request itself: wrong token (401), an
    │                         action the service may not ask for (403), bad arguments (422,
    │                         `.problems`); nothing was recorded. Asking again will not help.
    ├── StillPending          nobody decided within `wait`; the approval stays open.
    ├── Redirected            signoff's address answered with a redirect (3xx): it is not
    │                         followed, so the bearer token never goes to another address,
    │                         and no answer from elsewhere is taken for a decision.
    └── SignoffUnavailable    signoff could not be reached (or kept failing) through the retries.

Idempotency: each call makes one `Idempotency-Key` (or takes yours) and sends it with every
retry of its request, so a retry after a dropped connection never opens a second approval.
To keep that true across *your* process's restarts, pass a key derived from your own durable
identity of the action (`idempotency_key=f"refund:{order_id}"`): the same key again returns the
same approval, settled or not, and a `StillPending` caller just calls again with it
(`StillPending.idempotency_key` is the one to reuse).

Synchronous calls use the standard library (`urllib`), asynchronous ones aiohttp.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .approvals.models import Decision

__all__ = [
    "DEFAULT_WAIT",
    "REQUESTER",
    "RETRIES",
    "Redirected",
    "RequestRefused",
    "SignoffClientError",
    "SignoffUnavailable",
    "StillPending",
    "arequest_approval",
    "request_approval",
]

REQUESTER = "agent"
"""Who asks, when the caller does not say."""
DEFAULT_WAIT = 300.0
"""Seconds a call waits for the decision by default."""
POLL = 55.0
"""Seconds of one long poll (the API answers within 60)."""
RETRIES = 5
"""Attempts after the first for a request that met a connection error or a 5xx."""
BACKOFF = 0.5
"""Seconds before the first retry, doubled for each next one (at most 8 s)."""
_RETRY_STATUSES = frozenset({500, 502, 503, 504})


class SignoffClientError(Exception):
    """Root of the client's errors."""


class RequestRefused(SignoffClientError):
    """signoff refused the request (401, 403, 400 or 422): nothing was recorded.

    Attributes: `status`, the HTTP status; `problems`, for 422 the fields the action's schema
    refused, each `{"field", "message"}`."""

    def __init__(self, status: int, message: str, problems: list[dict[str, Any]]) -> None:
        super().__init__(f"signoff refused the request ({status}): {message}")
        self.status = status
        self.problems = problems


class StillPending(SignoffClientError):
    """Nobody decided within the wait. The approval stays open: call again with the same
    `idempotency_key` to wait on it again (it is not asked twice)."""

    def __init__(self, approval_id: str, idempotency_key: str, waited: float) -> None:
        super().__init__(
            f"approval {approval_id} is still pending after {waited:.0f} s; call again with "
            f"idempotency_key={idempotency_key!r} to keep waiting on it"
        )
        self.approval_id = approval_id
        self.idempotency_key = idempotency_key


class Redirected(SignoffClientError):
    """signoff's address answered with a redirect. signoff's API never redirects: a proxy or
    another server is in the way, and following it would send the service's bearer token
    there and take its answer for the decision. Nothing is followed; fix `url`.

    Attributes: `status`, the 3xx; `location`, where it pointed (its `Location`, or "")."""

    def __init__(self, url: str, status: int, location: str) -> None:
        super().__init__(
            f"{url} answered {status}, a redirect to {location or '(no Location)'}; the client "
            "follows no redirect, so that the bearer token is sent to signoff's address alone "
            "and no other server's answer is taken for a decision: set url to signoff's own "
            "address (the one `signoff run` serves)"
        )
        self.status = status
        self.location = location


class SignoffUnavailable(SignoffClientError):
    """signoff could not be reached, or answered 5xx, through every retry."""


@dataclass
class _Call:
    """One logical `request_approval`: what is sent, and how its answers are read (no I/O)."""

    base: str
    token: str
    action: str
    args: Mapping[str, Any]
    title: str | None
    requester: str
    idempotency_key: str
    wait: float
    started: float = field(default_factory=time.monotonic)

    def create(self) -> tuple[str, bytes, dict[str, str]]:
        body: dict[str, Any] = {"action": self.action, "args": dict(self.args)}
        if self.title is not None:
            body["title"] = self.title
        body["requester"] = self.requester
        return (
            f"{self.base}/api/approvals",
            json.dumps(body).encode(),
            {**self.headers(), "Content-Type": "application/json"},
        )

    def step(self, approval: Mapping[str, Any]) -> Decision | tuple[str, float]:
        """After an answer: the decision, or the next long poll (its URL and timeout).

        The POST's answer carries no decision, so at least one GET follows it.

        Raises:
            StillPending: The wait is over and nobody decided.
        """
        approval_id = str(approval["approval_id"])
        if "decision" in approval:  # the full shape, from a GET
            decision = self.settled(approval)
            if decision is not None:
                return decision
            left = self.wait - (time.monotonic() - self.started)
            if left <= 0:
                raise StillPending(approval_id, self.idempotency_key, self.wait)
        else:
            left = max(0.0, self.wait - (time.monotonic() - self.started))
        n = min(int(left), int(POLL))
        quoted = urllib.parse.quote(approval_id, safe="")
        return f"{self.base}/api/approvals/{quoted}?wait={n}", n + 30.0

    def headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token}",
            "Idempotency-Key": self.idempotency_key,
            "Accept": "application/json",
        }

    def read(self, status: int, text: str) -> dict[str, Any]:
        """A 2xx body as JSON; a refusal raised as `RequestRefused`."""
        try:
            data = json.loads(text) if text else {}
        except json.JSONDecodeError:
            data = {"error": text[:300]}
        if not isinstance(data, dict):
            data = {"error": str(data)[:300]}
        if status >= 400:
            problems = data.get("problems") or []
            raise RequestRefused(
                status, str(data.get("error") or text[:300]), list(problems) if problems else []
            )
        return data

    def settled(self, approval: Mapping[str, Any]) -> Decision | None:
        """The decision of a wire-shape approval, or None while it is pending."""
        if approval.get("status") == "pending":
            return None
        decision = approval.get("decision")
        if not isinstance(decision, Mapping):
            raise SignoffClientError(
                f"approval {approval.get('approval_id')} is {approval.get('status')} without a "
                "decision; nothing may run (check it with `signoff show`)"
            )
        return Decision.from_json(decision)


def _call(
    url: str,
    token: str,
    action: str,
    args: Mapping[str, Any],
    title: str | None,
    requester: str,
    wait: float,
    idempotency_key: str | None,
) -> _Call:
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"url must be signoff's http(s) address, e.g. http://127.0.0.1:3000; got {url!r}"
        )
    if not token:
        raise ValueError("token is empty: pass the service's bearer token (its token_env's value)")
    return _Call(
        base=url.rstrip("/"),
        token=token,
        action=action,
        args=args,
        title=title,
        requester=requester,
        idempotency_key=idempotency_key or f"client-{uuid.uuid4().hex}",
        wait=max(0.0, wait),
    )


MAX_RETRY_AFTER = 30.0
"""The longest a server's `Retry-After` is waited before the next attempt."""


def _backoff(attempt: int, retry_after: str | None = None) -> float:
    """Seconds before the attempt after `attempt`: doubled each time, or what the last
    answer's `Retry-After` (seconds) asked for when that is longer (at most 30 s)."""
    wait = float(min(8.0, BACKOFF * 2**attempt))
    if retry_after is not None and retry_after.isascii() and retry_after.isdigit():
        wait = max(wait, min(float(retry_after), MAX_RETRY_AFTER))
    return wait


def _unavailable(url: str, error: object) -> SignoffUnavailable:
    return SignoffUnavailable(
        f"signoff at {url} did not answer after {RETRIES + 1} attempts ({error}); is `signoff "
        "run` up? Calling again with the same idempotency_key is safe"
    )


# ---- synchronous --------------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: it reaches `_send` as the 3xx `HTTPError` it is."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)
"""urllib's opener, without following redirects (urllib's own would, with the token)."""


def _send(
    call: _Call, url: str, body: bytes | None, headers: dict[str, str], timeout: float
) -> dict[str, Any]:
    last: object = None
    retry_after: str | None = None
    for attempt in range(RETRIES + 1):
        if attempt:
            time.sleep(_backoff(attempt - 1, retry_after))
        retry_after = None
        request = urllib.request.Request(
            url, data=body, headers=headers, method="POST" if body is not None else "GET"
        )
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                return call.read(response.status, response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            if 300 <= e.code < 400:
                raise Redirected(url, e.code, e.headers.get("Location", "")) from None
            if e.code not in _RETRY_STATUSES:
                return call.read(e.code, text)
            last = f"HTTP {e.code}"
            retry_after = e.headers.get("Retry-After")
        except (urllib.error.URLError, OSError) as e:
            last = e
    raise _unavailable(call.base, last)


def request_approval(
    action: str,
    args: Mapping[str, Any],
    *,
    url: str,
    token: str,
    title: str | None = None,
    requester: str = REQUESTER,
    wait: float = DEFAULT_WAIT,
    idempotency_key: str | None = None,
) -> Decision:
    """Ask signoff at `url` for approval of `action` with `args`, as the service `token`
    belongs to, and wait up to `wait` seconds for the decision.

    Args:
        title: One line for the approvers. Default: the policy's title of the action.
        requester: Who asks, shown on the card: the agent's name, or the Slack user id of
            the person it acts for (who then may not approve it). Default `REQUESTER`.
        idempotency_key: The same key again returns the same approval (see the module's
            docstring). Default: a new one for this call, reused by its retries.

    Returns:
        The decision; `approved` is false for a rejection or an expiry.

    Raises:
        RequestRefused: The request itself was refused; nothing was recorded.
        StillPending: Nobody decided within `wait`.
        Redirected: signoff's address answered with a redirect, which is not followed.
        SignoffUnavailable: signoff could not be reached through the retries.
    """
    call = _call(url, token, action, args, title, requester, wait, idempotency_key)
    target, body, headers = call.create()
    approval = _send(call, target, body, headers, timeout=30.0)
    while not isinstance(step := call.step(approval), Decision):
        approval = _send(call, step[0], None, call.headers(), timeout=step[1])
    return step


# ---- asynchronous -------------------------------------------------------------------------


async def _asend(
    session: Any, call: _Call, url: str, body: bytes | None, headers: dict[str, str], timeout: float
) -> dict[str, Any]:
    import aiohttp

    last: object = None
    retry_after: str | None = None
    for attempt in range(RETRIES + 1):
        if attempt:
            await asyncio.sleep(_backoff(attempt - 1, retry_after))
        retry_after = None
        try:
            async with session.request(
                "POST" if body is not None else "GET",
                url,
                data=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
                allow_redirects=False,
            ) as response:
                text = await response.text()
                if 300 <= response.status < 400:
                    raise Redirected(url, response.status, response.headers.get("Location", ""))
                if response.status not in _RETRY_STATUSES:
                    return call.read(response.status, text)
                last = f"HTTP {response.status}"
                retry_after = response.headers.get("Retry-After")
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            last = e
    raise _unavailable(call.base, last)


async def arequest_approval(
    action: str,
    args: Mapping[str, Any],
    *,
    url: str,
    token: str,
    title: str | None = None,
    requester: str = REQUESTER,
    wait: float = DEFAULT_WAIT,
    idempotency_key: str | None = None,
) -> Decision:
    """As `request_approval`, for asyncio programs (over aiohttp)."""
    import aiohttp

    call = _call(url, token, action, args, title, requester, wait, idempotency_key)
    target, body, headers = call.create()
    async with aiohttp.ClientSession() as session:
        approval = await _asend(session, call, target, body, headers, timeout=30.0)
        while not isinstance(step := call.step(approval), Decision):
            approval = await _asend(session, call, step[0], None, call.headers(), timeout=step[1])
        return step
