"""A captured signed `/agent run`, replayed inside Slack's five-minute signature window, starts
nothing more: the signature is valid each time, so the request itself is what is remembered."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa

from bot.approvals import tables as t
from bot.sandbox import slash_command
from bot.sandbox.processes import CHANNEL
from tests.kit.scenario import running_scenario

CAROL = "U0CAROL"
"""May start refunds (the scenario policy)."""


async def test_one_signed_agent_run_replayed_five_times_starts_one_run(tmp_path: Path) -> None:
    async with running_scenario(tmp_path) as bot:
        request = slash_command(
            text="run refund customer_id=C-replay order_id=o-1 amount=12.50 reason=damaged",
            user_id=CAROL,
            channel_id=CHANNEL,
            trigger_id=bot.slack.triggers.issue(CAROL),
            response_url=bot.slack.responses.issue(CHANNEL, CAROL, None),
        )
        timestamp = int(bot.slack.driver.signer.clock())
        answers = [await bot.send(request, timestamp=timestamp) for _ in range(5)]
        assert all(a.ok for a in answers), answers  # each one is signed and in the window

        async def told() -> list[str]:
            """Each command's one answer, through its response_url once the run has got as far
            as it goes (the ack is empty): five of them."""
            for _ in range(200):
                said = [e.text for e in bot.slack.workspace.ephemerals.get(CAROL, [])]
                if len(said) >= len(answers):
                    return said
                await asyncio.sleep(0.05)
            return said

        await bot.settle()
        await bot.signoff.link_audit()

        async with bot.signoff.db.read() as conn:
            runs = (await conn.execute(sa.select(t.runs.c.thread_id))).scalars().all()
            started = (
                await conn.execute(
                    sa.select(sa.func.count()).where(t.audit_events.c.kind == "run_started")
                )
            ).scalar()
        assert len(runs) == 1 and started == 1, runs
        (thread_id,) = runs
        texts = await told()
        assert sum("Started" in text for text in texts) == 1, texts
        replays = [text for text in texts if "already started" in text]
        assert len(replays) == 4 and all(thread_id in text for text in replays), texts
        approvals = await bot.signoff.thread_approvals(thread_id)
        assert len(approvals) == 1  # one card, one approval: nothing new from the replays
