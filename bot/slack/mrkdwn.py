"""Putting user data into Slack mrkdwn safely, and fitting text into Slack's limits.

Pure: no I/O, no clock. `messages` words every string with these helpers; the renderers
(`cards`, `modals`, `replies`, `status`) fit every text object with `fit`, `escape_fit` and
`cut_mrkdwn`.

User data in mrkdwn
-------------------
Anything a workflow, a requester or an approver wrote (payload keys and values, titles, notes,
thread ids, error messages) goes through `escape()` (or `code()`, `link_label()`) before it is
part of mrkdwn:

- `&`, `<`, `>` become `&amp;`, `&lt;`, `&gt;`, so no `<!channel>`, `<@U123>`, `<#C1>`,
  `<!subteam^S1>` or `<http://x|disguised link>` can be written by user data.
- Slack has no escape for the formatting characters `*`, `_`, `~` and `` ` ``. A run of them is
  written as the fallback text of an invalid date token, `<!date^00000000^{_}|*>`, which Slack
  shows as plain text (the technique of jsx-slack's `<Escape>`). A single one between two ASCII
  letters or digits is left alone (`order_id`, `a*b`): Slack formats only at word boundaries.
- A `>` at the start of a line would quote the line: it gets an invisible soft hyphen before it.
- An emoji shortcode (`:white_check_mark:`) has its first colon escaped the same way, so a
  value cannot draw a ✅ on the card.
- Control characters and unpaired surrogates become U+FFFD. Hidden characters (zero-width,
  tag characters, bidirectional controls, which can make `100` read as `001`) and letters of
  another script inside a word are shown marked, `⟦U+200B⟧`, `⟦Cyrillic U+0430⟧` (`reveal`).

Mentions and dates are made only here, from ids that look like Slack ids (`mention()`), never
from free text.

Fitting
-------
User data is shortened *before* it is escaped (`shorten`, `escape_fit`), so an ellipsis never
cuts an entity or a token in half; mrkdwn we built is cut only between tokens (`cut_mrkdwn`).
"""

from __future__ import annotations

import datetime as dt
import math
import re

from . import reveal

__all__ = [
    "ELLIPSIS",
    "ESCAPE_TOKEN",
    "FORMAT_CHARS",
    "SLACK_USER_ID",
    "channel",
    "clean",
    "code",
    "cut_mrkdwn",
    "date",
    "escape",
    "escape_fit",
    "escape_fit_cut",
    "escape_pieces",
    "fit",
    "link_label",
    "mention",
    "one_line",
    "prefix",
    "shorten",
    "slack_len",
]

ELLIPSIS = "…"

# ---------------------------------------------------------------------------------------------
# Putting user data into mrkdwn
# ---------------------------------------------------------------------------------------------

FORMAT_CHARS = frozenset("*_~`＊＿｀")
"""Characters that open or close mrkdwn formatting (with their full-width forms)."""

ESCAPE_TOKEN = "<!date^00000000^{{_}}|{}>"
"""A date token with an invalid format: Slack shows its fallback text (`{}`) as plain text."""

_ESCAPE_RUN_MAX = 40
"""Formatting characters per escape token, so a long run can be cut between tokens."""

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufff9-\ufffb]")
_SHORTCODE = re.compile(r":(?=[a-z0-9_+'-]*[a-z])[a-z0-9_+'-]+:", re.IGNORECASE)
_SLACK_ID = re.compile(r"[UWB][A-Z0-9_]{1,40}")
SLACK_USER_ID = _SLACK_ID
"""What a Slack user id looks like (`U…`, `W…`; `B…` for bots)."""
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9_]{1,40}")


def slack_len(text: str) -> int:
    """Length as Slack counts it (UTF-16 code units): an emoji outside the BMP counts twice."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def clean(text: str) -> str:
    """`text` with CRLF as LF, control characters and unpaired surrogates replaced by U+FFFD,
    and hidden or look-alike characters shown marked (`reveal.pieces`). Safe for plain_text;
    not yet for mrkdwn (see `escape`)."""
    return "".join(_clean_pieces(text))


def _clean_pieces(text: str) -> list[str]:
    """`clean(text)` as pieces: a mark (`⟦U+200B⟧`) is one piece, each other character one."""
    text = _UNSAFE.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    return list(text) if text.isascii() else reveal.pieces(text)


def _word(c: str) -> bool:
    return c.isascii() and c.isalnum()


def escape_pieces(text: str) -> list[str]:
    """`escape(text)` as a list of pieces, each standing for one or more characters of `text`,
    so a caller can cut between pieces without breaking an entity or a token."""
    chars = _clean_pieces(text)
    out: list[str] = []
    n = len(chars)
    line_start = True
    i = 0
    while i < n:
        c = chars[i]
        if c in FORMAT_CHARS:
            j = i
            while j < n and chars[j] in FORMAT_CHARS:
                j += 1
            prev = chars[i - 1] if i else ""
            nxt = chars[j] if j < n else ""
            if j - i == 1 and _word(prev) and _word(nxt):
                out.append(c)
            else:
                for k in range(i, j, _ESCAPE_RUN_MAX):
                    out.append(ESCAPE_TOKEN.format("".join(chars[k : min(j, k + _ESCAPE_RUN_MAX)])))
            line_start = False
            i = j
            continue
        if c == ":" and _SHORTCODE.match("".join(chars[i : i + 100])):
            out.append(ESCAPE_TOKEN.format(":"))  # `:white_check_mark:` stays chars, not ✅
        elif c == "&":
            out.append("&amp;")
        elif c == "<":
            out.append("&lt;")
        elif c == ">":
            out.append("\u00ad&gt;" if line_start else "&gt;")
        elif c == "＞" and line_start:
            out.append("\u00ad＞")
        else:
            out.append(c)
        if c == "\n":
            line_start = True
        elif c not in " \t":
            line_start = False
        i += 1
    return out


def escape(text: str) -> str:
    """`text` made inert for mrkdwn: shown as written, with no mention, link or formatting."""
    return "".join(escape_pieces(text))


def code(text: str) -> str:
    """`text` as inline code (ids, workflow and action names): one line, no backticks inside."""
    text = clean(text).replace("\n", " ").replace("`", "ˋ")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"`{text}`" if text.strip() else "`-`"


def link_label(text: str) -> str:
    """`text` for the label of a `<url|label>` link, where escape tokens do not work: formatting
    characters become look-alikes (∗ ˍ ∼ ˋ), the rest is escaped."""
    text = clean(text).replace("\n", " ")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    table = str.maketrans(
        {"*": "∗", "＊": "﹡", "_": "ˍ", "＿": "ˍ", "~": "∼", "`": "ˋ", "｀": "ˋ", "|": "¦"}
    )
    return text.translate(table) or "-"


def mention(user_id: str) -> str:
    """`<@U123>` for something that looks like a Slack user id; anything else escaped as text."""
    if _SLACK_ID.fullmatch(user_id):
        return f"<@{user_id}>"
    return escape(user_id) or "someone"


def channel(channel_id: str) -> str:
    """`<#C123>` for something that looks like a channel id; anything else as code."""
    if _CHANNEL_ID.fullmatch(channel_id):
        return f"<#{channel_id}>"
    return code(channel_id)


def _finite(ts: float | None) -> bool:
    return ts is not None and isinstance(ts, (int, float)) and math.isfinite(ts) and abs(ts) < 1e11


def date(ts: float | None) -> str:
    """A time, shown in the reader's time zone: `<!date^...^{date_short_pretty} at {time}|...>`."""
    if not _finite(ts):
        return "at an unknown time"
    assert ts is not None
    fallback = dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(ts)}^{{date_short_pretty}} at {{time}}|{fallback}>"


# ---------------------------------------------------------------------------------------------
# Fitting text into limits
# ---------------------------------------------------------------------------------------------


def prefix(text: str, units: int) -> str:
    """The longest prefix of `text` of at most `units` UTF-16 code units."""
    if units <= 0:
        return ""
    cut = text[:units]
    n = slack_len(cut)
    i = len(cut)
    while n > units:
        i -= 1
        n -= 2 if ord(cut[i]) > 0xFFFF else 1
    return cut[:i]


def fit(text: str, limit: int) -> str:
    """Plain text cleaned and shortened to `limit` with an ellipsis."""
    text = clean(text if len(text) <= limit + 1 else text[: limit + 1])
    if slack_len(text) <= limit:
        return text
    return prefix(text, limit - 1) + ELLIPSIS


def escape_fit(text: str, limit: int) -> str:
    """`escape(text)`, shortened to `limit` with an ellipsis between whole pieces."""
    return escape_fit_cut(text, limit)[0]


def escape_fit_cut(text: str, limit: int) -> tuple[str, bool]:
    """`escape_fit(text, limit)`, and whether it had to be shortened."""
    # Each character escapes to at least one unit, so limit + 1 characters tell an overflow.
    short = text if len(text) <= limit else text[: limit + 1]
    pieces = escape_pieces(short)
    if sum(slack_len(p) for p in pieces) <= limit:
        return "".join(pieces), False
    budget = limit - 1
    out: list[str] = []
    used = 0
    for piece in pieces:
        n = slack_len(piece)
        if used + n > budget:
            break
        out.append(piece)
        used += n
    return "".join(out) + ELLIPSIS, True


def cut_mrkdwn(text: str, limit: int) -> str:
    """Shorten mrkdwn we built to `limit`, never leaving half an entity or a `<...>` token."""
    if slack_len(text) <= limit:
        return text
    out = prefix(text, limit - 1)
    lt = out.rfind("<")
    if lt > out.rfind(">"):
        out = out[:lt]
    amp = out.rfind("&")
    if amp != -1 and ";" not in out[amp:]:
        out = out[:amp]
    return out + ELLIPSIS


def one_line(text: str) -> str:
    """`text` cleaned, its whitespace runs (newlines included) made one space."""
    return " ".join(clean(text).split())


def shorten(text: object, limit: int) -> str:
    """User data as text, cut to `limit` characters before it is formatted (escaped, fitted),
    so a huge value costs nothing."""
    s = text if isinstance(text, str) else str(text)
    return s if len(s) <= limit else s[: limit - 1] + ELLIPSIS
