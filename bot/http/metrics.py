"""The process's Prometheus metrics (served at `GET /metrics`, `bot.http.operations`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Metrics"]


class Metrics:
    """The process's Prometheus metrics, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.approvals = Gauge(
            "signoff_approvals", "Approvals by status", ["status"], registry=self.registry
        )
        self.decision_latency = Histogram(
            "signoff_decision_latency_seconds",
            "Time from an approval's request to its decision",
            buckets=(60, 300, 900, 3600, 4 * 3600, 86400, 3 * 86400, 7 * 86400),
            registry=self.registry,
        )
        self.resume_failures = Counter(
            "signoff_resume_failures_total", "Resumed runs that failed", registry=self.registry
        )
        self.undeliverable = Counter(
            "signoff_slack_undeliverable_total",
            "Slack messages given up on (an error retrying cannot clear), by Slack error",
            ["error"],
            registry=self.registry,
        )
        self.waiting_reads = Gauge(
            "signoff_api_waiting_reads",
            "Reads of the approvals API waiting for a decision (?wait=N)",
            registry=self.registry,
        )
        self.requests = Counter(
            "signoff_slack_requests_total",
            "Slack requests by HTTP status",
            ["status"],
            registry=self.registry,
        )
        self.socket_connected = Gauge(
            "signoff_slack_socket_connected",
            "Socket Mode: 1 while the connection to Slack holds (or is within its grace), 0 once "
            "it has been down longer than SIGNOFF_SOCKET_GRACE",
            registry=self.registry,
        )
