"""Approvals asked for from outside signoff: a service in any language (the HTTP API), an agent
that speaks MCP, a Python program that is not a graph.

An external approval is a run of the built-in workflow `external_approval`, whose one node asks
`request_approval(action, args, title=..., dedupe_key=...)` and returns the decision. So policy,
cards, quorum, edits, reminders, escalation, expiry, the audit chain, `/agent status`, Home and
the CLI work on it unchanged, and nothing new has to be made exactly-once. Its id (what the API
returns) is the run's thread id, `api.<service>.<hex>`: the service's name is on every audit
entry of the run (see `bot.approvals._service_threads`).

What this module adds is the door: who may ask (`[services.NAME]` in the policy, each with a
bearer token from the environment and the actions it may ask for; deny by default), the checks
made before anything is recorded (the action's argument schema, the request's own fields), an
idempotency key per service (the same key is the same run, on every replica), reading with a
bounded long-poll, and the signed webhook a service is sent once its approval is settled.

A service's token may request and read approvals. Nothing here decides one.

Beside it: `_external_workflow` (the built-in workflow) and `_external_wire` (what a service
sends and sees: the request's field checks, `ExternalApproval`, the webhook's signature).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from . import store
from . import tables as t
from ._audit_repeats import body_digest
from ._canonical import canonical_json
from ._external_wire import (
    SIGNATURE_HEADER,
    ExternalApproval,
    request_problems,
    sign_webhook,
    verify_webhook,
)
from ._external_workflow import external_workflow
from ._service_checks import ServiceChecks
from ._service_threads import EXTERNAL_WORKFLOW, external_thread_id, service_of
from ._titles import template_problem
from .errors import (
    AlreadyStartedError,
    ApprovalError,
    DatabaseUnavailable,
    IdempotencyConflict,
    InvalidInputError,
    UnknownApprovalError,
    Unreachable,
)
from .jobs import Job, JobQueue, backoff, finish_in
from .limits import value_problems
from .models import ApprovalStatus, Decision, iso
from .policy import (
    ActionPolicy,
    Policy,
    ServicePolicy,
    check_service,
    private_hint,
    resolve_members,
    unreachable,
)

if TYPE_CHECKING:
    from .audit import AuditLog
    from .db import Database
    from .models import Approval
    from .runs import Runs

__all__ = [
    "EXTERNAL_WORKFLOW",
    "MAX_WAIT",
    "SIGNATURE_HEADER",
    "CallbackRefused",
    "ExternalApproval",
    "ExternalApprovals",
    "WebhookSender",
    "external_workflow",
    "sign_webhook",
    "verify_webhook",
]

log = logging.getLogger("signoff.external")
# Shown where the process configures logging (`signoff run`, the demo); a one-shot CLI command
# does not repeat it on stderr.
log.addHandler(logging.NullHandler())

MAX_WAIT = 60.0
"""The longest a read waits for a decision (`get(..., wait=)`), in seconds."""
POLL_INTERVAL = 0.5
"""How often a waiting read looks at the database: the decision may be made by another process."""
WEBHOOK_ATTEMPTS = 30
"""Tries of a webhook before it is given up on (backed off 2, 4, 8 s ... to an hour: about 19 h)."""
WEBHOOK_BACKOFF_MAX = 3600.0

WebhookSender = Callable[..., Awaitable[int]]
"""`await send(url, body, headers, allow_private=False)` POSTs a webhook and returns the HTTP
status (the process wiring supplies one on aiohttp; governance does no HTTP itself). Raising
counts as a failed try; raising `CallbackRefused` (the host resolved to an address that
`allow_private` forbids: `policy.address_kind`) gives the webhook up at once."""


class CallbackRefused(Exception):
    """A webhook's address is refused (its host resolved to a private, loopback or link-local
    address its service may not post to): given up at once, never retried."""


_LIST_HINT = "GET /api/approvals lists your pending ones"


# ---- the door --------------------------------------------------------------------------


class ExternalApprovals:
    """Requests and reads of approvals by services (`signoff.external`).

    Given only the parts of `Signoff` it uses, by name.

    Args:
        policy: the policy in force: the services, their actions, the actions' rules.
        db: the governance database the runs and approvals are read from.
        audit: where refusals and webhook deliveries are recorded.
        jobs: the job queue whose `webhook` jobs `deliver` performs.
        runs: what starts the run of the built-in workflow (`Runs.start`).
        clock: the time now, in seconds (as the other parts').
        environ: where the services' tokens are read from (default `os.environ`), once, here.
    """

    def __init__(
        self,
        policy: Policy,
        db: Database,
        audit: AuditLog,
        jobs: JobQueue,
        runs: Runs,
        clock: Callable[[], float],
        *,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.policy = policy
        self.db = db
        self.audit = audit
        self.jobs = jobs
        self.runs = runs
        self.clock = clock
        self.send: WebhookSender | None = None
        """Delivers webhooks; set by the process that performs `webhook` jobs (`signoff run`)."""
        self.card_link: Callable[[Approval], Awaitable[str | None]] | None = None
        """Finds a card's link (Slack's chat.getPermalink), when the process can."""
        self.waiting = 0
        """How many reads are waiting for a decision right now (`/metrics`)."""
        self.check_reach = False
        """Whether a request is first checked to reach someone (`Unreachable`): set by the
        process that posts the cards (`signoff run`), which sees Slack's groups and knows its
        default channel; not by `signoff mcp`, which sees neither."""
        self.default_channel: str | None = None
        """Where cards go when the service's section names no channel (`check_reach`)."""
        self._links: dict[str, str] = {}
        self._closing = asyncio.Event()
        self._tokens: dict[str, str] = {}
        self._secrets: dict[str, str] = {}
        self.checks = ServiceChecks(policy, lambda name: self._secrets.get(name))
        """Reads services' `check_url`s; its `post` is set by the process that can."""
        self.load_tokens(os.environ if environ is None else environ)

    # ---- tokens --------------------------------------------------------------------------

    def load_tokens(self, environ: Mapping[str, str]) -> None:
        """Read every service's token (and webhook secret) from `environ`. A token that is not
        set is warned about: that service cannot authenticate."""
        self._tokens, self._secrets = {}, {}
        for name, svc in self.policy.services.items():
            token = environ.get(svc.token_env) or ""
            if not token:
                log.warning(
                    "service %s cannot authenticate: %s is not set (its bearer token; "
                    "[services.%s] in %s)",
                    name,
                    svc.token_env,
                    name,
                    self.policy.source or "the policy",
                )
                continue
            if len(token) < 16:
                log.warning(
                    "service %s: the token in %s is short (%d characters); use 32 random "
                    "characters or more (python -c 'import secrets; print(secrets.token_urlsafe(32))')",
                    name,
                    svc.token_env,
                    len(token),
                )
            self._tokens[name] = token
            secret = environ.get(svc.webhook_secret_env) if svc.webhook_secret_env else None
            if svc.webhook_secret_env and not secret:
                log.warning(
                    "service %s: %s is not set; its webhooks wait until it is",
                    name,
                    svc.webhook_secret_env,
                )
            else:
                self._secrets[name] = secret or token

    def authenticate(self, token: str) -> str | None:
        """The service whose token `token` is, or None. Compared in constant time with every
        service's token (`hmac.compare_digest`)."""
        given = token.encode()
        found = None
        for name, expected in self._tokens.items():
            if hmac.compare_digest(given, expected.encode()) and given:
                found = name
        return found

    def authenticate_header(self, authorization: str) -> str | None:
        """The service an `Authorization: Bearer <token>` header names, or None."""
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self.authenticate(token.strip())

    # ---- requesting ----------------------------------------------------------------------

    async def request(
        self,
        *,
        service: str,
        action: str,
        args: Mapping[str, Any],
        requester: str,
        title: str | None = None,
        dedupe_key: str | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
        body: bytes | None = None,
    ) -> ExternalApproval:
        """Ask for an approval of `action` with `args` on `service`'s behalf; return at once
        (the card is on its way). Checked before anything is recorded: the service may ask for
        the action (deny by default), the arguments fit the action's schema, the request's own
        fields are sound. A refusal records only its `api_refused` audit entry.

        The same `idempotency_key` again (from this service) returns the same approval and
        starts nothing (`created` is False); with a different request it is refused.
        `body`: the request as it came (HTTP), of which a refusal keeps the size and digest.

        Raises:
            ServiceNotAllowed: `service` is not in the policy, or may not ask for `action`.
            UnknownAction: the policy does not name `action`.
            InvalidInputError: `.problems` names each field that is wrong (`args.amount`, ...).
            IdempotencyConflict: the key came before with a different request.
        """
        sent = body if body is not None else {
            "action": action, "args": args, "requester": requester, "title": title,
            "dedupe_key": dedupe_key, "callback_url": callback_url,
        }  # fmt: skip
        refusal = check_service(self.policy, service, action)
        if refusal is not None:
            raise await self._refused(refusal, service, action, sent)
        svc, rule = self.policy.services[service], self.policy.actions[action]
        problems = request_problems(requester, title, dedupe_key, callback_url, idempotency_key)
        more = _problems(svc, rule, args, title, callback_url)  # where its fields are well formed
        problems.update({k: v for k, v in more.items() if k not in problems})
        if problems:
            raise await self._refused(
                InvalidInputError(
                    EXTERNAL_WORKFLOW,
                    problems,
                    f"the request for {action} is refused: "
                    + "; ".join(f"{k} {v}" for k, v in problems.items())
                    + "; nothing was recorded",
                ),
                service,
                action,
                sent,
            )
        asker = await self._requester(svc, requester)
        unreached = await self._reach_problem(svc, rule, asker)
        if unreached is not None:
            raise await self._refused(Unreachable(unreached), service, action, sent)
        request = {
            "action": action,
            "args": dict(args),
            "requester": requester,
            "title": title or "",
            "dedupe_key": dedupe_key or "",
            "callback_url": callback_url or "",
        }
        request_hash = hashlib.sha256(canonical_json(request).encode()).hexdigest()
        thread_id = external_thread_id(service, idempotency_key)
        inputs = {
            "service": service,
            "action": action,
            "args": dict(args),
            "title": title or "",
            "dedupe_key": dedupe_key or "",
            "callback_url": callback_url or "",
            "request_hash": request_hash,
        }
        if asker != requester:
            inputs["named_requester"] = requester
        try:
            await self.runs.start(
                EXTERNAL_WORKFLOW,
                inputs,
                requester=asker,
                channel=svc.channel,
                thread_id=thread_id,
                request_key=thread_id if idempotency_key is not None else None,
                internal=True,
            )
        except AlreadyStartedError:
            async with self.db.read() as conn:
                run = await store.get_run(conn, thread_id)
            stored = run.inputs.get("request_hash") if run else None
            if stored != request_hash:
                raise await self._refused(
                    IdempotencyConflict(
                        "this Idempotency-Key was used before for a different request "
                        f"({thread_id}); nothing new was recorded: send a new key for a new "
                        "request",
                        thread_id,
                    ),
                    service,
                    action,
                    sent,
                ) from None
            found = await self._read(thread_id)
            assert found is not None  # its run exists
            return replace(found, created=False)
        found = await self._read(thread_id)
        assert found is not None  # just started
        return found

    async def refuse_unauthenticated(
        self, reason: str, *, route: str = "", source: str | None = None
    ) -> None:
        """Record a request that came without a valid token (`api_refused`, no actor), from
        `source` (the client's address): the same refusal from it again within the audit's
        window is counted, not logged again (`AuditLog.refusal`)."""
        data = {"refusal": "unauthenticated", "reason": reason, "route": route}
        if source is not None:
            data["from"] = source
        await self._audit_refusal(None, f"address {source}", f"unauthenticated: {reason}", data)

    async def _requester(self, svc: ServicePolicy, named: str) -> str:
        """Who a request of `svc` is asked as: the person it names when its policy section's
        `may_act_for` lists them, else the service itself (the card says "via NAME"), so that a
        service cannot put anyone's name on its request, nor take a person's self-approval rule
        from them."""
        if named == svc.name:
            return named
        allowed = await resolve_members(svc.may_act_for, self.runs.groups)
        return named if named in allowed else svc.name

    async def _reach_problem(
        self, svc: ServicePolicy, rule: ActionPolicy, requester: str
    ) -> str | None:
        """Why the request could reach no one (with `check_reach`), or None: no channel for
        its card, or fewer people who may approve it than it needs, its groups resolved now.

        Raises:
            GroupsUnavailable: Slack could not say who is in a group.
        """
        if not self.check_reach:
            return None
        if not (svc.channel or self.default_channel):
            return (
                "no channel to post the card in, so no one would be asked: set channel (a "
                f"channel id like C0123ABCD) in [services.{svc.name}] in the policy, or "
                "SIGNOFF_DEFAULT_CHANNEL where signoff run runs; nothing was recorded"
            )
        return await unreachable(rule, requester, self.runs.groups)

    async def refuse_malformed(
        self, service: str, reason: str, *, body: bytes | None = None, code: str = "malformed"
    ) -> None:
        """Record `service`'s request that could not be read (`api_refused`): the `reason`,
        cut to size, and of its `body` only the size and digest. `code` says what kind of
        malformed it was (the same kind again within the window is counted)."""
        data: dict[str, Any] = {"service": service, "refusal": "malformed", "reason": reason}
        if body is not None:
            data["body"] = body_digest(body)
        await self._audit_refusal(service, f"service {service}", f"malformed: {code}", data)

    async def _audit_refusal(
        self, actor: str | None, source: str, refusal: str, data: Mapping[str, Any]
    ) -> None:
        """The `api_refused` entry (or its count, `AuditLog.refusal`), in a transaction of its
        own. A database that cannot take it (busy, down) does not change the answer: the
        refusal is still told (a 401 stays a 401, not a 500), and the log says it went
        unrecorded."""
        try:
            async with self.db.transaction() as conn:
                await self.audit.refusal(
                    conn, "api_refused", actor=actor, source=source, refusal=refusal,
                    data=dict(data), now=self.clock(),
                )  # fmt: skip
        except DatabaseUnavailable as e:
            log.warning("could not audit an API refusal (%s): %s", data.get("refusal"), e)

    async def _refused(
        self, error: ApprovalError, service: str, action: Any, request: Any = None
    ) -> ApprovalError:
        """Record the refusal `error` of `service`'s `request` (nothing else: of the request,
        only its size and digest), and return it."""
        data: dict[str, Any] = {
            "service": service,
            "action": action if isinstance(action, str) else repr(action)[:100],
            "refusal": type(error).__name__,
            "reason": error.message,
        }
        if isinstance(error, InvalidInputError):
            data["problems"] = error.problems
        if isinstance(request, bytes):
            data["body"] = body_digest(request)
        elif request is not None:
            data["body"] = body_digest(json.dumps(request, sort_keys=True, default=repr))
        await self._audit_refusal(service, f"service {service}", data["refusal"], data)
        return error

    # ---- reading -------------------------------------------------------------------------

    async def get(
        self, approval_id: str, *, service: str | None = None, wait: float = 0.0
    ) -> ExternalApproval:
        """The approval `approval_id`; with `wait` (seconds, at most `MAX_WAIT`), wait until it
        is settled or the time runs out, then return it as it is (maybe still pending). A
        process shutting down answers waiting reads at once, with what they would read.

        Raises:
            UnknownApprovalError: no external approval has this id, or (with `service`) it is
                another service's.
        """
        deadline = time.monotonic() + min(max(float(wait), 0.0), MAX_WAIT)
        found = await self._mine(approval_id, service)
        if found.status != "pending" or deadline <= time.monotonic():
            return found
        self.waiting += 1
        try:
            while True:
                left = deadline - time.monotonic()
                if found.status != "pending" or left <= 0 or self._closing.is_set():
                    return found
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(POLL_INTERVAL, left)):
                        await self._closing.wait()
                found = await self._mine(approval_id, service)
        finally:
            self.waiting -= 1

    async def _mine(self, approval_id: str, service: str | None) -> ExternalApproval:
        found = await self._read(approval_id)
        if found is None or (service is not None and found.service != service):
            error = UnknownApprovalError(approval_id)
            error.args = (f"no approval of yours has id {approval_id!r}; {_LIST_HINT}",)
            raise error
        return found

    async def pending(self, *, service: str) -> list[ExternalApproval]:
        """`service`'s approvals that are still pending, oldest first (at most 200)."""
        r = t.runs.c
        async with self.db.read() as conn:
            rows = await conn.execute(
                select(r.thread_id)
                .where(
                    r.status.in_(("running", "paused")),
                    r.workflow == EXTERNAL_WORKFLOW,
                    r.thread_id.startswith(f"api.{service}.", autoescape=True),
                )
                .order_by(r.created_at)
                .limit(200)
            )
            threads = [row[0] for row in rows]
        out = []
        for thread_id in threads:
            found = await self._read(thread_id)
            if found is not None and found.service == service and found.status == "pending":
                out.append(found)
        return out

    def close(self) -> None:
        """Answer waiting reads now (the process is stopping): they return what they read."""
        self._closing.set()

    async def _read(self, thread_id: str) -> ExternalApproval | None:
        if not isinstance(thread_id, str) or service_of(thread_id) is None:
            return None
        async with self.db.read() as conn:
            run = await store.get_run(conn, thread_id)
            if run is None or run.workflow != EXTERNAL_WORKFLOW:
                return None
            latest = await _latest_approval(conn, thread_id)
            approval = await store.get_approval(conn, latest) if latest else None
        inputs = run.inputs
        action = inputs.get("action", "")
        rule = self.policy.actions.get(action)
        if approval is None:
            status: ApprovalStatus = (
                "pending" if run.status in ("running", "paused") else "cancelled"
            )
            return ExternalApproval(
                approval_id=thread_id,
                status=status,
                action=action,
                args=dict(inputs.get("args") or {}),
                title=rule.title if rule else action,
                note=inputs.get("title") or None,
                service=inputs.get("service", ""),
                requester=run.requester,
                created_at=iso(run.created_at),
            )
        decision = None
        status = approval.status
        # Approved, and its check not yet read again (the run has not gone on past it): not
        # "go" yet. The run completes only once the facts were found unchanged.
        rechecking = bool(approval.checked) and status == "approved" and run.status != "completed"
        if approval.decision and not rechecking:
            record = approval.decision
            edits = dict(record.get("edits") or {})
            decision = Decision.from_json({**record, "args": {**approval.payload, **edits}})
        return ExternalApproval(
            approval_id=thread_id,
            status="pending" if rechecking else status,
            checked=approval.checked,
            rechecking=rechecking,
            action=approval.action,
            args=dict(approval.payload),
            title=approval.title,
            note=approval.note,
            service=inputs.get("service", ""),
            requester=run.requester,
            created_at=iso(run.created_at),
            card_url=await self._card_url(approval),
            decision=decision,
        )

    async def _card_url(self, approval: Approval) -> str | None:
        if approval.id in self._links:
            return self._links[approval.id]
        if self.card_link is None or not approval.message_ts:
            return None
        try:
            link = await self.card_link(approval)
        except Exception as e:  # noqa: BLE001 - a link is a courtesy; the approval reads without it
            log.info("no link for the card of %s: %s", approval.id, e)
            return None
        if link:
            self._links[approval.id] = link
        return link

    # ---- webhooks ------------------------------------------------------------------------

    async def _not_yet(self, job: Job, found: ExternalApproval) -> bool:
        """Whether the webhook of a settled approval is not sent (now): its facts are being
        read again (due again in a second), or it was not used, its facts having changed or
        its check failed (given up: the approval asked after it sends its own once settled)."""
        if found.rechecking:
            await self.jobs.finish(job.id, error="its facts are being read again", retry_in=1.0)
            return True
        assert job.thread_id is not None
        async with self.db.read() as conn:
            latest = await _latest_approval(conn, job.thread_id)
        if job.approval_id is None or latest in (None, job.approval_id):
            return False
        await self.jobs.finish(
            job.id,
            error=f"not sent: approval {job.approval_id} was not used (its facts were read "
            f"again); {latest}, asked after it, sends its own once settled",
        )
        return True

    async def deliver(self, job: Job) -> None:
        """Perform a `webhook` job: POST the settled approval to its `callback_url`, signed with
        the service's secret. Done on a 2xx answer (audited `webhook_delivered`); otherwise due
        again, backed off, up to `WEBHOOK_ATTEMPTS` tries (then `webhook_failed`). An address
        the service's policy refuses (checked again here, and after DNS by the sender) is given
        up at once (`webhook_failed`, its error `refused: ...`). The delivery id is the same on
        every try: a receiver de-duplicates by it."""
        assert job.thread_id is not None  # a webhook job names its thread
        jobs = self.jobs
        url, delivery_id = job.payload["url"], job.payload["delivery_id"]
        service = service_of(job.thread_id) or ""
        secret = self._secrets.get(service)
        if self.send is None or secret is None:
            why = "no webhook sender in this process" if self.send is None else "no secret"
            log.warning("webhook %s of %s waits: %s", delivery_id, service, why)
            await jobs.finish(job.id, error=why, retry_in=30.0)
            return
        found = await self._read(job.thread_id)
        if found is None:
            await jobs.finish(job.id, error="its run is gone (purged)")
            return
        if await self._not_yet(job, found):
            return
        body = json.dumps(
            {"delivery_id": delivery_id, "event": "approval.settled", "approval": found.to_json()},
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=False,
        ).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign_webhook(secret, int(time.time()), body),
            "Signoff-Delivery": delivery_id,
        }
        svc = self.policy.services.get(service)
        refused = (
            svc.callback_problem(url)
            if svc is not None
            else f"service {service} is no longer in the policy"
        )
        error = f"refused: {refused}" if refused else None
        if error is None:
            try:
                allow_private = svc is not None and svc.callback_private
                status = await self.send(url, body, headers, allow_private=allow_private)
                error = None if 200 <= status < 300 else f"the receiver answered HTTP {status}"
            except CallbackRefused as e:
                error = f"refused: {e}; {private_hint(service)}"
            except Exception as e:  # noqa: BLE001 - a failed delivery is retried, never lost
                error = f"{type(e).__name__}: {e}"
        now = self.clock()
        tries = job.attempts + 1
        if error is None or tries >= WEBHOOK_ATTEMPTS or error.startswith("refused: "):
            async with self.db.transaction() as conn:
                await finish_in(conn, job.id, now, error=error)
                await self.audit.append(
                    conn,
                    "webhook_delivered" if error is None else "webhook_failed",
                    approval_id=job.approval_id,
                    thread_id=job.thread_id,
                    actor=jobs.worker_id,
                    data={"delivery_id": delivery_id, "url": url, "tries": tries, "error": error},
                )
            return
        delay = backoff(tries, first=1.0, most=WEBHOOK_BACKOFF_MAX)
        log.warning("webhook %s to %s failed (%s); again in %.0fs", delivery_id, url, error, delay)
        await jobs.finish(job.id, error=error, retry_in=delay)


async def _latest_approval(conn: AsyncConnection, thread_id: str) -> str | None:
    """The id of the approval a service's reads of `thread_id` show: the latest it waits on,
    never one an approval asked after it (its facts changed) replaced, even at the same time."""
    w, a = t.approval_waiters.c, t.approvals.c
    rows = (
        await conn.execute(
            select(w.approval_id, a.checked)
            .join(t.approvals, a.id == w.approval_id)
            .where(w.thread_id == thread_id)
            .order_by(w.created_at.desc())
            .limit(20)
        )
    ).all()
    replaced = {json.loads(r.checked).get("after") for r in rows if r.checked}
    found = next((r.approval_id for r in rows if r.approval_id not in replaced), None)
    return str(found) if found is not None else None


def _problems(
    svc: ServicePolicy,
    rule: ActionPolicy,
    args: Any,
    title: Any,
    callback_url: Any,
) -> dict[str, str]:
    """What is wrong with a service's request beyond its own fields' shapes: a `callback_url`
    its policy does not allow, arguments that do not fit the action's schema (or are not JSON,
    or too long), a title naming arguments it does not have. Field name -> what is wrong."""
    problems: dict[str, str] = {}
    if isinstance(callback_url, str):
        refused = svc.callback_problem(callback_url)
        if refused is not None:
            problems["callback_url"] = refused
    if not isinstance(args, Mapping):
        return {**problems, "args": "must be an object of the action's arguments"}
    if rule.args is not None:
        problems.update({f"args.{k}": v for k, v in rule.args.problems(args).items()})
    else:
        try:
            canonical_json(dict(args))
        except (TypeError, ValueError) as e:
            problems["args"] = f"must be plain JSON values: {e}"
    problems.update(value_problems(args, "args"))
    if isinstance(title, str):
        problem = template_problem(title, args.keys())
        if problem is not None:
            problems["title"] = problem
    return problems
