"""A modal that Slack will not open tells the person what happened and to click again; the
click itself is acknowledged in time and nothing is recorded.

Slack refuses `views.open` when the trigger_id has expired (about 3 s after the click: here the
stand-in makes `views.open` slow, so the trigger really expires) or when it refuses the view."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.sandbox import limits
from bot.sandbox.processes import CHANNEL
from bot.slack.payloads import EDIT, PAYLOAD, REJECT
from tests.kit.scenario import Scenario, running_scenario

ALICE = "U0ALICE"


@pytest.fixture
async def bot(tmp_path: Path) -> AsyncIterator[Scenario]:
    async with running_scenario(tmp_path) as scenario:
        yield scenario


async def test_a_modal_opened_too_late_for_its_trigger_says_so_and_to_click_again(
    bot: Scenario,
) -> None:
    approval, card = await bot.refund("C-expired-trigger")
    bot.slack.delay("views.open", limits.TRIGGER_ID_TTL + 0.5)

    answer = await bot.slack.click("alice", CHANNEL, card.ts, REJECT)

    assert answer.status == 200 and not answer.late
    [told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE), timeout=30)
    [opened] = bot.slack.calls_to("views.open")
    assert opened.response == {"ok": False, "error": "expired_trigger_id"}
    assert told.text == (
        "⚠️ The Reject form could not open (Slack only lets a form open within 3 seconds of "
        "the click, and that passed). Nothing was changed. Click Reject again."
    )
    assert not bot.slack.workspace.views.get(ALICE)
    assert (await bot.signoff.get(approval.id)).votes == ()


@pytest.mark.parametrize(("button", "form"), [(EDIT, "Edit"), (PAYLOAD, "Full payload")])
async def test_a_modal_slack_refuses_tells_the_person_what_slack_answered(
    bot: Scenario, button: str, form: str
) -> None:
    _, card = await bot.refund(f"C-refused-{form[:4]}")
    bot.slack.fail_next("views.open", error="view_too_large")

    answer = await bot.slack.click("alice", CHANNEL, card.ts, button)

    assert answer.status == 200 and not answer.late
    [told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE), timeout=30)
    assert told.text == (
        f"⚠️ The {form} form could not open (Slack answered `view_too_large`). "
        f"Nothing was changed. Click {form} again."
    )


async def test_after_slack_rate_limited_a_modal_the_next_click_is_told_without_asking_again(
    bot: Scenario,
) -> None:
    """Slack refused a `views.open` for its rate limit, with a Retry-After longer than a click
    can wait: the next click is told so at once, and Slack is not asked again before then."""
    _, card = await bot.refund("C-limited-modal")
    bot.slack.fail_next("views.open", status=429, retry_after=30)
    told = (
        "⚠️ The Reject form could not open (Slack asked signoff to wait before it opens more "
        "forms). Nothing was changed. Click Reject again."
    )

    first = await bot.slack.click("alice", CHANNEL, card.ts, REJECT)
    assert first.status == 200 and not first.late
    [alice_told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get(ALICE), timeout=30)
    assert alice_told.text == told

    second = await bot.slack.click("bob", CHANNEL, card.ts, REJECT)
    assert second.status == 200 and not second.late
    [bob_told] = await bot.slack.wait_for(lambda s: s.workspace.ephemerals.get("U0BOB"), timeout=30)
    assert bob_told.text == told
    assert [c.status for c in bot.slack.calls_to("views.open")] == [429]
    assert not bot.slack.workspace.views.get("U0BOB")
