"""Which interrupt values signoff reads as another library's request (`_foreign.read`), and the
approvals they ask for: one per action request, the request's config bounding the edit."""

from __future__ import annotations

from bot.approvals import _foreign
from bot.approvals.models import APPROVAL_KIND

INBOX = {
    "action_request": {"action": "send_refund", "args": {"amount": 5}},
    "config": {"allow_accept": True, "allow_edit": False, "allow_respond": False,
               "allow_ignore": True},
    "description": "why",
}  # fmt: skip


def test_a_workflow_s_own_question_and_signoff_s_request_are_not_foreign() -> None:
    assert _foreign.read({"kind": APPROVAL_KIND, "action": "x", "args": {}}) is None
    assert _foreign.read("What is the order number?") is None
    assert _foreign.read({"question": "which order?"}) is None
    assert _foreign.read([]) is None
    # half a request (no args, a non-list) is not read as one
    assert _foreign.read({"action_requests": [{"name": "x"}], "review_configs": []}) is None
    assert _foreign.read([INBOX, {"action_request": "x"}]) is None


def test_agent_inbox_one_or_a_list_and_its_config() -> None:
    one = _foreign.read(INBOX)
    many = _foreign.read([INBOX, INBOX])
    assert one is not None and many is not None
    assert (one.form, len(one.asks)) == ("inbox", 1)
    assert (many.form, len(many.asks)) == ("inbox_list", 2)
    ask = one.asks[0]
    assert (ask.action, ask.args, ask.description) == ("send_refund", {"amount": 5}, "why")
    assert (ask.may_accept, ask.may_edit, ask.refusal) == (True, False, "ignore")


def test_a_hitl_request_s_calls_are_one_turn_and_an_unconfigured_one_takes_no_edit() -> None:
    request = _foreign.read(
        {
            "action_requests": [
                {"name": "send_refund", "args": {"amount": 5}, "description": "d"},
                {"name": "email_customer", "args": {"to": "a@b.c"}},
            ],
            "review_configs": [
                {"action_name": "send_refund", "allowed_decisions": ["edit", "respond"]}
            ],
        }
    )
    assert request is not None and request.form == "hitl"
    refund, email = request.asks
    assert (refund.may_accept, refund.may_edit, refund.refusal) == (False, True, "respond")
    assert (email.may_accept, email.may_edit, email.refusal) == (True, False, "reject")
    (first, p1), (second, p2) = _foreign.payloads("abc", request)
    assert (first, second) == ("abc#0", "abc#1")
    assert p1["turn_id"] == p2["turn_id"] == "abc"
    assert "no_edit" not in p1 and p2["no_edit"] is True
    assert p1["note"] == "d" and "note" not in p2
    assert _foreign.part_of("abc#1") == ("abc", 1)
    assert _foreign.part_of("abc") is None
