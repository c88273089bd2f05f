"""Typed arguments: a workflow's inputs and an action's arguments have a declared schema, checked
at start (nothing recorded when they do not fit), on every edit (the field is named), and before
any auto-approval rule is considered (a rule never approves what the schema refuses).
SQLite and PostgreSQL."""

from __future__ import annotations

import logging
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from aiohttp.test_utils import TestClient, TestServer

from bot.approvals import tables as t
from bot.approvals.errors import InvalidEditError, InvalidInputError, MissingInputError, PolicyError
from bot.approvals.policy import evaluate_request, load_policy, parse_policy
from bot.approvals.policy.schema import Field, Schema, SchemaError
from bot.config import Settings
from bot.http import Metrics, build_web_app
from tests.kit.flows import DEMO_POLICY
from tests.kit.signoff import Kit

REFUND = {"customer_id": "cust_1", "order_id": "o-1", "amount": 42.5, "reason": "damaged"}


async def nothing_recorded(kit: Kit) -> None:
    assert await kit.rows(sa.select(t.runs)) == []
    assert await kit.rows(sa.select(t.approvals)) == []
    assert {e["kind"] for e in await kit.audit()} <= {"start_refused"}  # the refusal only


# ---- the schema -------------------------------------------------------------------------


def test_booleans_are_not_numbers_and_digits_are_not_numbers_unless_typed_in_a_form() -> None:
    amount = Schema({"amount": Field("number", required=True, exclusive_minimum=0, maximum=100)})
    for bad in (True, False, "42", float("nan"), float("inf"), None, "", [1], Decimal("NaN")):
        with pytest.raises(SchemaError) as e:
            amount.check({"amount": bad})
        assert set(e.value.problems) == {"amount"}
    assert amount.check({"amount": 42}) == {"amount": 42}
    assert amount.check({"amount": Decimal("4.5")}) == {"amount": Decimal("4.5")}
    # Text from a form is parsed by the schema, in ASCII digits only.
    assert amount.check({"amount": " 42.50 "}, text=True) == {"amount": 42.5}
    for bad in ("４２", "42abc", "true", "0x10", "1_000", "٤٢"):
        with pytest.raises(SchemaError):
            amount.check({"amount": bad}, text=True)
    for bad in (0, -1, -1e9, 100.01, 1e308):
        with pytest.raises(SchemaError, match="amount: must be"):
            amount.check({"amount": bad})


def test_undeclared_fields_patterns_enums_and_lengths_are_refused() -> None:
    s = Schema(
        {
            "id": Field("string", required=True, pattern=r"[a-z]+-[0-9]+", max_length=10),
            "currency": Field("string", enum=("EUR", "USD")),
            "count": Field("integer", minimum=1),
            "urgent": Field("boolean"),
        }
    )
    assert s.check({"id": "o-1", "currency": "EUR", "count": 2.0, "urgent": "yes"}, text=True) == {
        "id": "o-1",
        "currency": "EUR",
        "count": 2,
        "urgent": True,
    }
    problems = s.problems({"id": "O 1", "currency": "GBP", "count": 1.5, "urgent": 1, "x": 1})
    assert set(problems) == {"id", "currency", "count", "urgent", "x"}
    assert s.problems({"currency": "EUR"}) == {"id": "is required"}
    assert s.problems({"id": "a-1", "urgent": True}) == {}


# ---- at start ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "field_says"),
    [
        (-1_000_000, "must be more than 0"),
        (0, "must be more than 0"),
        (1e308, "must be at most 10000"),
        (True, "must be a finite number"),
        ("42", "must be a finite number"),
    ],
)
async def test_a_start_outside_the_workflows_schema_is_refused_and_nothing_is_recorded(
    kit: Kit, amount: Any, field_says: str
) -> None:
    with pytest.raises(InvalidInputError) as e:
        await kit.start("refund", {**REFUND, "amount": amount}, check_starter=True)
    assert e.value.problems["amount"].startswith(field_says)
    await nothing_recorded(kit)


async def test_a_start_from_text_is_parsed_by_the_schema_in_ascii_digits_only(kit: Kit) -> None:
    text = {"customer_id": "cust_1", "amount": "４２"}
    with pytest.raises(InvalidInputError, match="amount must be a number"):
        await kit.start("refund", text, text_inputs=True)
    with pytest.raises(InvalidInputError, match="customer_id must match"):
        await kit.start("refund", {"customer_id": "cust 1; drop", "amount": "4"}, text_inputs=True)
    with pytest.raises(InvalidInputError, match="ammount is not an argument"):
        await kit.start(
            "refund", {"customer_id": "cust_1", "amount": "9", "ammount": "4"}, text_inputs=True
        )
    with pytest.raises(MissingInputError, match="needs amount"):
        await kit.start("refund", {"customer_id": "cust_1"}, text_inputs=True)
    await nothing_recorded(kit)
    report = await kit.start(
        "refund", {"customer_id": "cust_1", "amount": "42.50"}, text_inputs=True
    )
    assert report.status == "paused"
    (a,) = await kit.approvals()
    assert a["status"] == "pending"  # 42.50 is above the small-refunds rule's 5


async def test_the_http_api_refuses_a_start_with_what_is_wrong_per_field(
    kit: Kit, tmp_path: Path
) -> None:
    settings = Settings(
        database_url=kit.db_url,
        policy_path=str(kit.policy_path),
        api_token="tok",
        default_channel="C0APPROVALS",
    )

    class Runner:
        def kick(self) -> None:
            pass

    app = build_web_app(kit.app, settings, bolt_app=None, runner=Runner(), metrics=Metrics())  # type: ignore[arg-type]
    async with TestClient(TestServer(app)) as client:
        resp = await client.post(
            "/api/runs",
            json={
                "workflow": "refund",
                "input": {"customer_id": "cust_1", "amount": -1_000_000, "reason": 7},
                "requester": "U_CAROL",
            },
            headers={"Authorization": "Bearer tok"},
        )
        body = await resp.json()
    assert resp.status == 400 and body["ok"] is False
    assert set(body["problems"]) == {"amount", "reason"}
    assert body["problems"]["amount"].startswith("must be more than 0")
    await nothing_recorded(kit)


# ---- before any auto-approval rule ------------------------------------------------------


def test_a_rule_never_matches_a_value_its_actions_schema_rejects() -> None:
    policy = load_policy(DEMO_POLICY)
    base = {"customer_id": "c1", "order_id": "", "reason": ""}
    assert evaluate_request(policy, "send_refund", {**base, "amount": 3}).outcome == "auto_approve"
    for amount in (-1_000_000, 0, -0.0, True, "3", float("nan"), 1e308, None):
        verdict = evaluate_request(policy, "send_refund", {**base, "amount": amount})
        assert verdict.outcome == "deny", amount
        assert "schema" in verdict.reason


async def test_a_negative_refund_asked_for_by_a_workflow_is_denied_not_auto_approved(
    kit: Kit,
) -> None:
    # The `ask` test workflow proposes whatever it is given: the action's schema, not the
    # workflow's inputs, is what stands between it and the "small refunds" rule.
    args = {"customer_id": "cust_1", "order_id": "o-1", "amount": -1_000_000, "reason": "x"}
    report = await kit.ask("send_refund", args)
    (a,) = await kit.approvals(report.thread_id)
    assert a["status"] == "rejected"
    assert await kit.audit("auto_approved") == []
    (denied,) = await kit.audit("denied")
    assert "amount must be more than 0" in denied["data"]["reason"]
    await kit.app.run_jobs(("resume",))
    assert await kit.effects("act") == []


# ---- on every edit ----------------------------------------------------------------------


@pytest.mark.parametrize("amount", ["-1e9", "0", "1e308", -1e9, 0, 1e308, True, "４２", "true"])
async def test_an_edit_outside_the_schema_is_refused_naming_the_field(
    kit: Kit, amount: Any
) -> None:
    (approval_id,) = (await kit.start("refund", REFUND)).approvals
    with pytest.raises(InvalidEditError) as e:
        await kit.app.decide(approval_id, "U_ALICE", True, edits={"amount": amount})
    assert e.value.field == "amount"
    a = await kit.app.get(approval_id)
    assert (a.status, a.votes) == ("pending", ())
    assert await kit.audit("edited") == []


async def test_an_edit_inside_the_schema_runs(kit: Kit) -> None:
    report = await kit.start("refund", REFUND)
    (approval_id,) = report.approvals
    await kit.app.decide(approval_id, "U_ALICE", True, edits={"amount": "40"})
    await kit.app.run_jobs(("resume",))
    (refund,) = await kit.effects("refund")
    assert refund["data"]["amount"] == 40.0


# ---- in the policy file -----------------------------------------------------------------


def test_the_loader_warns_once_naming_an_action_without_a_schema(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = '[actions.unchecked_once]\napprovers = ["U1"]\n'
    with caplog.at_level(logging.WARNING, logger="signoff.policy"):
        parse_policy(text, "warned.toml")
        parse_policy(text, "warned.toml")
    warned = [r.getMessage() for r in caplog.records if "unchecked_once" in r.getMessage()]
    assert len(warned) == 1
    assert "[actions.unchecked_once.args]" in warned[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="signoff.policy"):
        load_policy(DEMO_POLICY)
    assert [r for r in caplog.records if "declares no argument schema" in r.getMessage()] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ('amount = { type = "money" }', "actions.a.args.amount.type: must be one of"),
        ('amount = { type = "number", minimum = "0" }', "must be finite numbers"),
        ('amount = { type = "string", maximum = 3 }', "minimum and maximum are for numbers"),
        ('amount = { type = "string", pattern = "(" }', "is not a regular expression"),
        ('amount = { type = "number", requird = true }', "did you mean 'required'?"),
        ('reason = "string"', "declares no field 'amount'"),
    ],
)
def test_bad_argument_schemas_are_policy_errors(args: str, message: str) -> None:
    text = f'[actions.a]\napprovers = ["U1"]\neditable = ["amount"]\n\n[actions.a.args]\n{args}\n'
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_policy(text)
