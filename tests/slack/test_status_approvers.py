"""`/agent status`, App Home and the card agree on who may approve: a policy group is named by its members,
and the requester, who may not approve their own request, is left out of both (the card said
"@Alice or @Bob" while the status said "@support or @finance", Carol's own group among them)."""

from __future__ import annotations

import re
from pathlib import Path

from bot.sandbox.processes import CHANNEL
from tests.kit.e2e import text_of
from tests.kit.scenario import running_scenario
from tests.slack.test_card_links import home_of

POLICY = """
[groups]
support = ["U0CAROL"]
finance = ["U0ALICE", "U0BOB"]

[workflows.refund]
starters = ["U0CAROL"]

[actions.send_refund]
title = "Send a refund"
tier = "high"
approvers = ["@support", "@finance"]
"""
ALICE = "U0ALICE"


async def test_status_names_the_approvers_the_card_names(tmp_path: Path) -> None:
    async with running_scenario(tmp_path, POLICY) as bot:
        _, card = await bot.refund("C-who", 42.5)
        assert "<@U0ALICE> or <@U0BOB>" in text_of(card.blocks)  # Carol asked: not her

        assert (await bot.slack.command("alice", CHANNEL, "status")).ok
        [answer] = await bot.slack.wait_for(
            lambda s: [
                e for e in s.workspace.ephemerals.get(ALICE, []) if e.source == "response_url"
            ]
        )
        said = text_of(answer.blocks)
        waits = re.search(r"needs 1 more approval from (.*)", said)
        assert waits is not None, said
        assert waits.group(1).split(" ·")[0] == "<@U0ALICE> or <@U0BOB>"
        assert "@support" not in said and "@finance" not in said

        home = await home_of(bot, ALICE)  # it waits on her: Home lists it, named the same way
        waits = re.search(r"needs 1 more approval from (.*)", home)
        assert waits is not None, home
        assert waits.group(1).split(" ·")[0] == "<@U0ALICE> or <@U0BOB>"
