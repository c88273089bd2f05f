"""The governance layer's value types: an approval's lifecycle, a run's lifecycle (its record and
the moves its status may make), a vote, and the decision a paused node receives."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, cast

from ._service_threads import EXTERNAL_WORKFLOW, service_of
from ._titles import fill_title
from .errors import RunStateError
from .policy.schema import Schema, display

if TYPE_CHECKING:
    from graphs import StateGraph

__all__ = [
    "APPROVAL_KIND",
    "RUN_MOVES",
    "Approval",
    "ApprovalStatus",
    "Decision",
    "DecisionStatus",
    "RunRecord",
    "RunStatus",
    "TurnPlace",
    "Vote",
    "Workflow",
]

APPROVAL_KIND = "signoff.approval/1"
"""Marks an `interrupt()` payload as an approval request (see `request_approval`)."""

ApprovalStatus = Literal["pending", "approved", "rejected", "expired", "cancelled"]
"""Where an approval is in its life. Only `pending` moves, and only once:

- `pending`: waiting for votes. Reminded, escalated, and finally expired by the sweep.
- `approved`: enough distinct approvers said yes (or an auto-approval rule did).
- `rejected`: one approver said no, or policy denied the request (unlisted action, conflict).
- `expired`: nobody decided before `expire_after`; the policy's `on_expiry` outcome was sent.
- `cancelled`: withdrawn before anyone decided (its run was cancelled, deleted or purged).
"""

DecisionStatus = Literal["approved", "rejected", "denied", "expired", "cancelled"]
"""How a decision came about, as the node sees it (`denied`: by policy, before any person)."""

RunStatus = Literal["running", "paused", "completed", "failed", "outcome_unknown", "cancelled"]
"""A run (one thread of a workflow):

- `running`: started or resumed, not yet paused or finished. If the process running it died,
  `signoff retry` or `signoff cancel` takes it over once that process is known gone.
- `paused`: waiting for at least one approval.
- `completed`: reached END.
- `failed`: a node raised; `signoff show` has the error; `signoff retry` (or `/agent retry`)
  goes on from the last checkpoint, re-running only what had not finished.
- `outcome_unknown`: a side effect started and the process died before its result was recorded:
  a person must check the outside system (see `once()`).
- `cancelled`: an operator or approver cancelled it (`signoff cancel`, `/agent cancel`); its
  pending approvals were cancelled with it and it never runs again.
"""

_MOVING: frozenset[RunStatus] = frozenset(
    {"paused", "completed", "failed", "outcome_unknown", "cancelled"}
)
RUN_MOVES: Mapping[RunStatus, frozenset[RunStatus]] = {
    "running": _MOVING | {"running"},
    "paused": _MOVING,
    "failed": _MOVING | {"running"},
    "outcome_unknown": _MOVING,
    "completed": frozenset(),
    "cancelled": frozenset(),
}
"""Where a run's status may move from each status (`check_run_move` refuses any other move):

- from `running`: to how its run stopped (paused, completed, failed, outcome_unknown), to
  `cancelled` once its process is gone, and to `running` when a retry takes it over.
- from `paused`: to how its resume stopped, or `cancelled`; it stays `paused` until a resume
  has stopped (a resume that pauses again is `paused` to `paused`).
- from `failed`: to `running` by a retry, to `cancelled`, or to how a resume by another of its
  approvals stopped.
- from `outcome_unknown`: as from `failed`, but never `running`: a retry is refused until a
  person has checked the outside system.
- `completed` and `cancelled` are final: nothing moves a run out of them.
"""


def check_run_move(thread_id: str, current: RunStatus, to: RunStatus) -> None:
    """Refuse moving run `thread_id`'s status from `current` to `to` unless `RUN_MOVES` allows it.

    Raises:
        RunStateError: the move is not allowed; its message names the run and both statuses.
    """
    allowed = RUN_MOVES.get(current, frozenset())
    if to in allowed:
        return
    where = (
        f"{current} is final"
        if not allowed
        else f"from {current} a run moves only to {', '.join(sorted(allowed))}"
    )
    raise RunStateError(f"run {thread_id!r} cannot move from {current} to {to}: {where}")


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as its row of `runs` holds it, built once from the row (`from_row`, by
    `store.get_run`): one thread of a workflow, who started it and where it stands."""

    thread_id: str
    """The run's thread: its checkpoints, approvals, jobs and audit entries are keyed by it."""
    workflow: str
    """The registered workflow it runs."""
    requester: str
    """Who started it (a Slack user id, a service's requester); they may not approve their own
    requests unless the policy allows it."""
    channel: str | None
    """Where its cards and notifications go; None for the bot's channel."""
    status: RunStatus
    """Where it is in its life; moved only as `RUN_MOVES` allows (`check_move`)."""
    input: str
    """Its inputs as given (JSON), with every secret field hidden (only its hash)."""
    result: str | None
    """Its final values (JSON, secrets hidden) once `completed`; else None."""
    error: str | None
    """Why it failed, stopped or was cancelled (secrets hidden); None otherwise."""
    owner: str | None
    """The worker id (`host:pid:tag`) of the process that started it; None when not known."""
    created_at: float
    """When it started (Unix seconds)."""
    updated_at: float
    """When its row last changed (Unix seconds); what retention (`purge`) ages it by."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> RunRecord:
        """From a row of `runs`, keyed by column name."""
        return cls(
            thread_id=row["thread_id"],
            workflow=row["workflow"],
            requester=row["requester"],
            channel=row["channel"],
            status=cast(RunStatus, row["status"]),
            input=row["input"],
            result=row["result"],
            error=row["error"],
            owner=row["owner"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    def to_row(self) -> dict[str, Any]:
        """The row again, keyed by column name (`Signoff.run_info`'s shape)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @property
    def inputs(self) -> Any:
        """`input` read back from its JSON."""
        return json.loads(self.input)

    def check_move(self, to: RunStatus) -> None:
        """Refuse moving this run to `to` unless `RUN_MOVES` allows it (`check_run_move`)."""
        check_run_move(self.thread_id, self.status, to)


@dataclass(frozen=True, slots=True)
class Decision:
    """What `request_approval()` returns to the node once the approval is settled."""

    approved: bool
    """True only when the action may run."""
    status: DecisionStatus
    approval_id: str
    action: str
    fingerprint: str
    """Of the action and arguments that were *proposed* (before edits)."""
    args: dict[str, Any] = field(default_factory=dict)
    """The arguments to run with: the proposal with the approvers' edits applied."""
    edits: dict[str, Any] = field(default_factory=dict)
    """Only the fields an approver changed, with their new values."""
    by: tuple[str, ...] = ()
    """User ids of the deciders, or `rule:<name>` / `policy` / `sweep`."""
    at: str = ""
    """ISO-8601 UTC time of the decision."""
    note: str = ""
    """The approvers' notes (a rejection always has one)."""
    idempotency_key: str = ""
    """Stable for this approved action: pass it to downstream APIs so a retry is de-duplicated."""
    on_behalf: dict[str, str] = field(default_factory=dict)
    """Delegate -> the away approver they decided for ("Bob for Alice"), for each of `by` who
    voted as a delegate. Default none (and left out of `to_json` then)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "status": self.status,
            "approval_id": self.approval_id,
            "action": self.action,
            "fingerprint": self.fingerprint,
            "args": self.args,
            "edits": self.edits,
            "by": list(self.by),
            "at": self.at,
            "note": self.note,
            "idempotency_key": self.idempotency_key,
            **({"on_behalf": dict(self.on_behalf)} if self.on_behalf else {}),
        }

    def to_record(self) -> dict[str, Any]:
        """What is stored (on the approval, in its resume jobs): `to_json` without `args`, so
        secret fields never leave the checkpoint; the node applies `edits` to its proposal."""
        record = self.to_json()
        del record["args"]
        return record

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        try:
            return cls(
                approved=bool(data["approved"]),
                status=data["status"],
                approval_id=data["approval_id"],
                action=data["action"],
                fingerprint=data["fingerprint"],
                args=dict(data.get("args") or {}),
                edits=dict(data.get("edits") or {}),
                by=tuple(data.get("by") or ()),
                at=data.get("at", ""),
                note=data.get("note", ""),
                idempotency_key=data.get("idempotency_key", ""),
                on_behalf=dict(data.get("on_behalf") or {}),
            )
        except (KeyError, TypeError) as e:
            raise TypeError(
                f"request_approval() was resumed with {data!r}, which is not a signoff decision "
                f"(missing {e}); resume approvals through signoff (approve/reject), not by hand"
            ) from e


@dataclass(frozen=True, slots=True)
class Vote:
    user_id: str
    decision: Literal["approve", "reject"]
    note: str
    edits: dict[str, Any]
    at: float
    for_user: str | None = None
    """The away approver this vote was cast for by their delegate (`user_id`); None for a
    person's own vote."""


@dataclass(frozen=True, slots=True)
class TurnPlace:
    """Where a gated tool call is in its agent's model turn (`Approval.turn`)."""

    call_id: str
    """The tool call's id (the model's)."""
    position: int
    """Its place among the turn's gated calls, from 0 (the order the model proposed them)."""
    after: tuple[str, ...] = ()
    """The ids of the turn's calls it runs after (the policy's `after`): it never runs before
    they are settled, not at all when one is refused, and is decided again when one is
    approved with edits."""

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call_id, "position": self.position, "after": list(self.after)}

    @classmethod
    def from_json(cls, data: Any) -> TurnPlace | None:
        """From the `turn` column, or an `interrupt()` payload's; None for anything else."""
        if not isinstance(data, Mapping) or not isinstance(data.get("call"), str):
            return None
        position = data.get("position")
        after = data.get("after")
        return cls(
            call_id=data["call"],
            position=position if isinstance(position, int) else 0,
            after=tuple(a for a in after if isinstance(a, str)) if isinstance(after, list) else (),
        )


@dataclass(frozen=True, slots=True)
class Approval:
    """One approval request, as stored."""

    id: str
    thread_id: str
    interrupt_id: str
    workflow: str
    action: str
    title: str
    payload: dict[str, Any]
    """The proposed arguments, with secret fields redacted."""
    fingerprint: str
    dedupe_key: str | None
    risk_tier: str
    requester: str
    status: ApprovalStatus
    required: int
    approvers: tuple[str, ...]
    """Policy entries (user ids and `@groups`) who may decide, escalation targets included once escalated."""
    editable: tuple[str, ...]
    escalated: bool
    decision: dict[str, Any] | None
    reason: str | None
    channel: str | None
    message_ts: str | None
    created_at: float
    updated_at: float
    decided_at: float | None
    remind_at: float | None
    escalate_at: float | None
    expire_at: float | None
    reminded_at: float | None
    """When the approvers were reminded (None: not yet); they are reminded once."""
    version: int
    votes: tuple[Vote, ...] = ()
    title_template: str = ""
    """The title as the workflow wrote it, `{field}` placeholders unfilled (stored in the
    `title` column); `title` is it filled with the current values. Default: `title`."""
    note: str | None = None
    """The requester's own words beside the arguments (what a service sent as `title`), its
    placeholders filled as a title's: shown labelled as theirs, never as the header. Default
    none."""
    asked_because: str | None = None
    """Why a request one of the action's auto-approval rules matched was asked of people: the
    rule was past its budget (which cap, how much it had spent). Default none."""
    seen: Mapping[str, Any] | None = None
    """For an agent's tool call: what the model saw and said when it proposed it (`reason`:
    its words beside the call; `results`: the tool results it had just read, `{"tool",
    "content"}`), secrets hidden. Default none."""
    formats: Mapping[str, str] | None = None
    """Field name -> how people see its value (`"money"`: 42.50), from the action's declared
    arguments when it was asked for (`policy.schema.display`). Default none: as written."""
    turn_id: str | None = None
    """The agent's model turn this tool call was proposed in, when that turn proposed more
    than one gated call (`approval_gate`): the approvals of one turn share one card. None
    for any other approval."""
    turn: TurnPlace | None = None
    """Its place in that turn; None when `turn_id` is."""
    checked: Mapping[str, Any] | None = None
    """What the action's check read when it was asked (`bot.approvals.checks`): `at`, and its
    `facts` or its `error`; for a request asked again because facts changed after an approval,
    `changed` (`{name: [old, new]}`) and `after` (that approval's id). None: no check."""
    granted: Mapping[str, Any] | None = None
    """For an approval decided by a grant (`bot.approvals.grants`): which (`id`), whose
    (`grantor`), how many uses were `left` of its `uses` after this one, and `until` when it
    holds (epoch seconds). None for every other approval."""
    away: tuple[Mapping[str, Any], ...] = ()
    """Who was away when every person who could decide it was (`{"user", "until", "why"}`,
    `until` a Unix time or None): the card says so. Default none."""

    def shown(self, name: str, value: Any) -> str | None:
        """`value` of field `name` in its display format, or None when it has none (or the
        format does not apply: text, a redacted secret): show it as it is then."""
        return display(value, (self.formats or {}).get(name))

    @property
    def service(self) -> str | None:
        """The service that asked for it over the approvals API or MCP, or None (a workflow's).
        The card says "via NAME"; its owners may not approve it."""
        return service_of(self.thread_id) if self.workflow == EXTERNAL_WORKFLOW else None

    @property
    def approvals_count(self) -> int:
        return sum(1 for v in self.votes if v.decision == "approve")

    @property
    def revision(self) -> int:
        """Which version of the values is proposed now: 0 as asked for, one more for each
        approver's edit. A vote is for one revision (the card's buttons and the modals carry
        it); a vote on an earlier one is refused (`StaleRevisionError`)."""
        return sum(1 for v in self.votes if v.edits)

    @property
    def current(self) -> dict[str, Any]:
        """The values that run if it is approved now: the proposal (`payload`, secret fields
        redacted) with every edit applied, in order. What the card, its thread, Home and
        `/agent status` show."""
        values = dict(self.payload) if isinstance(self.payload, Mapping) else {}
        for v in self.votes:
            values.update(v.edits)
        return values

    @property
    def changes(self) -> list[tuple[str, Any, Any, str]]:
        """(field, proposed, current, who edited it) for each field an edit changed."""
        out: dict[str, tuple[str, Any, Any, str]] = {}
        proposed = self.payload if isinstance(self.payload, Mapping) else {}
        for v in self.votes:
            for k, after in v.edits.items():
                out[k] = (k, proposed.get(k), after, v.user_id)
        return list(out.values())

    @property
    def decided_by(self) -> list[str]:
        if self.decision:
            return list(self.decision.get("by") or [])
        return []

    @classmethod
    def from_row(cls, row: Mapping[Any, Any], votes: tuple[Vote, ...] = ()) -> Approval:
        """From a row of `approvals` (a SQLAlchemy `RowMapping`, keyed by column name)."""
        payload = json.loads(row["payload"])
        current = dict(payload) if isinstance(payload, Mapping) else {}
        formats = _formats(row.get("formats"))
        for v in votes:
            current.update(v.edits)
        return cls(
            id=row["id"],
            thread_id=row["thread_id"],
            interrupt_id=row["interrupt_id"],
            workflow=row["workflow"],
            action=row["action"],
            title=fill_title(row["title"], current, formats),
            payload=payload,
            fingerprint=row["fingerprint"],
            dedupe_key=row["dedupe_key"],
            risk_tier=row["risk_tier"],
            requester=row["requester"],
            status=row["status"],
            required=row["required"],
            approvers=tuple(json.loads(row["approvers"])),
            editable=tuple(json.loads(row["editable"])),
            escalated=bool(row["escalated"]),
            decision=json.loads(row["decision"]) if row["decision"] else None,
            reason=row["reason"],
            channel=row["channel"],
            message_ts=row["message_ts"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            decided_at=row["decided_at"],
            remind_at=row["remind_at"],
            escalate_at=row["escalate_at"],
            expire_at=row["expire_at"],
            reminded_at=row["reminded_at"],
            version=row["version"],
            votes=votes,
            title_template=row["title"],
            note=fill_title(row["note"], current, formats) if row.get("note") else None,
            asked_because=row.get("asked_because"),
            seen=_seen(row.get("agent_seen")),
            formats=formats,
            turn_id=row.get("turn_id"),
            turn=_turn_place(row.get("turn")),
            checked=_checked(row.get("checked")),
            granted=_seen(row.get("granted")),
            away=tuple(json.loads(row["away"])) if row.get("away") else (),
        )


def _checked(text: str | None) -> Mapping[str, Any] | None:
    """The `checked` column: a JSON object, or None (no check, or unreadable)."""
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, Mapping) else None


def _turn_place(text: str | None) -> TurnPlace | None:
    try:
        return TurnPlace.from_json(json.loads(text)) if text else None
    except ValueError:
        return None


def _formats(text: str | None) -> dict[str, str]:
    """The `formats` column: a JSON object of field -> format; anything else shows as written."""
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(data, Mapping):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class Workflow:
    """A workflow signoff can run: a name and a function that builds its (uncompiled) graph."""

    name: str
    build: Callable[[], StateGraph]
    description: str
    schema: Schema = field(default_factory=Schema)
    """What a run's inputs must be (the workflow module's `INPUTS`): a start that does not fit
    is refused before anything is recorded (`MissingInputError`, `InvalidInputError`), rather
    than failing half way. Default: no inputs."""

    @property
    def inputs(self) -> tuple[str, ...]:
        """The input keys a run takes (shown by the CLI and the sandbox's form)."""
        return self.schema.names

    @property
    def required(self) -> tuple[str, ...]:
        """The inputs a run cannot start without."""
        return self.schema.required


def _seen(stored: Any) -> Mapping[str, Any] | None:
    """The `agent_seen` column, read; None for a missing or unreadable one."""
    if not isinstance(stored, str):
        return None
    try:
        found = json.loads(stored)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
