"""What a service sends and sees over the approvals API: the checks on a request's own fields,
the approval as it is shown to the service (`ExternalApproval`, the wire shape), and the signature
of the webhook it is sent once the approval is settled."""

from __future__ import annotations

import hashlib
import hmac
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .models import ApprovalStatus, Decision

__all__ = [
    "SIGNATURE_HEADER",
    "ExternalApproval",
    "request_problems",
    "sign_webhook",
    "verify_webhook",
]

SIGNATURE_HEADER = "Signoff-Signature"
"""The webhook's signature header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`."""
_TEXT_MAX = 500
_KEY_MAX = 200


@dataclass(frozen=True)
class ExternalApproval:
    """An approval a service asked for, as the service sees it (`to_json` is the wire shape of
    the HTTP API, the MCP tools and the webhook's `approval`)."""

    approval_id: str
    """Opaque and stable: the id the API returns and reads by."""
    status: ApprovalStatus
    """`pending` until settled; then approved, rejected, expired or cancelled."""
    action: str
    args: dict[str, Any]
    """As requested, fields the policy marks secret hidden (only their hash)."""
    title: str
    """The action's title, filled with the arguments (never the service's own words)."""
    service: str
    requester: str
    created_at: str
    """ISO-8601 UTC."""
    card_url: str | None = None
    """A link to the Slack card, once it is posted and the process can ask Slack for one."""
    decision: Decision | None = None
    """Once settled: approved, status, by, at, note, edits, and args with the edits applied."""
    note: str | None = None
    """What the service sent as `title`: shown on the card labelled as its note."""
    checked: Mapping[str, Any] | None = None
    """What the service's `check_url` answered when this was asked (`at`, and `facts` or
    `error`; `changed` and `after` when it is asked again because facts changed after an
    approval). None: no check."""
    rechecking: bool = False
    """Approved by people, its facts being read again before it may go: `status` says
    `pending` meanwhile, never `approved`, until they are found unchanged."""
    created: bool = field(default=True, compare=False)
    """False when `request` found the approval its idempotency key made before (not on the wire)."""

    @property
    def approved(self) -> bool:
        """True only when the action may run (never while pending; expired means not approved
        unless the policy's `on_expiry = "approve"` said otherwise)."""
        return self.decision is not None and self.decision.approved

    def to_json(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id,
            "status": self.status,
            "approved": self.approved,
            "action": self.action,
            "args": self.args,
            "title": self.title,
            "note": self.note,
            "service": self.service,
            "requester": self.requester,
            "created_at": self.created_at,
            "card_url": self.card_url,
            "decision": self.decision.to_json() if self.decision is not None else None,
            "checked": dict(self.checked) if self.checked is not None else None,
            "rechecking": self.rechecking,
        }


def sign_webhook(secret: str, timestamp: int, body: bytes) -> str:
    """The `Signoff-Signature` header's value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify_webhook(
    secret: str, header: str, body: bytes, *, tolerance: float = 300.0, now: float | None = None
) -> bool:
    """Whether `header` signs `body` with `secret`, sent within `tolerance` seconds of `now`."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    stamp = parts.get("t", "")
    if not stamp.isdigit():
        return False
    if abs((time.time() if now is None else now) - int(stamp)) > tolerance:
        return False
    expected = sign_webhook(secret, int(stamp), body).rpartition("v1=")[2]
    return hmac.compare_digest(expected, parts.get("v1", ""))


def request_problems(
    requester: Any,
    title: Any,
    dedupe_key: Any,
    callback_url: Any,
    idempotency_key: Any,
) -> dict[str, str]:
    """What is wrong with a request's own fields (not its arguments), by field."""
    problems: dict[str, str] = {}
    if not isinstance(requester, str) or not requester.strip():
        problems["requester"] = (
            "is required: who asks (a Slack user id, or the agent's name); they may not "
            "approve their own request"
        )
    elif len(requester) > _KEY_MAX or any(c.isspace() for c in requester):
        problems["requester"] = f"must be an id without spaces, at most {_KEY_MAX} characters"
    for name, value, limit in (
        ("title", title, _TEXT_MAX),
        ("dedupe_key", dedupe_key, _KEY_MAX),
        ("idempotency_key", idempotency_key, _KEY_MAX),
    ):
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            problems[name] = "must be a non-empty string when given"
        elif len(value) > limit:
            problems[name] = f"must be at most {limit} characters, got {len(value)}"
    if callback_url is not None:
        problem = _url_problem(callback_url)
        if problem:
            problems["callback_url"] = problem
    return problems


def _url_problem(url: Any) -> str | None:
    if not isinstance(url, str) or len(url) > 2000:
        return "must be an http(s) URL of at most 2000 characters"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as e:
        return f"is not a URL: {e}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host, got {url[:80]!r}"
    if parts.username or parts.password:
        return "must not carry a user name or password (webhooks are signed instead)"
    return None
