"""Canonical JSON, the fingerprint of a request, and the redaction of its secret fields."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import _canonical
from .._canonical import fingerprint_default

if TYPE_CHECKING:
    from .model import ActionPolicy


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces, the same for equal values in every process.

    Besides JSON's own types: tuples, sets and frozensets are arrays (sets sorted), Decimal and
    UUID their strings, datetimes ISO 8601, timedelta its seconds, bytes base64.

    Raises:
        TypeError: a value of another type. ValueError: NaN or infinity.
    """
    return _canonical.canonical_json(value, default=fingerprint_default)


def fingerprint(action: str, args: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the action and its arguments.

    Two requests with the same fingerprint ask for exactly the same thing.
    """
    data = canonical_json({"action": action, "args": dict(args)})
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def redact(
    rule: ActionPolicy | None, args: Mapping[str, Any], *, key: bytes | None = None
) -> dict[str, Any]:
    """A copy of `args` fit for cards, logs and the audit log: each secret field becomes
    `{"redacted": "sha256:<hex>"}`, the hash of its canonical JSON.

    A short secret (a card number) can be found again from its plain hash by trying every
    value; pass `key` (e.g. the audit HMAC key) to get `"hmac-sha256:<hex>"` instead.
    """
    out = dict(args)
    if rule is None:
        return out
    for name in rule.secret:
        if name in out:
            out[name] = redacted(out[name], key=key)
    return out


def redacted(value: Any, *, key: bytes | None = None) -> dict[str, str]:
    """What one secret value is replaced by: `{"redacted": "sha256:<hex>"}` (or `hmac-sha256`
    with `key`), as `redact` does to each secret field."""
    data = canonical_json(value).encode("utf-8")
    if key is None:
        return {"redacted": "sha256:" + hashlib.sha256(data).hexdigest()}
    return {"redacted": "hmac-sha256:" + hmac.new(key, data, hashlib.sha256).hexdigest()}
