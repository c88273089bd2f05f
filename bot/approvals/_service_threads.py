"""How the thread of an externally requested approval is named: `api.<service>.<hex>`.

The service's name is part of the thread id, so every entry the audit log writes about such a
run (its start, its request, each vote, the decision, the resume) says which service asked
(`AuditLog.append` adds it as `data["service"]`), wherever in signoff the entry is written.
Service names have no dot (`[services.NAME]`), so the id splits back unambiguously.
"""

from __future__ import annotations

import hashlib
import uuid

__all__ = ["EXTERNAL_WORKFLOW", "external_thread_id", "service_of"]

EXTERNAL_WORKFLOW = "external_approval"
"""The built-in workflow an approval requested from outside runs as (`bot.approvals.external`)."""

_PREFIX = "api."


def external_thread_id(service: str, idempotency_key: str | None) -> str:
    """The thread of `service`'s request: derived from its idempotency key (the same key is the
    same thread, on every replica: the runs table's primary key), or new when it has none."""
    if idempotency_key is None:
        tail = uuid.uuid4().hex
    else:
        tail = hashlib.sha256(f"{service}\0{idempotency_key}".encode()).hexdigest()[:32]
    return f"{_PREFIX}{service}.{tail}"


def service_of(thread_id: str | None) -> str | None:
    """The service whose request `thread_id` runs, or None for any other thread."""
    if not thread_id or not thread_id.startswith(_PREFIX):
        return None
    parts = thread_id.split(".")
    return parts[1] if len(parts) == 3 and parts[1] else None
