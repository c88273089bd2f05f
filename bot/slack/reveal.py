"""Hidden and look-alike characters in what people read, shown and marked.

A value can say one thing and show another: a zero-width space inside an id, Unicode tag
characters (invisible, yet read by a model), a bidirectional control that reorders what follows,
a blank that is not a space, or a Cyrillic `а` inside a Latin word (an email domain that is not
the one it looks like). Wherever a person reads a value (the card, its thread, the payload and
Edit modals, notices, Home, `/agent status`), each such character is shown as a visible mark:

- a hidden character as its code point, `⟦U+200B⟧`;
- a letter of another script inside a word of Latin, Cyrillic, Greek... letters, as its script
  and code point, `⟦Cyrillic U+0430⟧`; a word written in one script is left alone.

Pure: `pieces` is what `mrkdwn.clean` and `mrkdwn.escape_pieces` build on (a mark is one piece,
never cut in half); `findings` says which kinds a text holds, for a warning beside it. Written
on `unicodedata` (a character's name starts with its script) rather than a confusables
library: only these few scripts are confusable with each other, and code points are what the
marks show.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

__all__ = ["Finding", "findings", "pieces"]

Finding = Literal["hidden", "look-alike"]
"""`hidden`: a character that shows as nothing (or as a blank that is not one); `look-alike`: a
letter of another script inside a word."""

_HIDDEN = frozenset(
    [0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x2800, 0x3164, 0xFEFF]
    + [0xFFA0, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070)]
)
"""Zero-width and invisible format characters, bidirectional controls and marks, blanks that
are not spaces (Hangul fillers, the Braille blank)."""
_JOINERS = frozenset([0x200C, 0x200D])
"""Zero-width (non-)joiners: part of emoji and of some scripts' words; hidden only beside an
ASCII character, where no script needs them."""
_CONFUSABLE_SCRIPTS = frozenset(["LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"])


def _hidden(text: str, i: int) -> bool:
    cp = ord(text[i])
    if 0xE0000 <= cp <= 0xE007F:  # tag characters
        return True
    if cp in _JOINERS:
        near = text[i - 1 : i] + text[i + 1 : i + 2]
        return any(c.isascii() for c in near) or not near
    return cp in _HIDDEN


def _script(c: str) -> str | None:
    """The confusable script of the letter `c` (`LATIN`, `CYRILLIC`...), or None."""
    if not c.isalpha() or c.isascii():
        return "LATIN" if c.isascii() and c.isalpha() else None
    head = unicodedata.name(c, "").split(" ", 1)[0]
    return head if head in _CONFUSABLE_SCRIPTS else None


def _odd_letters(text: str) -> set[int]:
    """Positions of letters whose script is not their word's (a word mixing confusable
    scripts: the letters of its smaller scripts; Latin's kept on a tie)."""
    odd: set[int] = set()
    i, n = 0, len(text)
    while i < n:
        if not text[i].isalnum():
            i += 1
            continue
        j = i
        scripts: dict[str, list[int]] = {}
        while j < n and (text[j].isalnum() or _hidden(text, j)):
            s = _script(text[j])
            if s is not None:
                scripts.setdefault(s, []).append(j)
            j += 1
        if len(scripts) > 1:
            main = max(scripts, key=lambda s: (len(scripts[s]), s == "LATIN"))
            for s, at in scripts.items():
                if s != main:
                    odd.update(at)
        i = j
    return odd


def _plain(text: str) -> bool:
    return text.isascii()


def pieces(text: str) -> list[str]:
    """`text` as a list of pieces: each character as itself, except a hidden one (`⟦U+200B⟧`)
    and a letter of another script inside a word (`⟦Cyrillic U+0430⟧`), each one piece."""
    if _plain(text):
        return list(text)
    odd = _odd_letters(text)
    out: list[str] = []
    for i, c in enumerate(text):
        if _hidden(text, i):
            out.append(f"⟦U+{ord(c):04X}⟧")
        elif i in odd:
            script = (_script(c) or "").capitalize()
            out.append(f"⟦{script} U+{ord(c):04X}⟧")
        else:
            out.append(c)
    return out


def findings(text: str) -> set[Finding]:
    """Which kinds of marked characters `text` holds (none for plain text)."""
    if _plain(text):
        return set()
    found: set[Finding] = set()
    if any(_hidden(text, i) for i in range(len(text))):
        found.add("hidden")
    if _odd_letters(text):
        found.add("look-alike")
    return found
