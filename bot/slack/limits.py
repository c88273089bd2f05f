"""Slack's limits, stated once for the Slack edge, and signoff's own budgets within them.

Lengths are in UTF-16 code units, as Slack counts them (`mrkdwn.slack_len`). The renderers fit
every text and cap every count with these; nothing else in `bot.slack` states a Slack number.

The Slack stand-in (`bot.sandbox.limits`) states the same numbers for itself: the layers keep
the stand-in and the bot apart (neither imports the other), so each has its own copy.
"""

from __future__ import annotations

from typing import Final

# ---- Slack's limits ---------------------------------------------------------------------------

# Messages: https://api.slack.com/methods/chat.postMessage (text) and
# https://api.slack.com/reference/block-kit/blocks ("up to 50 blocks in each message").
MESSAGE_BLOCKS_MAX: Final = 50
"""Blocks in one message."""
MESSAGE_BLOCKS_TEXT_MAX: Final = 12_000
"""The text of all of a message's blocks together: past it Slack refuses the message
(`msg_blocks_too_long`, documented without a figure; about 12,000 characters, as Slack's staff
have put it)."""

# Views: https://api.slack.com/reference/surfaces/views
VIEW_BLOCKS_MAX: Final = 100
"""Blocks in a modal or the Home tab."""
VIEW_BYTES_MAX: Final = 250_000
"""A view's JSON, in bytes of UTF-8 (`views.open` answers `view_too_large` past it)."""
MODAL_TITLE_MAX: Final = 24
"""A modal's `title`."""
MODAL_BUTTON_MAX: Final = 24
"""A modal's `submit` and `close` labels."""
PRIVATE_METADATA_MAX: Final = 3000
"""A view's `private_metadata`."""
CALLBACK_ID_MAX: Final = 255
"""A view's `callback_id`."""

# Blocks: https://api.slack.com/reference/block-kit/blocks
BLOCK_ID_MAX: Final = 255
"""Any block's `block_id`."""
SECTION_TEXT_MAX: Final = 3000
"""A section's `text`."""
FIELDS_MAX: Final = 10
"""Items in a section's `fields`."""
FIELD_TEXT_MAX: Final = 2000
"""Each item of a section's `fields`."""
HEADER_TEXT_MAX: Final = 150
"""A header's text."""
CONTEXT_ELEMENTS_MAX: Final = 10
"""Elements in a context block."""
ACTIONS_ELEMENTS_MAX: Final = 25
"""Elements in an actions block."""
INPUT_LABEL_MAX: Final = 2000
"""An input block's `label`."""
INPUT_HINT_MAX: Final = 2000
"""An input block's `hint`."""

# Block elements: https://api.slack.com/reference/block-kit/block-elements
ACTION_ID_MAX: Final = 255
"""Any interactive element's `action_id`."""
BUTTON_TEXT_MAX: Final = 75
"""A button's label."""
BUTTON_VALUE_MAX: Final = 2000
"""A button's `value`, which comes back in `block_actions`."""
URL_MAX: Final = 3000
"""A link button's `url`."""
PLACEHOLDER_MAX: Final = 150
"""An input element's `placeholder`."""
INPUT_VALUE_MAX: Final = 3000
"""A plain_text_input's `max_length` (and so its `initial_value`)."""

# Composition objects: https://api.slack.com/reference/block-kit/composition-objects
CONFIRM_TITLE_MAX: Final = 100
"""A confirm dialog's `title`."""
CONFIRM_TEXT_MAX: Final = 300
"""A confirm dialog's `text`."""
CONFIRM_BUTTON_MAX: Final = 30
"""A confirm dialog's `confirm` and `deny` labels."""
OPTION_TEXT_MAX: Final = 75
"""An option's `text`."""
OPTION_VALUE_MAX: Final = 150
"""An option's `value`."""
OPTIONS_MAX: Final = 100
"""A static select's `options`."""

# ---- signoff's own budgets, within Slack's ----------------------------------------------------

TEXT_MAX: Final = 3000
"""A message's top-level `text` (the notification and fallback). Slack takes 40,000; we keep
it to what a notification can show."""
CARD_FIELDS_MAX: Final = 20
"""Payload fields shown on a card; the rest are in the Full payload modal."""
CARD_VALUE_MAX: Final = 300
"""Characters of one payload value on a card."""
CARD_KEY_MAX: Final = 80
"""Characters of one payload key on a card."""
LIST_TITLE_MAX: Final = 200
"""Characters of an approval's title in a list (`/agent status`, Home)."""
CONTEXT_TEXT_MAX: Final = 2000
"""A context block's text (Slack takes a text object of 3000)."""
ERROR_MAX: Final = 1500
"""Characters of an error or a note quoted in a reply."""
HISTORY_LINES_MAX: Final = 10
"""Checkpoints listed by `/agent status THREAD_ID`."""
PAYLOAD_CHUNK_MAX: Final = 2900
"""Characters of one section of the Full payload modal."""

# ---- Slack's rate limits: https://api.slack.com/apis/rate-limits ------------------------------

POST_MESSAGE_WINDOW: Final = (3, 3.0)
"""`chat.postMessage` to one channel: "1 message per second per channel", with a short burst;
read strictly, at most 3 in any 3 s."""
TIER_2: Final = 20
TIER_3: Final = 50
TIER_4: Final = 100
METHOD_TIERS: Final = {
    "chat.getPermalink": TIER_4,  # a "special" method; counted as Tier 4
    "chat.update": TIER_3,
    "conversations.history": TIER_3,
    "conversations.open": TIER_3,
    "conversations.replies": TIER_3,
    "usergroups.list": TIER_2,
    "usergroups.users.list": TIER_2,
    "views.open": TIER_4,
    "views.publish": TIER_4,
}
"""Calls a minute each method the bot calls in bulk allows (its tier's floor, from the
method's reference page); a method not named is taken as Tier 3."""


def rate_window(key: str) -> tuple[int, float]:
    """`(calls, seconds)` Slack allows for a pacing key: `post:CHANNEL` (a channel's posts) or
    a method's name (its tier, per minute)."""
    if key.startswith("post:"):
        return POST_MESSAGE_WINDOW
    return METHOD_TIERS.get(key, TIER_3), 60.0
