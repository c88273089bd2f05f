"""Approvers are pinged: the card mentions them (users, Slack user groups, the members of a
policy's static group), the policy can send each a copy in a DM that is updated in place like
the channel card, and the requester hears the outcome."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.approvals.errors import PolicyError
from bot.approvals.policy import load_policy
from bot.slack.payloads import APPROVE
from tests.kit.e2e import action_ids, text_of
from tests.kit.scenario import POLICY, running_scenario

ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"


async def test_the_card_mentions_the_slack_user_group_so_its_members_are_notified(
    tmp_path: Path,
) -> None:
    async with running_scenario(tmp_path) as bot:
        _, card = await bot.refund("C-ping")
        assert "<!subteam^S0APPROVERS>" in text_of(card.blocks)
        assert "<!subteam^S0APPROVERS>" in card.text  # notifications read the fallback text
        assert "To decide by <!date^" in card.text  # who, and by when (screen readers)
        assert not bot.slack.workspace.im(ALICE).messages  # "channel" is the default


async def test_a_static_group_mentions_each_member_and_a_user_entry_the_user(
    tmp_path: Path,
) -> None:
    policy = POLICY.replace('approvers = ["@approvers"]', 'approvers = ["@leads", "U0DAVE"]')
    policy += '\n[groups]\nleads = ["U0ALICE", "U0BOB"]\n'
    async with running_scenario(tmp_path, policy) as bot:
        _, card = await bot.refund("C-static")
        for user in (ALICE, BOB, "U0DAVE"):
            assert f"<@{user}>" in card.text
        assert "@leads" not in card.text  # Slack knows no such group: it would ping nobody


async def test_notify_both_sends_each_approver_a_dm_card_updated_in_place_and_tells_the_requester(
    tmp_path: Path,
) -> None:
    policy = POLICY.replace('expire_after = "24h"', 'expire_after = "24h"\nnotify = "both"')
    async with running_scenario(tmp_path, policy) as bot:
        approval, card = await bot.refund("C-dm")
        assert "<!subteam^S0APPROVERS>" in card.text
        copies = {}
        for user in (ALICE, BOB):
            (dm_card,) = bot.slack.workspace.im(user).messages.values()
            assert APPROVE in action_ids({"blocks": dm_card.blocks})
            copies[user] = dm_card
        assert not bot.slack.workspace.im(CAROL).messages  # the requester is not an approver

        # Bob approves from his DM: it counts, and every copy shows the decision in place
        answer = await bot.slack.click("bob", copies[BOB].channel, copies[BOB].ts, APPROVE)
        assert answer.ok
        assert (await bot.signoff.get(approval.id)).status == "approved"
        await bot.settle()
        for user in (ALICE, BOB):
            (dm_card,) = bot.slack.workspace.im(user).messages.values()
            assert dm_card.ts == copies[user].ts and dm_card.edited_ts is not None
            assert action_ids({"blocks": dm_card.blocks}) == []
        updated = bot.card(await bot.signoff.get(approval.id))
        assert action_ids({"blocks": updated.blocks}) == []
        (told,) = bot.slack.workspace.im(CAROL).messages.values()  # the requester hears it
        assert "approved" in told.text.lower() and "See the card" in told.text


def test_the_policy_refuses_an_unknown_notify_mode(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY.replace('expire_after = "24h"', 'expire_after = "24h"\nnotify = "sms"'))
    with pytest.raises(PolicyError) as e:
        load_policy(path)
    assert str(e.value).endswith(
        "actions.send_refund.notify: must be one of channel, dm, both, got 'sms'"
    )


async def test_a_deactivated_approver_s_dm_is_given_up_and_holds_back_no_one_else(
    tmp_path: Path,
) -> None:
    """Slack refuses a DM with a deactivated person (`user_disabled`) for good: their copy is
    recorded as not delivered, and the other approvers' copies, the decision's reply and the
    requester's DM go out all the same, each once; nothing is left to retry."""
    policy = POLICY.replace('expire_after = "24h"', 'expire_after = "24h"\nnotify = "both"')
    async with running_scenario(tmp_path, policy) as bot:
        bot.slack.workspace.users[ALICE].deleted = True  # sorted first: tried before Bob
        approval, card = await bot.refund("C-gone")
        assert bot.slack.calls_to("conversations.open")[0].response["error"] == "user_disabled"
        (bob_copy,) = bot.slack.workspace.im(BOB).messages.values()
        assert APPROVE in action_ids({"blocks": bob_copy.blocks})

        answer = await bot.slack.click("bob", bob_copy.channel, bob_copy.ts, APPROVE)
        assert answer.ok
        await bot.settle()
        (bob_copy,) = bot.slack.workspace.im(BOB).messages.values()
        assert action_ids({"blocks": bob_copy.blocks}) == []  # updated in place
        assert bot.card(approval).replies, "the decision's reply went out"
        (told,) = bot.slack.workspace.im(CAROL).messages.values()
        assert "approved" in told.text.lower()

        given_up = await bot.signoff.undelivered(approval.thread_id)
        assert {(u.event, u.error, u.method) for u in given_up} == {
            ("approval_requested", "user_disabled", "conversations.open"),
            ("decided", "user_disabled", "conversations.open"),
        }
        assert await bot.signoff.jobs.pending_of({u.job_id for u in given_up}) == set()
        assert sum(1 for m in bot.slack.workspace.channels[card.channel].messages.values()
                   if not m.is_reply) == 1  # fmt: skip


async def test_notify_dm_pings_each_approver_in_a_dm_and_not_the_channel(tmp_path: Path) -> None:
    """`notify = "dm"`: the channel card names the approvers without mentioning them (no one is
    pinged there twice), and each approver gets the card in a DM, with its buttons."""
    policy = POLICY.replace('expire_after = "24h"', 'expire_after = "24h"\nnotify = "dm"')
    async with running_scenario(tmp_path, policy) as bot:
        _, card = await bot.refund("C-dm-only")
        assert "<!subteam^" not in card.text and "<!subteam^" not in text_of(card.blocks)
        assert "@approvers" in text_of(card.blocks)
        for user in (ALICE, BOB):
            (dm_card,) = bot.slack.workspace.im(user).messages.values()
            assert APPROVE in action_ids({"blocks": dm_card.blocks})
