"""Reading what Slack sends: button values, modal state, `/agent` text. Pure, like Bolt's
`request/payload_utils.py`: small predicates and extractors, no I/O.

Anything malformed raises `BadPayload` (the handler answers "this button is broken or out of
date"). Mistakes a person made in a form raise `FormErrors`, whose `.response()` is the body
Slack wants back to show them under the inputs. A malformed `/agent` line raises `CommandError`.

Identifiers shared with the renderers (action ids, callback ids, block ids) live here, so the code
that writes a payload and the code that reads it cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.approvals.errors import InvalidEditError, PolicyError
from bot.approvals.grants import GrantAsk
from bot.approvals.policy import ActionPolicy, parse_duration, validate_edits

from . import messages
from .limits import BLOCK_ID_MAX, PRIVATE_METADATA_MAX
from .mrkdwn import slack_len

__all__ = [
    "APPROVE",
    "APPROVE_TURN",
    "EDIT",
    "EDIT_CALLBACK",
    "GRANT",
    "GRANT_CALLBACK",
    "GRANT_FOR_BLOCK",
    "GRANT_USES_BLOCK",
    "NOTE_BLOCK",
    "PAYLOAD",
    "PAYLOAD_CALLBACK",
    "REASON_BLOCK",
    "REJECT",
    "REJECT_CALLBACK",
    "REVOKE_GRANT",
    "VALUE_ACTION",
    "ActionValue",
    "AgentCommand",
    "BadPayload",
    "CommandError",
    "FormErrors",
    "TurnValue",
    "action_from_body",
    "action_value_from_view",
    "approval_id_from_view",
    "edit_block_id",
    "edits_from_view_state",
    "grant_from_view_state",
    "is_signoff_action",
    "note_from_view_state",
    "parse_agent_command",
    "reason_from_view_state",
]

# ---- identifiers ------------------------------------------------------------------------------

APPROVE = "signoff.approve"
"""action_id of the Approve button."""
REJECT = "signoff.reject"
"""action_id of the Reject button (opens the reject modal)."""
EDIT = "signoff.edit"
"""action_id of the Edit button (opens the edit modal)."""
PAYLOAD = "signoff.payload"
"""action_id of the Full payload button (opens the payload modal)."""
GRANT = "signoff.grant"
"""action_id of the "Allow more like this" button (opens the grant modal)."""
ACTION_IDS = (APPROVE, REJECT, EDIT, PAYLOAD, GRANT)
REVOKE_GRANT = "signoff.revoke_grant"
"""action_id of a grant's Revoke button on App Home (its value: the grant id)."""
APPROVE_TURN = "signoff.approve_turn"
"""action_id of an agent turn card's "Approve all" button (its value: a `TurnValue`)."""
AWAY_BACK = "signoff.back"
"""action_id of Home's "I'm back" button, shown while its person is away."""
RUN_RETRY = "signoff.run_retry"
"""action_id of a failed run's Retry button (its value: the thread id)."""
RUN_CANCEL = "signoff.run_cancel"
"""action_id of a failed run's Cancel button (its value: the thread id)."""

REJECT_CALLBACK = "signoff.reject"
"""callback_id of the reject modal."""
EDIT_CALLBACK = "signoff.edit"
"""callback_id of the edit-and-approve modal."""
PAYLOAD_CALLBACK = "signoff.payload"
"""callback_id of the full payload modal (no submit)."""
GRANT_CALLBACK = "signoff.grant"
"""callback_id of the approve-and-grant modal."""
GRANT_USES_BLOCK = "grant_uses"
"""block_id of the grant modal's "how many more" select (option values: the number)."""
GRANT_FOR_BLOCK = "grant_for"
"""block_id of the grant modal's "for how long" select (option values: seconds)."""

REASON_BLOCK = "reason"
"""block_id of the reject modal's reason input."""
NOTE_BLOCK = "note"
"""block_id of the edit modal's optional note input."""
VALUE_ACTION = "value"
"""action_id of every input element in our modals."""

_APPROVAL_ID_MAX = 255
"""No approval id signoff makes is longer (they are 26 characters)."""


def edit_block_id(field: str) -> str:
    """The block_id of the edit input for `field`: `edit:<name>`, or a hash of long names."""
    block_id = f"edit:{field}"
    if slack_len(block_id) <= BLOCK_ID_MAX:
        return block_id
    return "edit#" + hashlib.sha256(field.encode("utf-8", "surrogatepass")).hexdigest()


# ---- errors -----------------------------------------------------------------------------------


class BadPayload(ValueError):
    """Slack sent something we did not make, or made by another version: a stale or forged
    button, a view without our metadata. The message says what is wrong; show the user
    `messages.stale_button()`."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class FormErrors(ValueError):
    """Inputs of a submitted modal that need fixing, by block_id. Nothing was decided.

    Attributes:
        errors: `{block_id: message}`, Slack's `response_action: errors` shape.
    """

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))

    def response(self) -> dict[str, Any]:
        """The body to `ack()` with, so Slack shows each message under its input."""
        return {"response_action": "errors", "errors": dict(self.errors)}


class CommandError(ValueError):
    """An `/agent` line that cannot be understood; the message says what to write instead."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


# ---- button values ----------------------------------------------------------------------------

_VALUE_VERSION = 1


@dataclass(frozen=True, slots=True)
class ActionValue:
    """What a card's buttons (and our modals' `private_metadata`) carry.

    Encoded as compact JSON, `{"v":1,"a":"apr_…","t":"refund-…","i":"…"}`, well under Slack's
    2000 characters for the ids signoff makes. The handler must still load the approval by
    `approval_id` and check everything: the value is only a pointer.
    """

    approval_id: str
    """The approval the button decides."""
    thread_id: str
    """The run's thread; "" when it was too long to carry (look it up by approval id)."""
    interrupt_id: str | None = None
    """The paused `request_approval()` the approval answers, when known."""
    revision: int = 0
    """The revision of the values the card or modal shows (`Approval.revision`): a vote from
    it is refused once an edit has changed them. Written only when not 0 (the proposal), so
    a card from before revisions reads as showing the proposal."""

    def encode(self) -> str:
        data: dict[str, Any] = {"v": _VALUE_VERSION, "a": self.approval_id, "t": self.thread_id}
        if self.interrupt_id is not None:
            data["i"] = self.interrupt_id
        if self.revision:
            data["r"] = self.revision
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, value: object) -> ActionValue:
        """Parse an encoded value.

        Raises:
            BadPayload: not a string we made (wrong type, too long, not JSON, wrong version,
                missing or extra keys, empty approval id).
        """
        if not isinstance(value, str):
            raise BadPayload(f"the button value must be a string, got {type(value).__name__}")
        if len(value) > PRIVATE_METADATA_MAX:
            raise BadPayload(
                f"the button value is {len(value)} characters, longer than signoff makes"
            )
        try:
            data = json.loads(value)
        except ValueError:
            raise BadPayload(f"the button value is not signoff's JSON: {value[:80]!r}") from None
        if not isinstance(data, dict):
            raise BadPayload(f"the button value must be a JSON object, got {type(data).__name__}")
        if data.get("v") != _VALUE_VERSION or type(data.get("v")) is not int:
            raise BadPayload(
                f"the button value has version {data.get('v')!r}; this signoff reads version "
                f"{_VALUE_VERSION} (the card is from another version: post it again)"
            )
        extra = set(data) - {"v", "a", "t", "i", "r"}
        if extra:
            raise BadPayload(f"the button value has unknown keys: {', '.join(sorted(extra))}")
        approval_id, thread_id = data.get("a"), data.get("t")
        interrupt_id = data.get("i")
        if not isinstance(approval_id, str) or not approval_id.strip():
            raise BadPayload("the button value has no approval id")
        if len(approval_id) > _APPROVAL_ID_MAX:
            raise BadPayload("the button value's approval id is too long to be signoff's")
        if not isinstance(thread_id, str):
            raise BadPayload("the button value has no thread id")
        if interrupt_id is not None and not isinstance(interrupt_id, str):
            raise BadPayload("the button value's interrupt id must be a string")
        revision = data.get("r", 0)
        if type(revision) is not int or revision < 0:
            raise BadPayload("the button value's revision must be a whole number")
        return cls(approval_id, thread_id, interrupt_id, revision)


@dataclass(frozen=True, slots=True)
class TurnValue:
    """What an agent turn card's "Approve all" carries: the turn's thread and each pending call
    it approves, with the revision of the values the card shows (a vote from it is refused once
    an edit has changed them). Encoded as `{"v":1,"t":"…","c":[["apr_…",0],…]}`."""

    thread_id: str
    calls: tuple[tuple[str, int], ...]

    def encode(self) -> str:
        data = {"v": _VALUE_VERSION, "t": self.thread_id, "c": [list(c) for c in self.calls]}
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, value: object) -> TurnValue:
        """Parse an encoded value.

        Raises:
            BadPayload: not a value signoff made.
        """
        if not isinstance(value, str) or len(value) > PRIVATE_METADATA_MAX:
            raise BadPayload("the Approve all button's value is not one signoff makes")
        try:
            data = json.loads(value)
        except ValueError:
            raise BadPayload(f"the button value is not signoff's JSON: {value[:80]!r}") from None
        calls = data.get("c") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or data.get("v") != _VALUE_VERSION
            or set(data) != {"v", "t", "c"}
            or not isinstance(data["t"], str)
            or not isinstance(calls, list)
            or not calls
        ):
            raise BadPayload("the Approve all button's value is not one signoff makes")
        out: list[tuple[str, int]] = []
        for c in calls:
            if (
                not isinstance(c, list)
                or len(c) != 2
                or not isinstance(c[0], str)
                or not c[0].strip()
                or len(c[0]) > _APPROVAL_ID_MAX
                or type(c[1]) is not int
                or c[1] < 0
            ):
                raise BadPayload("the Approve all button names a call signoff did not")
            out.append((c[0], c[1]))
        return cls(data["t"], tuple(out))


def is_signoff_action(action_id: object) -> bool:
    """Whether an action_id is one of our card buttons."""
    return isinstance(action_id, str) and action_id in ACTION_IDS


def action_from_body(body: Mapping[str, Any]) -> tuple[str, ActionValue]:
    """The action_id and decoded value of the (first) button in a `block_actions` body.

    Raises:
        BadPayload: no action, not one of our buttons, or a malformed value.
    """
    actions = body.get("actions") if isinstance(body, Mapping) else None
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], Mapping):
        raise BadPayload("the interaction has no action")
    action = actions[0]
    action_id = action.get("action_id")
    if not is_signoff_action(action_id):
        raise BadPayload(f"{action_id!r} is not a signoff button")
    return str(action_id), ActionValue.decode(action.get("value"))


def action_value_from_view(view: Mapping[str, Any]) -> ActionValue:
    """The `ActionValue` a modal carries in its `private_metadata`.

    Raises:
        BadPayload: not a view, or metadata we did not write.
    """
    if not isinstance(view, Mapping):
        raise BadPayload(f"the view must be an object, got {type(view).__name__}")
    metadata = view.get("private_metadata")
    if not metadata:
        raise BadPayload("the view carries no signoff metadata")
    return ActionValue.decode(metadata)


def approval_id_from_view(view: Mapping[str, Any]) -> str:
    """The approval id a reject, edit or payload modal is about. Raises `BadPayload`."""
    return action_value_from_view(view).approval_id


# ---- modal state ------------------------------------------------------------------------------


def _values(view_state: Mapping[str, Any]) -> Mapping[str, Any]:
    """`state.values` from a view's `state` (or from the whole view)."""
    if not isinstance(view_state, Mapping):
        raise BadPayload(f"the view state must be an object, got {type(view_state).__name__}")
    if "state" in view_state and isinstance(view_state["state"], Mapping):
        view_state = view_state["state"]
    values = view_state.get("values", view_state)
    if not isinstance(values, Mapping):
        raise BadPayload("the view state has no values")
    return values


def _input(values: Mapping[str, Any], block_id: str) -> str | None:
    """The text typed in one of our inputs; None when the block is not in the form."""
    block = values.get(block_id)
    if block is None:
        return None
    if not isinstance(block, Mapping):
        raise BadPayload(f"the form's {block_id!r} block is not an object")
    element = block.get(VALUE_ACTION)
    if not isinstance(element, Mapping):
        raise BadPayload(f"the form's {block_id!r} block has no {VALUE_ACTION!r} input")
    value = element.get("value")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadPayload(f"the form's {block_id!r} input is not text")
    return value


def reason_from_view_state(view_state: Mapping[str, Any]) -> str:
    """The reason typed in the reject modal, stripped.

    Raises:
        FormErrors: it is blank (Slack lets spaces through a required input).
        BadPayload: the form is not ours.
    """
    values = _values(view_state)
    reason = _input(values, REASON_BLOCK)
    if reason is None:
        raise BadPayload("the reject form has no reason input")
    reason = reason.strip()
    if not reason:
        raise FormErrors({REASON_BLOCK: messages.reason_required()})
    return reason


def grant_from_view_state(view_state: Mapping[str, Any]) -> GrantAsk:
    """The grant chosen in the grant modal: how many more requests, for how long. The policy's
    bounds are checked by the vote (`Signoff.vote`), which stays the authority.

    Raises:
        FormErrors: a choice is missing. BadPayload: the form is not ours.
    """
    values = _values(view_state)
    chosen: dict[str, int] = {}
    for block_id in (GRANT_USES_BLOCK, GRANT_FOR_BLOCK):
        block = values.get(block_id)
        element = block.get(VALUE_ACTION) if isinstance(block, Mapping) else None
        if not isinstance(element, Mapping):
            raise BadPayload(f"the grant form has no {block_id!r} choice")
        option = element.get("selected_option")
        value = option.get("value") if isinstance(option, Mapping) else None
        if value is None:
            raise FormErrors({block_id: "Choose one."})
        if not isinstance(value, str) or not value.isdigit() or len(value) > 9:
            raise BadPayload(f"the grant form's {block_id!r} choice is not ours")
        chosen[block_id] = int(value)
    return GrantAsk(chosen[GRANT_USES_BLOCK], dt.timedelta(seconds=chosen[GRANT_FOR_BLOCK]))


def note_from_view_state(view_state: Mapping[str, Any]) -> str:
    """The optional note of the edit modal, stripped ("" when absent)."""
    return (_input(_values(view_state), NOTE_BLOCK) or "").strip()


def _rule_for(field_name: str) -> ActionPolicy:
    # validate_edits() needs a policy to say the field is editable; the real policy is
    # applied again by Signoff.vote(), which stays the authority.
    return ActionPolicy(action="edit", approvers=("-",), editable=(field_name,))


def edits_from_view_state(
    view_state: Mapping[str, Any], editable: Mapping[str, Any] | Iterable[str]
) -> dict[str, Any]:
    """The edits typed in the edit modal, converted to the type of the values they replace.

    Args:
        view_state: `view["state"]` of the submission (the whole view works too).
        editable: field name -> the value proposed (`{f: approval.payload.get(f) for f in
            approval.editable}`), so `"12.5"` can become `12.5` and unchanged fields are left
            out. Names alone are accepted too; their values are then returned as typed.

    Returns:
        Only the fields that changed, with their new values.

    Raises:
        FormErrors: `{block_id: message}` for each field that does not fit its type.
        BadPayload: the form is not ours.
    """
    values = _values(view_state)
    current: Mapping[str, Any] = (
        editable if isinstance(editable, Mapping) else {name: None for name in editable}
    )
    edits: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, original in current.items():
        block_id = edit_block_id(name)
        raw = _input(values, block_id)
        if raw is None:
            continue  # not offered in the form (too long, redacted, or left out)
        if raw.strip() == "" and not isinstance(original, str):
            if original is not None:
                errors[block_id] = messages.field_required()
            continue  # nothing proposed and nothing typed: no edit
        args = {name: original} if isinstance(editable, Mapping) else {}
        try:
            edits.update(validate_edits(_rule_for(name), {name: raw}, args))
        except InvalidEditError as e:
            text = e.message
            errors[block_id] = text if len(text) <= 300 else text[:299] + "…"
    if errors:
        raise FormErrors(errors)
    return edits


# ---- /agent -----------------------------------------------------------------------------------

CommandKind = Literal["status", "status_thread", "run", "retry", "cancel", "away", "back", "help"]


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """A parsed `/agent` line."""

    kind: CommandKind
    """`status`, `status_thread` (with `thread_id`), `run` (with `workflow`, `args`), `retry`
    and `cancel` (with `thread_id`; `cancel` with a `note` too), `help`."""
    args: dict[str, str] = field(default_factory=dict)
    """`run`'s inputs, `key=value` as strings (the workflow converts them). Default none."""
    workflow: str | None = None
    """`run`'s workflow name."""
    thread_id: str | None = None
    """`status THREAD_ID`'s thread (and `retry`'s, `cancel`'s)."""
    note: str = ""
    """`cancel THREAD_ID why`: the words after the thread id."""
    unknown: str | None = None
    """For `help` given in place of a command it did not know: that command's word."""
    until: str | None = None
    """`away until DATE`: the date as written (`until_time` reads it). Default none."""
    delegate: str | None = None
    """`away delegate @person`: the person's user id, or `@handle` as typed when Slack sent
    the name, not the mention (the app's command does not escape; `users.list` finds it).
    Default none."""


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*")
_DOUBLE = frozenset('"“”„')
_SINGLE = frozenset("'‘’")
_CLOSERS = {'"': _DOUBLE, "“": _DOUBLE, "„": _DOUBLE, "'": _SINGLE, "‘": _SINGLE}
"""An opening quote and what may close it: phones type curly quotes."""


def _unescape(text: str) -> str:
    """Slack sends `&`, `<`, `>` in command text as entities."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _tokens(text: str) -> list[str]:
    """Split on whitespace; a quote at the start of a word or right after `=` quotes up to its
    closing quote (curly quotes too, as phones type them). Inside double quotes a backslash
    makes the next double quote (straight or curly) or backslash literal."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        buf: list[str] = []
        while i < n and not text[i].isspace():
            c = text[i]
            if c in _CLOSERS and (i == start or text[i - 1] == "="):
                closers = _CLOSERS[c]
                j = i + 1
                quoted: list[str] = []
                while j < n and text[j] not in closers:
                    if (
                        text[j] == "\\"
                        and c in _DOUBLE
                        and j + 1 < n
                        and (text[j + 1] in _DOUBLE or text[j + 1] == "\\")
                    ):
                        j += 1
                    quoted.append(text[j])
                    j += 1
                if j >= n:
                    key = "".join(buf)
                    where = f"after {key}" if key else f"at “{text[start : start + 20]}”"
                    raise CommandError(f"the quote opened {where} is never closed")
                buf.extend(quoted)
                i = j + 1
                if i < n and not text[i].isspace():
                    raise CommandError(
                        f"put a space after the closing quote of “{text[start:i][:40]}”"
                    )
                continue
            buf.append(c)
            i += 1
        out.append("".join(buf))
    return out


_MENTION = re.compile(
    r"<@([UW][A-Z0-9]{2,})(?:\|[^>]*)?>|([UW][A-Z0-9_]{2,})|(@[A-Za-z0-9][A-Za-z0-9._-]{0,79})"
)
_AWAY_USAGE = "`/agent away [until DATE] [delegate @person]`"


def _away(words: list[str]) -> AgentCommand:
    """`away [until DATE] [delegate @person]`, in either order."""
    until: str | None = None
    delegate: str | None = None
    i = 0
    while i < len(words):
        word = words[i].lower()
        if word not in ("until", "delegate") or i + 1 >= len(words):
            raise CommandError(f"“{words[i][:60]}” is not understood here: write {_AWAY_USAGE}")
        value = words[i + 1]
        if word == "until":
            until = value
        else:
            found = _MENTION.fullmatch(value)
            if found is None:
                raise CommandError(
                    f"“{value[:60]}” is not a person: mention them (`delegate @bob`, picked "
                    "from Slack's list so that it becomes a mention) or give their user id"
                )
            delegate = found.group(1) or found.group(2) or found.group(3)
        i += 2
    return AgentCommand("away", until=until, delegate=delegate)


def until_time(text: str, now: float) -> float:
    """`away until DATE`: `2026-12-24` (the start of that day, UTC), `2026-12-24T09:00`
    (UTC unless it names its offset), or a duration from now (`3d`, `1w`, `4h`).

    Raises:
        CommandError: none of these.
    """
    try:
        return now + parse_duration(text).total_seconds()
    except PolicyError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(
            f"“{text[:60]}” is not a date: write `until 2026-12-24`, `until 2026-12-24T09:00` "
            "or `until 3d`"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.timestamp()


def parse_agent_command(text: str) -> AgentCommand:
    """Parse the text after `/agent`.

    `status`, `status THREAD_ID`, `run WORKFLOW key=value key="quoted value"`, `retry THREAD_ID`,
    `cancel THREAD_ID [why]`, `away [until DATE] [delegate @person]`, `back`, `help`;
    an empty line is `help`, and an unknown word is `help` with `unknown` set.

    Raises:
        CommandError: a `run` or `status` line that cannot be read (says what to write).
    """
    words = _tokens(_unescape(text or "").strip())
    if not words:
        return AgentCommand("help")
    verb, rest = words[0].lower(), words[1:]
    if verb == "help":
        return AgentCommand("help")
    if verb == "status":
        if not rest:
            return AgentCommand("status")
        if len(rest) > 1:
            raise CommandError(
                "`/agent status` takes one thread id at most: `/agent status THREAD_ID`"
            )
        return AgentCommand("status_thread", thread_id=rest[0])
    if verb in ("retry", "cancel"):
        if not rest:
            raise CommandError(f"say which run: `/agent {verb} THREAD_ID`")
        if verb == "retry" and len(rest) > 1:
            raise CommandError("`/agent retry` takes one thread id: `/agent retry THREAD_ID`")
        kind: CommandKind = "retry" if verb == "retry" else "cancel"
        return AgentCommand(kind, thread_id=rest[0], note=" ".join(rest[1:]))
    if verb == "away":
        return _away(rest)
    if verb == "back":
        if rest:
            raise CommandError("`/agent back` takes nothing after it")
        return AgentCommand("back")
    if verb == "run":
        if not rest:
            raise CommandError("say which workflow: `/agent run WORKFLOW key=value ...`")
        workflow, pairs = rest[0], rest[1:]
        if "=" in workflow or not _NAME.fullmatch(workflow):
            raise CommandError(
                f"“{workflow[:60]}” is not a workflow name; write `/agent run WORKFLOW key=value ...`"
            )
        args: dict[str, str] = {}
        for pair in pairs:
            key, eq, value = pair.partition("=")
            if not eq:
                raise CommandError(f"“{pair[:60]}” has no value: write {pair[:60]}=VALUE")
            if not _KEY.fullmatch(key):
                shown = key[:60] or "(nothing)"
                raise CommandError(
                    f"“{shown}” is not an input name: use letters, digits and _ (like order_id)"
                )
            if key in args:
                raise CommandError(f"{key} is given twice")
            args[key] = value
        return AgentCommand("run", args=args, workflow=workflow)
    return AgentCommand("help", unknown=words[0])
