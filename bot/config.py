"""Settings, read once from the environment, and the wiring of one signoff process."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .approvals.audit import AuditLog
from .approvals.db import Database
from .approvals.events import EventSink
from .approvals.policy import GroupResolver, Policy, load_policy
from .approvals.service import Signoff
from .workflows import load_workflows

__all__ = ["Settings", "build_signoff"]

DEFAULT_DATABASE_URL = "sqlite:///signoff.db"
DEFAULT_POLICY = "signoff.toml"
DEFAULT_SWEEP_INTERVAL = 30.0
DEFAULT_JOB_LEASE = 60.0
DEFAULT_SLACK_TIMEOUT = 30.0
DEFAULT_WORKERS = 2
DEFAULT_SOCKET_GRACE = 120.0
DEFAULT_WEBHOOK_WORKERS = 2
DEFAULT_WEBHOOK_TIMEOUT = 10.0
DEFAULT_REFUSAL_WINDOW = 60.0


class SettingsError(ValueError):
    """A setting is missing or wrong; the message says which and how to get it."""


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    """`SIGNOFF_DATABASE_URL`: `sqlite:///file.db` (default: signoff.db here) or `postgresql://...`."""
    policy_path: Path = Path(DEFAULT_POLICY)
    """`SIGNOFF_POLICY`: the policy file (default: signoff.toml here)."""
    audit_key: bytes | None = field(default=None, repr=False)
    """`SIGNOFF_AUDIT_KEY`: when set, the audit chain is HMAC-SHA256 with it; kept out of repr."""
    slack_bot_token: str | None = field(default=None, repr=False)
    """`SLACK_BOT_TOKEN` (xoxb-...): the bot's Web API token."""
    slack_signing_secret: str | None = field(default=None, repr=False)
    """`SLACK_SIGNING_SECRET`: verifies that requests come from Slack (HTTP mode)."""
    slack_app_token: str | None = field(default=None, repr=False)
    """`SLACK_APP_TOKEN` (xapp-...): when set, the bot connects in Socket Mode."""
    slack_api_url: str | None = None
    """`SIGNOFF_SLACK_API_URL`: another Web API base URL (the local sandbox, tests)."""
    api_token: str | None = field(default=None, repr=False)
    """`SIGNOFF_API_TOKEN`: bearer token of `POST /api/runs`; unset disables the endpoint."""
    default_channel: str | None = None
    """`SIGNOFF_DEFAULT_CHANNEL`: where cards go when a run names no channel."""
    notify_channel: bool = True
    """`SIGNOFF_NOTIFY_CHANNEL` (default true): also tell the channel how a run ended, not only the
    card's thread: the thread reply is broadcast to the channel (`reply_broadcast`), or, where the
    card is in another channel, the run's channel gets a message linking to it. A failure's reply
    has Retry and Cancel buttons, which Slack refuses in a broadcast: the channel gets a message
    of its own, without them, linking to that reply."""
    sweep_interval: float = DEFAULT_SWEEP_INTERVAL
    """`SIGNOFF_SWEEP_INTERVAL` (seconds, default 30): how often the bot reminds, escalates and
    expires what is due. A due approval waits up to this long past its deadline."""
    job_lease: float = DEFAULT_JOB_LEASE
    """`SIGNOFF_JOB_LEASE` (seconds, default 60): how long a job (a resume, a Slack message) stays
    claimed by the process working on it; a job whose process died is taken over after this."""
    slack_timeout: float = DEFAULT_SLACK_TIMEOUT
    """`SIGNOFF_SLACK_TIMEOUT` (seconds, default 30, slack_sdk's): how long the bot waits for
    Slack to answer a Web API call. A message whose post got no answer in that time may still
    be posted by Slack: the bot looks for it in the channel no sooner than as long again, and
    posts it only if it is not there."""
    workers: int = DEFAULT_WORKERS
    """`SIGNOFF_WORKERS` (default 2): how many jobs (resumes, Slack messages) the bot performs at
    once; jobs of one thread still go one at a time, in order. They share the bot's event loop
    with the clicks: on 2 cores, 4 made clicks slower and the backlog no shorter
    (`bench/load.py`); raise it when jobs mostly wait on Slack or on slow nodes."""
    webhook_workers: int = DEFAULT_WEBHOOK_WORKERS
    """`SIGNOFF_WEBHOOK_WORKERS` (default 2): how many webhooks (a service's `callback_url`) the
    bot delivers at once, on workers of their own: a receiver that is slow, or never answers,
    holds up only webhooks, never the cards and resumes of `SIGNOFF_WORKERS`."""
    webhook_timeout: float = DEFAULT_WEBHOOK_TIMEOUT
    """`SIGNOFF_WEBHOOK_TIMEOUT` (seconds, default 10): how long one try of a webhook waits for
    the receiver's answer (connecting included); past it the try has failed and is retried."""
    refusal_window: float = DEFAULT_REFUSAL_WINDOW
    """`SIGNOFF_REFUSAL_WINDOW` (seconds, default 60): a refusal repeated from the same source
    (a request without a token from one address, a service's malformed request) within this
    long after the first is counted, not logged again: one audit entry says how many came,
    the first and the last time, once the window is over."""

    socket_grace: float = DEFAULT_SOCKET_GRACE
    """`SIGNOFF_SOCKET_GRACE` (seconds, default 120): in Socket Mode, how long the connection to
    Slack may be down (slack_sdk reconnecting) before `/healthz` answers 503 saying why."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        key = env.get("SIGNOFF_AUDIT_KEY")
        return cls(
            database_url=_database_url(env),
            policy_path=Path(env.get("SIGNOFF_POLICY") or DEFAULT_POLICY),
            audit_key=key.encode() if key else None,
            slack_bot_token=env.get("SLACK_BOT_TOKEN") or None,
            slack_signing_secret=env.get("SLACK_SIGNING_SECRET") or None,
            slack_app_token=env.get("SLACK_APP_TOKEN") or None,
            slack_api_url=env.get("SIGNOFF_SLACK_API_URL") or None,
            api_token=env.get("SIGNOFF_API_TOKEN") or None,
            default_channel=env.get("SIGNOFF_DEFAULT_CHANNEL") or None,
            notify_channel=(env.get("SIGNOFF_NOTIFY_CHANNEL") or "true").lower()
            not in ("0", "false", "no"),
            sweep_interval=_seconds(env, "SIGNOFF_SWEEP_INTERVAL", DEFAULT_SWEEP_INTERVAL),
            job_lease=_seconds(env, "SIGNOFF_JOB_LEASE", DEFAULT_JOB_LEASE),
            slack_timeout=_seconds(env, "SIGNOFF_SLACK_TIMEOUT", DEFAULT_SLACK_TIMEOUT),
            workers=_count(env, "SIGNOFF_WORKERS", DEFAULT_WORKERS),
            socket_grace=_seconds(env, "SIGNOFF_SOCKET_GRACE", DEFAULT_SOCKET_GRACE),
            webhook_workers=_count(env, "SIGNOFF_WEBHOOK_WORKERS", DEFAULT_WEBHOOK_WORKERS),
            webhook_timeout=_seconds(env, "SIGNOFF_WEBHOOK_TIMEOUT", DEFAULT_WEBHOOK_TIMEOUT),
            refusal_window=_seconds(env, "SIGNOFF_REFUSAL_WINDOW", DEFAULT_REFUSAL_WINDOW),
        )

    def check_slack(self) -> None:
        """Refuse to start the bot without what it needs, saying how to get each setting.

        Raises:
            SettingsError: the first missing or malformed setting.
        """
        where = "the app's page at https://api.slack.com/apps"
        if not self.slack_bot_token:
            raise SettingsError(
                f"SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-...) from {where}, "
                "under OAuth & Permissions, after installing the app to your workspace"
            )
        if not self.slack_bot_token.startswith("xoxb-"):
            raise SettingsError("SLACK_BOT_TOKEN must be a bot token starting with xoxb-")
        if self.slack_app_token is not None and not self.slack_app_token.startswith("xapp-"):
            raise SettingsError(
                f"SLACK_APP_TOKEN must be an app-level token starting with xapp- ({where}, under "
                "Basic Information > App-Level Tokens, with the connections:write scope)"
            )
        if self.slack_app_token is None and not self.slack_signing_secret:
            raise SettingsError(
                f"SLACK_SIGNING_SECRET is not set: copy the Signing Secret from {where}, under Basic "
                "Information (or set SLACK_APP_TOKEN to use Socket Mode)"
            )


def _database_url(env: Mapping[str, str]) -> str:
    """`SIGNOFF_DATABASE_URL`, or the default; a file name given for a URL is refused, saying
    what a URL looks like.

    Raises:
        SettingsError: the value has no scheme (`signoff.db`, `/var/lib/signoff.db`).
    """
    raw = (env.get("SIGNOFF_DATABASE_URL") or "").strip()
    if not raw:
        return DEFAULT_DATABASE_URL
    if "://" not in raw:
        raise SettingsError(
            f"SIGNOFF_DATABASE_URL={raw!r} is not a database URL; write sqlite:///{raw.lstrip('/')} "
            "(a file in this directory: three slashes), sqlite:////var/lib/signoff.db (an "
            "absolute path: four) or postgresql://user@host/dbname"
        )
    return raw


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from `env[name]`; `default` when unset or empty.

    Raises:
        SettingsError: the value is not a positive number.
    """
    raw = env.get(name) or ""
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(
            f"{name} must be a positive number of seconds (e.g. 30 or 0.5), got {raw!r}"
        )
    return value


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    """A whole number from 1 to 64 from `env[name]`; `default` when unset or empty.

    Raises:
        SettingsError: the value is not such a number.
    """
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise SettingsError(f"{name} must be a whole number from 1 to 64 (e.g. 4), got {raw!r}")
    return int(raw)


class _SourcedAuditLog(AuditLog):
    """An audit log that writes, into the data of every event it appends, where it came from
    (`"via": "cli"`): a vote cast with `signoff approve --as U_ALICE` is told apart from Alice's
    click in Slack."""

    def __init__(self, key: bytes | None, via: str, *, repeat_window: float) -> None:
        super().__init__(key, repeat_window=repeat_window)
        self.via = via
        """What every event's `data["via"]` says."""

    def stamped(self, data: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**data, "via": self.via}


def build_signoff(
    settings: Settings,
    *,
    policy: Policy | None = None,
    sink: EventSink | None = None,
    groups: GroupResolver | None = None,
    via: str | None = None,
) -> Signoff:
    """One `Signoff` for these settings: database, policy, workflows, audit log.

    Args:
        via: When given, every audit event this `Signoff` writes records it as `data["via"]`
            (the CLI passes `"cli"`).
    """
    policy = policy if policy is not None else load_policy(settings.policy_path)
    workflows = load_workflows({name: wf.path for name, wf in policy.workflows.items()})
    db = Database(settings.database_url)
    return Signoff(
        db,
        policy,
        workflows,
        groups=groups,
        audit=AuditLog(settings.audit_key, repeat_window=settings.refusal_window)
        if via is None
        else _SourcedAuditLog(settings.audit_key, via, repeat_window=settings.refusal_window),
        sink=sink,
        lease_seconds=settings.job_lease,
    )
