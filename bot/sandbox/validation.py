"""Block Kit checks the stand-in makes, with Slack's error codes and message format.

Only what real Slack refuses and what matters to signoff: counts, lengths (at least one
character where Slack wants one), the block and element types Slack knows, the shapes our cards
and modals use. Slack answers a bad message with `invalid_blocks` and a bad view with
`invalid_arguments`, each explained by lines such as
`[ERROR] must be less than 25 characters [json-pointer:/view/title/text]`; so does this module.
"""

from __future__ import annotations

import json
from typing import Any

from bot.sandbox import limits
from bot.sandbox.errors import SlackApiFailure

__all__ = ["check_broadcast", "check_message", "check_view", "slack_length"]

JSON = dict[str, Any]


def slack_length(text: str) -> int:
    """Length as the limits are checked here: UTF-16 code units, so an emoji outside the
    Basic Multilingual Plane counts twice. That is the stricter of the two ways Slack's limits
    may be read, and the one the bot's card builders assume. A lone surrogate (JSON can carry
    `"\\ud800"`) is one unit."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class _Problems:
    """Collects `[ERROR] ... [json-pointer:...]` lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, pointer: str, what: str) -> None:
        self.lines.append(f"[ERROR] {what} [json-pointer:{pointer}]")

    def max_len(self, pointer: str, value: Any, limit: int, *, min_len: int = 0) -> None:
        """A string, when there is one, of `min_len` to `limit` characters."""
        if not isinstance(value, str):
            return
        if slack_length(value) > limit:
            self.add(pointer, f"must be less than {limit + 1} characters")
        elif slack_length(value) < min_len:
            self.add(pointer, f"must be more than {min_len - 1} characters")

    def text_obj(self, pointer: str, obj: Any, limit: int, *, plain_only: bool = False) -> None:
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            self.add(pointer, "must provide an object with a text string")
            return
        kinds = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
        if obj.get("type") not in kinds:
            self.add(f"{pointer}/type", f"must be one of {', '.join(kinds)}")
        # `emoji` is only for plain_text, `verbatim` only for mrkdwn: Slack refuses either
        # elsewhere, as any other property ("invalid additional property").
        _only_known(self, pointer, obj, limits.TEXT_PROPERTIES.get(str(obj.get("type"))))
        self.max_len(f"{pointer}/text", obj["text"], limit, min_len=1)


def check_message(
    text: Any, blocks: Any, *, max_text: int | None = limits.MAX_MESSAGE_TEXT
) -> None:
    """Refuse a message as Slack would (chat.postMessage, chat.update, postEphemeral, responses).

    Args:
        max_text: the most characters of `text` (chat.update: `MAX_UPDATE_TEXT`); None for
            chat.postMessage, which truncates instead (`MAX_MESSAGE_TEXT`).

    Raises:
        SlackApiFailure: `no_text` (neither text nor blocks), `msg_too_long` (text over
            `max_text`), `invalid_blocks` (with the lines saying what and where),
            `msg_blocks_too_long` (the blocks' text together over `MAX_BLOCKS_TEXT`).
    """
    if not text and not blocks:
        raise SlackApiFailure("no_text")
    if max_text is not None and isinstance(text, str) and slack_length(text) > max_text:
        raise SlackApiFailure(
            "msg_too_long",
            [f"[ERROR] must be less than {max_text + 1} characters [json-pointer:/text]"],
        )
    if blocks is None:
        return
    p = _Problems()
    _check_blocks(p, "/blocks", blocks, limits.MAX_MESSAGE_BLOCKS, surface="message")
    if p.lines:
        raise SlackApiFailure("invalid_blocks", p.lines)
    total = sum(slack_length(t) for t in _texts(blocks))
    if total > limits.MAX_BLOCKS_TEXT:
        line = (
            f"[ERROR] the blocks' text is {total} characters, over {limits.MAX_BLOCKS_TEXT} "
            "[json-pointer:/blocks]"
        )
        raise SlackApiFailure("msg_blocks_too_long", [line])


def _texts(node: Any) -> list[str]:
    """The text of every text object in `node` (blocks, elements, options, confirms)."""
    if isinstance(node, list):
        return [t for item in node for t in _texts(item)]
    if not isinstance(node, dict):
        return []
    own = (
        [node["text"]]
        if node.get("type") in ("plain_text", "mrkdwn") and isinstance(node.get("text"), str)
        else []
    )
    return own + [t for value in node.values() for t in _texts(value)]


def check_broadcast(blocks: Any, attachments: Any) -> None:
    """Refuse a thread reply also sent to the channel (`reply_broadcast`) that carries
    attachments or interactive elements (buttons, menus, inputs).

    Slack documents the rule on the `thread_broadcast` message it makes of such a reply: "a
    pointer or reference to the actual thread", which "cannot contain attachments or message
    buttons". It names no error of its own for it; the stand-in answers as Slack answers blocks
    it will not take, `invalid_blocks` (`invalid_attachments` for attachments), with lines
    saying which element.

    Raises:
        SlackApiFailure: as above.
    """
    p = _Problems()
    if attachments:
        p.add("/attachments", "a reply broadcast to the channel cannot contain attachments")
        raise SlackApiFailure("invalid_attachments", p.lines)
    for i, block in enumerate(blocks if isinstance(blocks, list) else []):
        for where in _interactive(f"/blocks/{i}", block):
            p.add(where, "a reply broadcast to the channel cannot contain message buttons")
    if p.lines:
        raise SlackApiFailure("invalid_blocks", p.lines)


def _interactive(at: str, block: Any) -> list[str]:
    """Where `block` holds an element a person can act on (an image accessory is not one)."""
    if not isinstance(block, dict):
        return []
    if block.get("type") in ("actions", "input"):
        return [at]
    accessory = block.get("accessory")
    if isinstance(accessory, dict) and accessory.get("type") != "image":
        return [f"{at}/accessory"]
    return []


def check_view(view: Any, *, home: bool = False) -> None:
    """Refuse a view as Slack would (views.open/push/update take modals, views.publish a home).

    Raises:
        SlackApiFailure: `view_too_large` when its JSON is over `MAX_VIEW_SIZE` bytes;
            `invalid_arguments`, with the lines saying what and where.
    """
    p = _Problems()
    if not isinstance(view, dict):
        p.add("/view", "must provide an object")
        raise SlackApiFailure("invalid_arguments", p.lines)
    # UTF-8 bytes of the JSON with json.dumps' separators, as slack_sdk sends it, but with
    # characters unescaped (slack_sdk's `\uXXXX` escapes would count a letter as six bytes).
    size = len(json.dumps(view, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > limits.MAX_VIEW_SIZE:
        raise SlackApiFailure(
            "view_too_large",
            [
                f"[ERROR] view is {size} bytes, over the {limits.MAX_VIEW_SIZE} allowed [json-pointer:/view]"
            ],
        )
    expected = "home" if home else "modal"
    if view.get("type") != expected:
        p.add("/view/type", f"must be {expected}")
    if not home:
        p.text_obj("/view/title", view.get("title"), limits.MAX_MODAL_TITLE, plain_only=True)
        for key in ("submit", "close"):
            if key in view and view[key] is not None:
                p.text_obj(f"/view/{key}", view[key], limits.MAX_MODAL_BUTTON_TEXT, plain_only=True)
        has_input = any(
            isinstance(b, dict) and b.get("type") == "input" for b in view.get("blocks") or []
        )
        if has_input and not view.get("submit"):
            p.add("/view/submit", "must provide submit when the view has input blocks")
    p.max_len("/view/private_metadata", view.get("private_metadata"), limits.MAX_PRIVATE_METADATA)
    p.max_len("/view/callback_id", view.get("callback_id"), limits.MAX_CALLBACK_ID)
    p.max_len("/view/external_id", view.get("external_id"), limits.MAX_EXTERNAL_ID)
    _check_blocks(p, "/view/blocks", view.get("blocks"), limits.MAX_VIEW_BLOCKS, surface=expected)
    if p.lines:
        raise SlackApiFailure("invalid_arguments", p.lines)


def _only_known(p: _Problems, at: str, obj: JSON, known: frozenset[str] | None) -> None:
    """Slack refuses a property it does not know on a block, element or text object."""
    if known is None:
        return
    for name in obj:
        if name not in known:
            p.add(at, f"invalid additional property: {name}")


def _check_blocks(p: _Problems, at: str, blocks: Any, max_blocks: int, *, surface: str) -> None:
    if not isinstance(blocks, list):
        p.add(at, "must provide an array")
        return
    if len(blocks) > max_blocks:
        p.add(at, f"no more than {max_blocks} items allowed")
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        where = f"{at}/{i}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            p.add(where, "must provide an object with a type")
            continue
        if block["type"] not in limits.BLOCK_TYPES:
            p.add(f"{where}/type", f"unsupported type: {block['type']}")
            continue
        block_id = block.get("block_id")
        if block_id is not None:
            p.max_len(f"{where}/block_id", block_id, limits.MAX_BLOCK_ID, min_len=1)
            if block_id in seen:
                p.add(f"{where}/block_id", f"duplicate block_id {block_id!r}")
            seen.add(block_id)
        _only_known(p, where, block, limits.BLOCK_PROPERTIES.get(block["type"]))
        _check_block(p, where, block, surface)


def _check_block(p: _Problems, at: str, block: JSON, surface: str) -> None:
    kind = block["type"]
    if kind == "section":
        if "text" not in block and "fields" not in block:
            p.add(at, "must provide text or fields")
        if "text" in block:
            p.text_obj(f"{at}/text", block["text"], limits.MAX_SECTION_TEXT)
        fields = block.get("fields", [])
        if len(fields) > limits.MAX_SECTION_FIELDS:
            p.add(f"{at}/fields", f"no more than {limits.MAX_SECTION_FIELDS} items allowed")
        elif "fields" in block and not fields:
            p.add(f"{at}/fields", "must provide at least 1 item")
        for j, f in enumerate(fields):
            p.text_obj(f"{at}/fields/{j}", f, limits.MAX_SECTION_FIELD_TEXT)
        if "accessory" in block:
            _check_element(p, f"{at}/accessory", block["accessory"])
    elif kind == "header":
        p.text_obj(f"{at}/text", block.get("text"), limits.MAX_HEADER_TEXT, plain_only=True)
    elif kind == "context":
        elements = block.get("elements") or []
        if not 1 <= len(elements) <= limits.MAX_CONTEXT_ELEMENTS:
            p.add(f"{at}/elements", f"must provide 1 to {limits.MAX_CONTEXT_ELEMENTS} items")
        for j, el in enumerate(elements):
            if not (isinstance(el, dict) and el.get("type") == "image"):
                p.text_obj(f"{at}/elements/{j}", el, limits.MAX_TEXT_OBJECT)
    elif kind == "actions":
        elements = block.get("elements") or []
        if not 1 <= len(elements) <= limits.MAX_ACTIONS_ELEMENTS:
            p.add(f"{at}/elements", f"must provide 1 to {limits.MAX_ACTIONS_ELEMENTS} items")
        action_ids: set[str] = set()
        for j, el in enumerate(elements):
            _check_element(p, f"{at}/elements/{j}", el)
            aid = el.get("action_id") if isinstance(el, dict) else None
            if aid is not None and aid in action_ids:
                p.add(f"{at}/elements/{j}/action_id", f"duplicate action_id {aid!r}")
            if aid is not None:
                action_ids.add(aid)
    elif kind == "input":
        if surface == "message":
            p.add(f"{at}/type", "input blocks are not allowed in messages")
        p.text_obj(f"{at}/label", block.get("label"), limits.MAX_INPUT_LABEL, plain_only=True)
        if "hint" in block:
            p.text_obj(f"{at}/hint", block["hint"], limits.MAX_INPUT_HINT, plain_only=True)
        if not isinstance(block.get("element"), dict):
            p.add(f"{at}/element", "must provide an object")
        else:
            _check_element(p, f"{at}/element", block["element"])


def _check_element(p: _Problems, at: str, el: Any) -> None:
    if not isinstance(el, dict) or not isinstance(el.get("type"), str):
        p.add(at, "must provide an object with a type")
        return
    if el["type"] not in limits.ELEMENT_TYPES:
        p.add(f"{at}/type", f"unsupported type: {el['type']}")
        return
    _only_known(p, at, el, limits.ELEMENT_PROPERTIES.get(el["type"]))
    p.max_len(f"{at}/action_id", el.get("action_id"), limits.MAX_ACTION_ID, min_len=1)
    if "placeholder" in el:
        p.text_obj(f"{at}/placeholder", el["placeholder"], limits.MAX_PLACEHOLDER, plain_only=True)
    if el["type"] == "button":
        p.text_obj(f"{at}/text", el.get("text"), limits.MAX_BUTTON_TEXT, plain_only=True)
        p.max_len(f"{at}/value", el.get("value"), limits.MAX_BUTTON_VALUE, min_len=1)
        p.max_len(f"{at}/url", el.get("url"), limits.MAX_BUTTON_URL, min_len=1)
        if "style" in el and el["style"] not in limits.BUTTON_STYLES:
            p.add(f"{at}/style", "must be one of primary, danger")
    elif el["type"] == "plain_text_input":
        limit = limits.MAX_PLAIN_TEXT_INPUT
        max_length = el.get("max_length", limit)
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            p.add(f"{at}/max_length", "must be a whole number of at least 1")
        elif max_length > limit:
            p.add(f"{at}/max_length", f"must be at most {limit}")
        else:
            limit = max_length  # the initial value must fit in the input
        p.max_len(f"{at}/initial_value", el.get("initial_value"), limit)
    elif el["type"] in limits.OPTION_ELEMENTS:
        for j, option in enumerate(el.get("options") or []):
            if not isinstance(option, dict):
                p.add(f"{at}/options/{j}", "must provide an object")
                continue
            p.text_obj(f"{at}/options/{j}/text", option.get("text"), limits.MAX_OPTION_TEXT)
            p.max_len(f"{at}/options/{j}/value", option.get("value"), limits.MAX_OPTION_VALUE)
    if "confirm" in el:
        c = el["confirm"]
        if not isinstance(c, dict):
            p.add(f"{at}/confirm", "must provide an object")
            return
        p.text_obj(f"{at}/confirm/title", c.get("title"), limits.MAX_CONFIRM_TITLE, plain_only=True)
        p.text_obj(f"{at}/confirm/text", c.get("text"), limits.MAX_CONFIRM_TEXT)
        for key in ("confirm", "deny"):
            p.text_obj(
                f"{at}/confirm/{key}", c.get(key), limits.MAX_CONFIRM_BUTTON, plain_only=True
            )
