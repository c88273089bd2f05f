"""Settings, read once from the environment, and the wiring of one signoff process."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .approvals.audit import AuditLog
from .approvals.events import EventSink
from .approvals.policy import GroupResolver, Policy, load_policy
from .approvals.service import Signoff
from .db import Database
from .workflows import load_workflows

__all__ = ["Settings", "build_signoff"]

DEFAULT_DATABASE_URL = "sqlite:///signoff.db"
DEFAULT_POLICY = "signoff.toml"


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    """`SIGNOFF_DATABASE_URL`: `sqlite:///file.db` (default: signoff.db here) or `postgresql://...`."""
    policy_path: Path = Path(DEFAULT_POLICY)
    """`SIGNOFF_POLICY`: the policy file (default: signoff.toml here)."""
    audit_key: bytes | None = field(default=None, repr=False)
    """`SIGNOFF_AUDIT_KEY`: when set, the audit chain is HMAC-SHA256 with it; kept out of repr."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        key = env.get("SIGNOFF_AUDIT_KEY")
        return cls(
            database_url=env.get("SIGNOFF_DATABASE_URL") or DEFAULT_DATABASE_URL,
            policy_path=Path(env.get("SIGNOFF_POLICY") or DEFAULT_POLICY),
            audit_key=key.encode() if key else None,
        )


def build_signoff(
    settings: Settings,
    *,
    policy: Policy | None = None,
    sink: EventSink | None = None,
    groups: GroupResolver | None = None,
) -> Signoff:
    """One `Signoff` for these settings: database, policy, workflows, audit log."""
    policy = policy if policy is not None else load_policy(settings.policy_path)
    workflows = load_workflows({name: wf.path for name, wf in policy.workflows.items()})
    db = Database(settings.database_url)
    return Signoff(db, policy, workflows, groups=groups, audit=AuditLog(settings.audit_key), sink=sink)
