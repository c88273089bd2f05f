"""Reading what Slack sends: button values, modal state, `/agent` lines; and the refusal texts."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.approvals import errors
from bot.slack import messages, mrkdwn
from bot.slack.payloads import (
    APPROVE,
    NOTE_BLOCK,
    REASON_BLOCK,
    ActionValue,
    AgentCommand,
    BadPayload,
    CommandError,
    FormErrors,
    action_from_body,
    approval_id_from_view,
    edit_block_id,
    edits_from_view_state,
    note_from_view_state,
    parse_agent_command,
    reason_from_view_state,
)
from tests.kit.slack import NOW, make_approval, vote

# ---------------------------------------------------------------------------------------------
# Button values
# ---------------------------------------------------------------------------------------------


def test_action_value_is_compact_json() -> None:
    value = ActionValue("apr_abc", "refund-1", "int-9")
    assert value.encode() == '{"v":1,"a":"apr_abc","t":"refund-1","i":"int-9"}'
    assert ActionValue("apr_abc", "refund-1").encode() == '{"v":1,"a":"apr_abc","t":"refund-1"}'
    assert ActionValue.decode(value.encode()) == value


@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=1, max_size=255).filter(str.strip),
    st.text(max_size=300),
    st.none() | st.text(max_size=100),
)
def test_action_value_round_trip(
    approval_id: str, thread_id: str, interrupt_id: str | None
) -> None:
    value = ActionValue(approval_id, thread_id, interrupt_id)
    assert ActionValue.decode(value.encode()) == value


def test_signoff_ids_fit_a_button() -> None:
    value = ActionValue("apr_" + "x" * 22, "vendor_payment-" + "0" * 12, "0" * 64).encode()
    assert len(value) < 200


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "must be a string, got NoneType"),
        (5, "must be a string, got int"),
        (b'{"v":1}', "must be a string, got bytes"),
        ("", "is not signoff's JSON"),
        ("approve", "is not signoff's JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ('"apr_1"', "must be a JSON object, got str"),
        ('{"a":"apr_1","t":"t"}', "has version None"),
        ('{"v":2,"a":"apr_1","t":"t"}', "has version 2; this signoff reads version 1"),
        ('{"v":"1","a":"apr_1","t":"t"}', "has version '1'"),
        ('{"v":true,"a":"apr_1","t":"t"}', "has version True"),
        ('{"v":1,"t":"t"}', "has no approval id"),
        ('{"v":1,"a":"","t":"t"}', "has no approval id"),
        ('{"v":1,"a":"  ","t":"t"}', "has no approval id"),
        ('{"v":1,"a":7,"t":"t"}', "has no approval id"),
        ('{"v":1,"a":"' + "x" * 256 + '","t":"t"}', "approval id is too long"),
        ('{"v":1,"a":"apr_1"}', "has no thread id"),
        ('{"v":1,"a":"apr_1","t":null}', "has no thread id"),
        ('{"v":1,"a":"apr_1","t":"t","i":3}', "interrupt id must be a string"),
        ('{"v":1,"a":"apr_1","t":"t","x":1}', "unknown keys: x"),
        ("x" * 3001, "longer than signoff makes"),
    ],
)
def test_malformed_values_are_refused(value: Any, message: str) -> None:
    with pytest.raises(BadPayload) as info:
        ActionValue.decode(value)
    assert message in info.value.message


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=200)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from("vatix"), inner, max_size=5)
        ),
    ).map(json.dumps)
)
def test_decoding_anything_gives_a_value_or_bad_payload(value: str) -> None:
    try:
        decoded = ActionValue.decode(value)
    except BadPayload:
        return
    assert decoded.approval_id.strip() and isinstance(decoded.thread_id, str)


def test_action_from_body() -> None:
    value = ActionValue("apr_1", "t-1").encode()
    body = {"type": "block_actions", "actions": [{"action_id": APPROVE, "value": value}]}
    assert action_from_body(body) == (APPROVE, ActionValue("apr_1", "t-1"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "has no action"),
        ({"actions": []}, "has no action"),
        ({"actions": ["x"]}, "has no action"),
        (
            {"actions": [{"action_id": "other.app", "value": "{}"}]},
            "'other.app' is not a signoff button",
        ),
        ({"actions": [{"action_id": APPROVE}]}, "must be a string, got NoneType"),
    ],
)
def test_action_from_bad_body(body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadPayload, match=message):
        action_from_body(body)


def test_approval_id_from_view() -> None:
    assert (
        approval_id_from_view({"private_metadata": ActionValue("apr_9", "t").encode()}) == "apr_9"
    )
    for view in ({}, {"private_metadata": ""}, {"private_metadata": "garbage"}, "not a view"):
        with pytest.raises(BadPayload):
            approval_id_from_view(view)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Modal state
# ---------------------------------------------------------------------------------------------


def state(**inputs: str | None) -> dict[str, Any]:
    return {
        "values": {
            k: {"value": {"type": "plain_text_input", "value": v}} for k, v in inputs.items()
        }
    }


def test_reason_from_view_state() -> None:
    assert reason_from_view_state(state(reason="  duplicate order \n")) == "duplicate order"
    assert reason_from_view_state({"state": state(reason="r")}) == "r"  # the whole view works too
    for blank in ("", "   \n", None):
        with pytest.raises(FormErrors) as info:
            reason_from_view_state(state(reason=blank))
        assert info.value.response() == {
            "response_action": "errors",
            "errors": {REASON_BLOCK: "Write a reason: the requester and the workflow will see it."},
        }
    with pytest.raises(BadPayload, match="has no reason input"):
        reason_from_view_state(state(other="x"))
    with pytest.raises(BadPayload):
        reason_from_view_state({"values": {"reason": {"value": {"value": 5}}}})
    with pytest.raises(BadPayload):
        reason_from_view_state({"values": {"reason": "x"}})


def test_note_from_view_state() -> None:
    assert note_from_view_state(state(note=" ok ")) == "ok"
    assert note_from_view_state(state()) == ""
    assert NOTE_BLOCK == "note"


PROPOSED = {
    "amount": 12.5,
    "count": 3,
    "urgent": False,
    "reason": "damaged",
    "tags": ["a"],
    "meta": {"k": 1},
}


def edit_state(**typed: str | None) -> dict[str, Any]:
    return state(**{edit_block_id(k): v for k, v in typed.items()})


@pytest.mark.parametrize(
    ("typed", "edits"),
    [
        ({"amount": "12.5", "count": "3", "urgent": "false", "reason": "damaged"}, {}),
        ({"amount": " 10 "}, {"amount": 10.0}),
        ({"count": "4"}, {"count": 4}),
        ({"urgent": "yes"}, {"urgent": True}),
        ({"urgent": "TRUE"}, {"urgent": True}),
        ({"reason": ""}, {"reason": ""}),
        ({"reason": None}, {"reason": ""}),
        ({"reason": "partial refund"}, {"reason": "partial refund"}),
        ({"tags": '["a", "b"]'}, {"tags": ["a", "b"]}),
        ({"meta": '{"k": 2}'}, {"meta": {"k": 2}}),
        ({}, {}),
    ],
)
def test_edits_from_view_state(typed: dict[str, str | None], edits: dict[str, Any]) -> None:
    assert edits_from_view_state(edit_state(**typed), PROPOSED) == edits


@pytest.mark.parametrize(
    ("typed", "errors"),
    [
        ({"amount": "12x"}, {"amount": "amount must be a number, got '12x'"}),
        ({"amount": ""}, {"amount": "Enter a value."}),
        ({"count": "1.5"}, {"count": "count must be a whole number, got '1.5'"}),
        ({"urgent": "maybe"}, {"urgent": "urgent must be true or false, got 'maybe'"}),
        ({"tags": "a, b"}, {"tags": "tags must be JSON (a JSON array), got 'a, b'"}),
        ({"tags": '{"a": 1}'}, {"tags": "tags must be a JSON array, got '{\"a\": 1}'"}),
        (
            {"amount": "x", "count": "y", "reason": "fine"},
            {
                "amount": "amount must be a number, got 'x'",
                "count": "count must be a whole number, got 'y'",
            },
        ),
    ],
)
def test_edit_errors_come_back_per_field(typed: dict[str, str], errors: dict[str, str]) -> None:
    with pytest.raises(FormErrors) as info:
        edits_from_view_state(edit_state(**typed), PROPOSED)
    expected = {edit_block_id(k): v for k, v in errors.items()}
    assert info.value.errors == expected
    assert info.value.response() == {"response_action": "errors", "errors": expected}


def test_edit_errors_are_short() -> None:
    with pytest.raises(FormErrors) as info:
        edits_from_view_state(edit_state(amount="x" * 5000), PROPOSED)
    assert len(info.value.errors[edit_block_id("amount")]) <= 300


def test_edits_with_names_only_come_back_as_typed() -> None:
    assert edits_from_view_state(
        edit_state(amount="10", reason="r", count=""), ["amount", "reason", "count"]
    ) == {
        "amount": "10",
        "reason": "r",
    }


def test_edit_block_ids_fit_and_differ() -> None:
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    assert edit_block_id("amount") == "edit:amount"
    assert len(edit_block_id(long_a)) <= 255 and edit_block_id(long_a) != edit_block_id(long_b)
    assert mrkdwn.slack_len(edit_block_id("𐀀" * 126)) <= 255
    assert edits_from_view_state(state(**{edit_block_id(long_a): "x"}), {long_a: "y"}) == {
        long_a: "x"
    }


# ---------------------------------------------------------------------------------------------
# /agent
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("", AgentCommand("help")),
        ("   ", AgentCommand("help")),
        ("help", AgentCommand("help")),
        ("HELP", AgentCommand("help")),
        ("status", AgentCommand("status")),
        ("Status", AgentCommand("status")),
        ("status refund-0123", AgentCommand("status_thread", thread_id="refund-0123")),
        ("  status   refund-0123  ", AgentCommand("status_thread", thread_id="refund-0123")),
        ("frobnicate now", AgentCommand("help", unknown="frobnicate")),
        ("run refund", AgentCommand("run", workflow="refund")),
        (
            "run refund customer_id=C1 amount=12.50",
            AgentCommand("run", {"customer_id": "C1", "amount": "12.50"}, workflow="refund"),
        ),
        (
            'run refund reason="two words" order_id=O-1',
            AgentCommand("run", {"reason": "two words", "order_id": "O-1"}, workflow="refund"),
        ),
        (
            "run refund reason=“smart quotes” x=1",
            AgentCommand("run", {"reason": "smart quotes", "x": "1"}, workflow="refund"),
        ),
        (
            "run refund reason='single quoted'",
            AgentCommand("run", {"reason": "single quoted"}, workflow="refund"),
        ),
        (
            "run refund reason=‘curly single’",
            AgentCommand("run", {"reason": "curly single"}, workflow="refund"),
        ),
        ("run refund reason=don't", AgentCommand("run", {"reason": "don't"}, workflow="refund")),
        (
            'run refund reason="say \\"hi\\" \\\\ ok"',
            AgentCommand("run", {"reason": 'say "hi" \\ ok'}, workflow="refund"),
        ),
        ('run refund reason=""', AgentCommand("run", {"reason": ""}, workflow="refund")),
        ("run refund reason=", AgentCommand("run", {"reason": ""}, workflow="refund")),
        ("run refund a=b=c", AgentCommand("run", {"a": "b=c"}, workflow="refund")),
        (
            "run refund note=a&amp;b&lt;c&gt;",
            AgentCommand("run", {"note": "a&b<c>"}, workflow="refund"),
        ),
        (
            'run refund multi="line one\nline two"',
            AgentCommand("run", {"multi": "line one\nline two"}, workflow="refund"),
        ),
        (
            "RUN mypkg.flows:build x=1",
            AgentCommand("run", {"x": "1"}, workflow="mypkg.flows:build"),
        ),
    ],
)
def test_parse_agent_command(text: str, command: AgentCommand) -> None:
    assert parse_agent_command(text) == command


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("status a b", "`/agent status` takes one thread id at most"),
        ("run", "say which workflow: `/agent run WORKFLOW key=value ...`"),
        ("run amount=5", "“amount=5” is not a workflow name"),
        ("run refund amount", "“amount” has no value: write amount=VALUE"),
        ("run refund =5", "“(nothing)” is not an input name"),
        ("run refund 1a=5", "“1a” is not an input name: use letters, digits and _ (like order_id)"),
        ("run refund a-b=5", "“a-b” is not an input name"),
        ("run refund a=1 a=2", "a is given twice"),
        ('run refund reason="never closed', "the quote opened after reason= is never closed"),
        ('run refund "bare', 'the quote opened at “"bare” is never closed'),
        ('run refund reason="x"y', 'put a space after the closing quote of “reason="x"”'),
    ],
)
def test_parse_agent_command_errors(text: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_agent_command(text)
    assert info.value.message == message or message in info.value.message


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=80)
    | st.lists(
        st.sampled_from(["run", "status", " ", "a=", '"', "“", "'", "\\", "x", "="]), max_size=20
    ).map("".join)
)
def test_parsing_anything_gives_a_command_or_a_clear_error(text: str) -> None:
    try:
        command = parse_agent_command(text)
    except CommandError as e:
        assert e.message
        return
    assert command.kind in ("status", "status_thread", "run", "help")


def _quote(value: str) -> str:
    out = value.replace("\\", "\\\\")
    for q in '"“”„':
        out = out.replace(q, "\\" + q)
    return f'"{out}"'


def _as_slack_sends(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True),
        st.text(max_size=30),
        max_size=6,
    )
)
def test_run_arguments_round_trip(args: dict[str, str]) -> None:
    line = "run refund " + " ".join(f"{k}={_quote(v)}" for k, v in args.items())
    assert parse_agent_command(_as_slack_sends(line)) == AgentCommand(
        "run", args, workflow="refund"
    )


# ---------------------------------------------------------------------------------------------
# Refusals and errors
# ---------------------------------------------------------------------------------------------

APPROVAL = make_approval(
    approvers=("@finance", "U_DAVE", "U_CAROL"), required=2, votes=(vote("U_ALICE"),)
)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            errors.NotAuthorizedError("you are not an approver", "apr_1"),
            (
                "🚫 You're not an approver of *Refund 12.00 to C1*, so you can't decide it. "
                "Ask @finance, <@U_DAVE> or <@U_CAROL>. Nothing was changed."
            ),
        ),
        (
            errors.SelfApprovalError("own request", "apr_1"),
            (
                "🚫 You asked for this, and the policy doesn't let you approve your own request: "
                "ask @finance or <@U_DAVE>. Nothing was changed."
            ),
        ),
        (
            errors.AlreadyDecidedError("already", "apr_1", "approved", ["U_ALICE", "U_BOB"], NOW),
            (
                "ℹ️ This was already approved by <@U_ALICE> and <@U_BOB> "
                "<!date^1700000000^{date_short_pretty} at {time}|2023-11-14 22:13 UTC>. Nothing was changed."
            ),
        ),
        (
            errors.AlreadyDecidedError("already", "apr_1", "rejected", ["rule:x"], None),
            "ℹ️ This was already rejected by the rule “x” at an unknown time. Nothing was changed.",
        ),
        (
            errors.AlreadyVotedError("voted", "apr_1"),
            "ℹ️ You've already voted on this. It still needs 1 more approval. Nothing was changed.",
        ),
        (
            errors.ApprovalExpiredError("expired", "apr_1"),
            (
                "⌛ This request expired <!date^1700183659^{date_short_pretty} at {time}|2023-11-17 01:14 UTC>; "
                "the workflow got the expiry outcome. Nothing was changed."
            ),
        ),
        (
            errors.InvalidEditError("amount must be a number, got '<!channel>'", "apr_1"),
            "⚠️ That can't be used: amount must be a number, got '&lt;!channel&gt;'. Nothing was changed.",
        ),
        (
            errors.DecisionRefused("something else", "apr_1"),
            "🚫 signoff refused that: something else. Nothing was changed.",
        ),
    ],
)
def test_refusal_for_each_code(error: errors.DecisionRefused, expected: str) -> None:
    assert messages.refusal(error, APPROVAL) == expected


def test_refusal_without_the_approval() -> None:
    assert messages.refusal(errors.NotAuthorizedError("no")) == (
        "🚫 You're not an approver of this request, so you can't decide it. Nothing was changed."
    )
    assert messages.refusal(errors.ApprovalExpiredError("no")).startswith(
        "⌛ This request expired;"
    )
    assert (
        messages.refusal(errors.AlreadyVotedError("no"))
        == "ℹ️ You've already voted on this. Nothing was changed."
    )


def test_error_texts() -> None:
    assert messages.database_unavailable() == (
        "signoff can't reach its database right now; nothing was changed — try again in a minute"
    )
    assert messages.unknown_approval("apr_<x>") == (
        "🤷 signoff has no request `apr_&lt;x&gt;`; it may have been purged. Nothing was changed."
    )
    assert "broken or out of date, so nothing was changed" in messages.stale_button()
    assert (
        messages.unknown_thread("t`1")
        == "🤷 No run has the thread id `tˋ1`. `/agent status` lists what is waiting."
    )
    assert (
        messages.unknown_command("<!channel>")
        == "🤷 I don't know `/agent &lt;!channel&gt;`. Here is what I can do:"
    )
    assert "`[workflows.refund] starters`" in messages.start_refused("refund")
    assert messages.command_error("a is given twice") == "⚠️ a is given twice\nTry `/agent help`."
