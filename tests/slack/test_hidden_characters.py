"""Hidden and look-alike characters are shown, marked, wherever a person reads a value: a
zero-width space, a Unicode tag character, a bidirectional control, a Cyrillic letter inside a
Latin email address. The card shows each as `⟦U+…⟧` and warns which fields hold them; so do the
Full payload modal, the Edit modal (which will not hide them again in a text input) and the
notices in the card's thread. Through the real Bolt app and signed clicks from the fake Slack."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.approvals.models import Approval
from bot.sandbox.processes import CHANNEL
from bot.sandbox.workspace import Message
from bot.slack.payloads import APPROVE, EDIT, PAYLOAD
from tests.kit.scenario import Scenario, running_scenario

BOB = "U0BOB"
POLICY = """
[actions.email_customer]
title = "Email {to}"
tier = "high"
approvers = ["@approvers"]
editable = ["subject", "body"]

[services.support]
token_env = "TEST_SUPPORT_TOKEN"
actions = ["email_customer"]
"""
TO = "john@ex\u0430mple.com"  # a Cyrillic "а" in the domain
SHOWN_TO = "john@ex⟦Cyrillic U+0430⟧mple.com"
EMAIL = {
    "to": TO,
    "subject": "Your refund\u200b",  # a zero-width space
    "body": "We refund 18.16\U000e0049\U000e0067\U000e006e. Total: \u202e001",  # tags, bidi
}


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path, POLICY) as scenario:
        yield scenario


async def asked(bot: Scenario) -> tuple[Approval, Message]:
    found = await bot.signoff.external.request(
        service="support", action="email_customer", args=EMAIL, requester="support"
    )
    await bot.settle()
    (approval,) = await bot.signoff.thread_approvals(found.approval_id)
    return approval, bot.card(approval)


def shown(blocks: object) -> str:
    return json.dumps(blocks, ensure_ascii=False)


async def test_the_card_shows_each_hidden_or_look_alike_character_and_warns(
    bot: Scenario,
) -> None:
    _, card = await asked(bot)
    text = shown(card.blocks)
    assert f"Email {SHOWN_TO}" in text  # the header
    assert SHOWN_TO in card.text  # the notification
    assert "Your refund⟦U+200B⟧" in text
    assert "18.16⟦U+E0049⟧⟦U+E0067⟧⟦U+E006E⟧" in text and "⟦U+202E⟧001" in text
    assert TO not in text and "\u200b" not in text and "\u202e" not in text
    (warning,) = [
        e["text"]
        for b in card.blocks
        if b["type"] == "context"
        for e in b["elements"]
        if "Hidden or look-alike" in e["text"]
    ]
    assert warning.startswith(
        "⚠️ Hidden or look-alike characters in *title* (letters of another script), "
        "*body* (hidden characters), *subject* (hidden characters), "
        "*to* (letters of another script):"
    )


async def test_the_payload_and_edit_modals_show_them_marked(bot: Scenario) -> None:
    _, card = await asked(bot)
    await bot.slack.click("bob", CHANNEL, card.ts, PAYLOAD)
    [payload] = await bot.slack.wait_for(lambda s: s.workspace.views.get(BOB))
    assert SHOWN_TO in shown(payload.spec["blocks"]) and TO not in shown(payload.spec)

    await bot.slack.click("bob", CHANNEL, card.ts, EDIT)
    edit = await bot.slack.wait_for(
        lambda s: [v for v in s.workspace.views.get(BOB, []) if v is not payload] or None
    )
    blocks = shown(edit[-1].spec["blocks"])
    assert "*subject* holds hidden or look-alike characters, marked ⟦…⟧: Your refund⟦U+200B⟧" in (
        blocks
    )
    assert "\u200b" not in blocks


async def test_the_thread_notice_shows_them_marked(bot: Scenario) -> None:
    approval, card = await asked(bot)
    await bot.slack.click("bob", CHANNEL, card.ts, APPROVE)
    await bot.settle()
    decided = await bot.signoff.get(approval.id)
    channel = bot.slack.workspace.channels[CHANNEL]
    replies = [channel.messages[ts].text for ts in bot.card(decided).replies]
    assert replies and any(SHOWN_TO in r for r in replies)
    assert all(TO not in r for r in replies)
