"""Clicking the buttons of one call on an agent turn's card (several calls, each with its own
buttons, on one message)."""

from __future__ import annotations

from bot.sandbox import SlackRequest, block_actions
from bot.sandbox.workspace import Message
from tests.kit.scenario import Scenario


def click_call(
    bot: Scenario, user: str, card: Message, position: int, action_id: str
) -> SlackRequest:
    """What Slack sends when `user` clicks `action_id` among the buttons of the turn's call at
    `position` (from 1), not yet signed."""
    block_id = f"signoff.call.{position}"
    for block in card.blocks:
        if block.get("block_id") == block_id:
            break
    else:
        raise LookupError(f"the card has no buttons for call {position}")
    [element] = [e for e in block["elements"] if e["action_id"] == action_id]
    return block_actions(
        action_id=action_id, value=element.get("value"), block_id=block_id,
        user_id=user, channel_id=card.channel, message=card.to_api(),
        trigger_id=bot.slack.triggers.issue(user),
        response_url=bot.slack.responses.issue(card.channel, user, card.ts),
    )  # fmt: skip
