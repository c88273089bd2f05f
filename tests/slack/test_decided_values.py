"""Every view shows the values that were decided: after Alice edits a refund to 40.00 and
approves it, App Home names 40.00; while a second approval is awaited, `/agent status` and
the reminder in the card's thread name 40.00, never the
42.50 first proposed. Through the real Bolt app: a signed Edit click and modal submission,
`app_home_opened`, the slash command."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox.processes import CHANNEL
from tests.kit.e2e import text_of
from tests.kit.scenario import running_scenario
from tests.slack.test_card_links import home_of
from tests.slack.test_quorum_edits import POLICY, edit

BOB, CAROL = "U0BOB", "U0CAROL"


async def test_home_and_status_show_the_edited_values_once_decided(tmp_path: Path) -> None:
    async with running_scenario(tmp_path) as bot:  # one approval decides
        approval, card = await bot.refund("C-home", 42.5)
        assert await edit(bot, "alice", card.ts, "40") == {}
        await bot.settle()
        assert (await bot.signoff.get(approval.id)).status == "approved"

        home = await home_of(bot, CAROL)
        assert "Refund 40.00 to C-home" in home and "42.50" not in home


QUORUM = POLICY.replace('expire_after = "24h"', 'expire_after = "24h"\nremind_after = "1h"')


async def test_status_and_the_reminder_show_the_edited_values_while_pending(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path, QUORUM) as bot:  # two approvals decide
        approval, card = await bot.refund("C-remind", 42.5)
        assert await edit(bot, "alice", card.ts, "40") == {}
        await bot.settle()

        assert (await bot.slack.command("bob", CHANNEL, "status")).ok
        [answer] = await bot.slack.wait_for(
            lambda s: [e for e in s.workspace.ephemerals.get(BOB, []) if e.source == "response_url"]
        )
        shown = text_of(answer.blocks)
        assert "Refund 40.00 to C-remind" in shown and "42.50" not in shown

        async with bot.signoff.db.transaction() as conn:  # the reminder is due now
            await conn.execute(sa.update(t.approvals).values(remind_at=0))
        assert (await bot.signoff.sweep())["reminded"] == 1
        await bot.settle()
        channel = bot.slack.workspace.channels[CHANNEL]
        replies = [channel.messages[ts].text for ts in bot.card(approval).replies]
        (reminder,) = [r for r in replies if r.startswith("⏰ Reminder")]
        assert "Refund 40.00 to C-remind" in reminder and "42.50" not in reminder
