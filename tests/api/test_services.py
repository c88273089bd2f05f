"""`[services.NAME]` in the policy (errors with file, line and key; unknown keys refused; an
unset token warned about), and what an external approval gets from the rest of signoff
unchanged: auto-approval rules, secret fields, expiry, each settled with its webhook queued in
the same transaction. SQLite and PostgreSQL (the `api` fixture)."""

from __future__ import annotations

import logging

import pytest
import sqlalchemy as sa

from bot.approvals import tables as t
from bot.approvals.errors import PolicyError
from bot.approvals.policy import parse_policy
from tests.api.conftest import REFUND, Api

ACTION = '[actions.send_refund]\napprovers = ["U_A"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[services.billing]\ntoken_env = "T"\nactions = ["send_refnd"]\n',
            (
                "signoff.toml:5: services.billing.actions: 'send_refnd' is not an action of this "
                "policy ([actions.send_refnd]), so nobody could approve it; did you mean "
                "'send_refund'?"
            ),
        ),
        (
            '[services.billing]\ntokenenv = "T"\n',
            "signoff.toml:4: services.billing.tokenenv: unknown key; did you mean 'token_env'?",
        ),
        (
            "[services.billing]\nactions = []\n",
            (
                'signoff.toml:3: services.billing: needs token_env = "ENV_VAR": the environment '
                "variable that holds its bearer token (the token itself never goes in the policy "
                "file)"
            ),
        ),
        (
            '[services.billing]\ntoken_env = "sk-live-0123456789abcdef"\n',
            (
                "signoff.toml:4: services.billing.token_env: must be the name of an environment "
                'variable, like "SIGNOFF_SERVICE_BILLING_TOKEN", got (hidden); it looks like a token '
                "itself: put the token in the environment and its variable's name here"
            ),
        ),
        (
            '[services.a]\ntoken_env = "T"\n[services.b]\ntoken_env = "T"\n',
            (
                "signoff.toml:6: services.b.token_env: T is the token of services.a already; each "
                "service needs a token of its own (the token names the service)"
            ),
        ),
        (
            '[services."billing.eu"]\ntoken_env = "T"\n',
            (
                'signoff.toml:3: services."billing.eu": service names are 1 to 40 lowercase '
                "letters, digits, '_' or '-', starting with a letter or digit"
            ),
        ),
        (
            '[services.billing]\ntoken_env = "T"\nchannel = "#a b"\n',
            (
                "signoff.toml:5: services.billing.channel: must be a channel id like C0123ABCD, "
                "got '#a b'"
            ),
        ),
    ],
)
def test_a_wrong_services_section_is_refused_with_its_line_and_key(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(ACTION + text)
    assert e.value.message == message


def test_a_service_whose_token_is_not_set_is_warned_about_and_cannot_authenticate(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="signoff.external"):
        api.kit.app.external.load_tokens({"TEST_OPS_TOKEN": "ops-token-0123456789abcdef-xyz"})
    assert any(
        "service billing cannot authenticate: TEST_BILLING_TOKEN is not set" in r.getMessage()
        for r in caplog.records
    )
    assert api.kit.app.external.authenticate("") is None
    assert api.kit.app.external.authenticate("ops-token-0123456789abcdef-xyz") == "ops-bot"


async def test_an_auto_approval_rule_decides_at_once_and_queues_the_webhook(api: Api) -> None:
    status, body = await api.post(
        {
            "action": "send_refund",
            "args": {**REFUND, "amount": 4},
            "requester": "U_CAROL",
            "callback_url": "http://127.0.0.1:9/hook",
        }
    )
    assert status == 202
    assert (body["status"], body["approved"]) == ("approved", True)
    assert body["decision"]["by"] == ["rule:small refunds"]
    assert await api.kit.pending_jobs("webhook") == 1


async def test_secret_fields_are_hidden_from_the_service_and_the_audit_log(api: Api) -> None:
    status, body = await api.post(
        {
            "action": "charge_card",
            "args": {"card_number": "4111111111111111", "amount": 12},
            "requester": "U_CAROL",
        }
    )
    assert status == 202
    assert body["args"]["amount"] == 12
    assert "4111111111111111" not in str(body)
    assert "redacted" in body["args"]["card_number"]
    entries = await api.kit.audit()
    assert entries and "4111111111111111" not in str(entries)
    assert "4111111111111111" not in str(await api.kit.rows(sa.select(t.runs)))


async def test_an_expired_request_is_not_approved_and_its_service_is_told(api: Api) -> None:
    status, body = await api.post(
        {
            "action": "delete_row",
            "args": {"table": "users", "row_id": "7"},
            "requester": "U_CAROL",
            "callback_url": "https://ops.example/hook",
        },
        token="ops-token-0123456789abcdef-xyz",
    )
    assert status == 202 and body["status"] == "pending"
    api.kit.clock.advance(2 * 86400)
    assert (await api.kit.app.sweep())["expired"] == 1
    status, seen = await api.get(
        f"/api/approvals/{body['approval_id']}", token="ops-token-0123456789abcdef-xyz"
    )
    assert (seen["status"], seen["approved"]) == ("expired", False)
    assert seen["decision"]["by"] == ["sweep"]
    assert await api.kit.pending_jobs("webhook") == 1
    (expired,) = await api.kit.audit("expired")
    assert expired["data"]["service"] == "ops-bot"
