"""Slack's documented limits, in one place.

The stand-in enforces these the way Slack does (refusing the call with Slack's error code), and
the bot's card builders can import them to stay inside. Every number is from Slack's Block Kit
and Web API reference; lengths are counted in UTF-16 code units (`validation.slack_length`).
"""

from __future__ import annotations

from typing import Final

# Messages (chat.postMessage, chat.update, chat.postEphemeral, response_url)
MAX_MESSAGE_TEXT: Final = 40_000
"""`text` of a new message: chat.postMessage keeps the first 40,000 characters of a longer one
("truncating content longer than 40,000 characters", its method page); other calls answer
`msg_too_long` beyond it."""
MAX_UPDATE_TEXT: Final = 4_000
"""`text` of chat.update: Slack answers `msg_too_long` beyond 4,000 characters (its method page:
"The message text exceeds the allowed limit of 4,000 characters")."""
MAX_BLOCKS_TEXT: Final = 12_000
"""The text of all of a message's blocks together: past it Slack answers `msg_blocks_too_long`
(documented on chat.postMessage and chat.update without a figure; about 12,000 characters, as
Slack's staff have put it)."""
MAX_MESSAGE_BLOCKS: Final = 50
"""Blocks in one message."""

# Views (views.open, views.update, views.push, views.publish)
MAX_VIEW_BLOCKS: Final = 100
"""Blocks in one modal or Home tab."""
MAX_MODAL_TITLE: Final = 24
"""A modal's `title`."""
MAX_MODAL_BUTTON_TEXT: Final = 24
"""A modal's `submit` and `close` labels."""
MAX_PRIVATE_METADATA: Final = 3000
"""A view's `private_metadata`."""
MAX_CALLBACK_ID: Final = 255
"""A view's `callback_id`."""
MAX_EXTERNAL_ID: Final = 255
"""A view's `external_id`."""
MAX_VIEW_STACK: Final = 3
"""Views one modal stack may hold (views.push past it: `push_limit_reached`)."""

# Text objects
MAX_TEXT_OBJECT: Final = 3000
"""A text object's `text`, where the place it goes says no less (a context block's texts)."""

# Blocks
BLOCK_TYPES: Final = frozenset(
    {"actions", "context", "divider", "file", "header", "image", "input", "markdown"}
    | {"rich_text", "section", "video"}
)
"""The block types Slack knows; any other is refused."""
BLOCK_PROPERTIES: Final[dict[str, frozenset[str]]] = {
    "actions": frozenset({"type", "block_id", "elements"}),
    "context": frozenset({"type", "block_id", "elements"}),
    "divider": frozenset({"type", "block_id"}),
    "header": frozenset({"type", "block_id", "text"}),
    "image": frozenset({"type", "block_id", "image_url", "slack_file", "alt_text", "title"}),
    "input": frozenset(
        {"type", "block_id", "label", "element", "hint", "optional", "dispatch_action"}
    ),
    "markdown": frozenset({"type", "block_id", "text"}),
    "rich_text": frozenset({"type", "block_id", "elements"}),
    "section": frozenset({"type", "block_id", "text", "fields", "accessory", "expand"}),
}
"""The properties each block type takes, as its Block Kit reference page lists them: Slack
refuses any other ("invalid additional property"). Types not listed are not checked."""
MAX_BLOCK_ID: Final = 255
"""Any block's `block_id`."""
MAX_SECTION_TEXT: Final = 3000
"""A section block's `text`."""
MAX_SECTION_FIELDS: Final = 10
"""Items in a section block's `fields`."""
MAX_SECTION_FIELD_TEXT: Final = 2000
"""Each item of a section block's `fields`."""
MAX_HEADER_TEXT: Final = 150
"""A header block's text."""
MAX_CONTEXT_ELEMENTS: Final = 10
"""Elements in a context block."""
MAX_ACTIONS_ELEMENTS: Final = 25
"""Elements in an actions block."""
MAX_INPUT_LABEL: Final = 2000
"""An input block's `label`."""
MAX_INPUT_HINT: Final = 2000
"""An input block's `hint`."""

# Block elements
ELEMENT_TYPES: Final = frozenset(
    {"button", "checkboxes", "datepicker", "datetimepicker", "email_text_input", "file_input"}
    | {"image", "multi_channels_select", "multi_conversations_select", "multi_external_select"}
    | {"multi_static_select", "multi_users_select", "number_input", "overflow"}
    | {"plain_text_input", "radio_buttons", "rich_text_input", "channels_select"}
    | {"conversations_select", "external_select", "static_select", "users_select"}
    | {"timepicker", "url_text_input", "workflow_button"}
)
"""The block element types Slack knows; any other is refused."""
_SELECT: Final = frozenset({"type", "action_id", "confirm", "focus_on_load", "placeholder"})
ELEMENT_PROPERTIES: Final[dict[str, frozenset[str]]] = {
    "button": frozenset(
        {"type", "text", "action_id", "url", "value", "style", "confirm", "accessibility_label"}
    ),
    "checkboxes": frozenset(
        {"type", "action_id", "options", "initial_options", "confirm", "focus_on_load"}
    ),
    "datepicker": _SELECT | {"initial_date"},
    "image": frozenset({"type", "image_url", "slack_file", "alt_text"}),
    "multi_static_select": _SELECT
    | {"options", "option_groups", "initial_options", "max_selected_items"},
    "overflow": frozenset({"type", "action_id", "options", "confirm"}),
    "plain_text_input": frozenset(
        {"type", "action_id", "initial_value", "multiline", "min_length", "max_length"}
        | {"dispatch_action_config", "focus_on_load", "placeholder"}
    ),
    "radio_buttons": frozenset(
        {"type", "action_id", "options", "initial_option", "confirm", "focus_on_load"}
    ),
    "static_select": _SELECT | {"options", "option_groups", "initial_option"},
    "users_select": _SELECT | {"initial_user"},
}
"""The properties each element type takes (its Block Kit reference page); types not listed
are not checked."""
TEXT_PROPERTIES: Final[dict[str, frozenset[str]]] = {
    "plain_text": frozenset({"type", "text", "emoji"}),
    "mrkdwn": frozenset({"type", "text", "verbatim"}),
}
"""A text object's properties: `emoji` is plain_text's alone, `verbatim` mrkdwn's."""
OPTION_ELEMENTS: Final = frozenset({"checkboxes", "overflow", "radio_buttons", "static_select"})
"""Elements whose `options` are checked here (`MAX_OPTION_TEXT`, `MAX_OPTION_VALUE`)."""
MAX_ACTION_ID: Final = 255
"""Any interactive element's `action_id`."""
MAX_BUTTON_TEXT: Final = 75
"""A button's label."""
MAX_BUTTON_VALUE: Final = 2000
"""A button's `value` (what comes back in block_actions)."""
MAX_BUTTON_URL: Final = 3000
"""A link button's `url`."""
MAX_PLACEHOLDER: Final = 150
"""An input element's `placeholder`."""
MAX_PLAIN_TEXT_INPUT: Final = 3000
"""A plain_text_input's `max_length` and `initial_value`."""
MAX_CONFIRM_TITLE: Final = 100
"""A confirm dialog's `title`."""
MAX_CONFIRM_TEXT: Final = 300
"""A confirm dialog's `text`."""
MAX_CONFIRM_BUTTON: Final = 30
"""A confirm dialog's `confirm` and `deny` labels."""
MAX_OPTION_TEXT: Final = 75
"""An option's `text`."""
MAX_OPTION_VALUE: Final = 150
"""An option's `value`."""
BUTTON_STYLES: Final = frozenset({"primary", "danger"})
"""The only `style` values a button may have."""

# Interactions and timing (seconds)
ACK_DEADLINE: Final = 3.0
"""Slack shows an error if an app has not answered an interaction within this."""
TRIGGER_ID_TTL: Final = 3.0
"""A `trigger_id` can open a modal for about this long (then `expired_trigger_id`)."""
RESPONSE_URL_TTL: Final = 30 * 60.0
"""A `response_url` is accepted for this long."""
RESPONSE_URL_MAX_USES: Final = 5
"""A `response_url` is accepted this many times."""
SIGNATURE_MAX_AGE: Final = 5 * 60
"""A signed request older than this is refused (replay protection)."""
POST_MESSAGE_INTERVAL: Final = 1.0
"""chat.postMessage allows about one message per second per channel (bursts tolerated)."""
POST_MESSAGE_BURST: Final = 3
"""chat.postMessage calls one channel takes at once before the one-per-second pace applies."""
EVENT_RETRY_DELAYS: Final = (0.0, 60.0, 300.0)
"""Seconds after a failed delivery that Slack sends an event again: at once, after a minute,
after five minutes; then it gives up. Each retry carries its number (`X-Slack-Retry-Num`)."""

# Views and payload sizes
MAX_VIEW_SIZE: Final = 250_000
"""A view's JSON, in bytes (UTF-8): views.open/push/update/publish answer `view_too_large`
beyond it (Slack's documented 250 kB)."""

# Rate limits (Web API tiers): calls per minute, per method and workspace
TIER_1: Final = 1
TIER_2: Final = 20
TIER_3: Final = 50
TIER_4: Final = 100
METHOD_TIERS: Final = {
    "apps.connections.open": TIER_1,
    "auth.test": TIER_4,
    "chat.delete": TIER_3,
    "chat.getPermalink": TIER_4,
    "chat.postEphemeral": TIER_4,
    "chat.update": TIER_3,
    "conversations.history": TIER_3,
    "conversations.info": TIER_3,
    "conversations.open": TIER_3,
    "conversations.list": TIER_2,
    "conversations.replies": TIER_3,
    "dnd.info": TIER_3,
    "reactions.add": TIER_3,
    "reactions.get": TIER_3,
    "reactions.remove": TIER_2,
    "usergroups.list": TIER_2,
    "usergroups.users.list": TIER_2,
    "users.info": TIER_4,
    "users.list": TIER_2,
    "views.open": TIER_4,
    "views.publish": TIER_4,
    "views.push": TIER_4,
    "views.update": TIER_4,
}
"""Each method's tier as Slack's method reference gives it (calls per minute allowed, Slack
allowing some more at times: these are the floors). chat.postMessage is not here: it is paced per
channel (`POST_MESSAGE_INTERVAL`, `POST_MESSAGE_BURST`). The "special" methods (auth.test,
chat.getPermalink) are counted as Tier 4."""
