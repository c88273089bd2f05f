"""The texts of grants: the card's "Allow more like this" button and its modal, the line of a
request approved under a grant, and the grants listed on App Home with their Revoke button."""

from __future__ import annotations

from collections.abc import Sequence

from ..mrkdwn import code, date, escape, mention
from ._words import plural

GRANT_BUTTON = "Allow more like this…"
"""The card's button that opens the grant modal, which approves the request and grants more
(its label names no "Approve": the one Approve button stays the one so named)."""
GRANT_MODAL_TITLE = "Approve, allow more"
"""The grant modal's title (at most 24 characters)."""
GRANT_SUBMIT = "Approve"
GRANT_USES_LABEL = "Allow up to this many more like it"
GRANT_FOR_LABEL = "For at most"
REVOKE_BUTTON = "Revoke"


def grant_uses_option(n: int) -> str:
    """Plain text: `1 more request`, `5 more requests`."""
    return plural(n, "more request")


def grant_intro(
    requester: str, key: Sequence[str], vary: Sequence[str], most: int, longest: str
) -> str:
    """What the grant modal says before its two choices: what a later request must be to be
    approved under the grant without asking anyone."""
    same = "".join(f", the same {code(k)}" for k in key)
    free = f" ({', '.join(code(v) for v in vary)} may differ)" if vary else ""
    return (
        f"Approve this request, and let up to {most} more like it be approved without asking "
        f"anyone, for at most {escape(longest)}: asked by {mention(requester)}{same}, each "
        f"number at most what you approve here, everything else equal{free}. You or another "
        "approver can revoke it on signoff's Home tab."
    )


def granted_line(grantor: str, left: int, uses: int, until: float, grant_id: str) -> str:
    """`🎟️ Approved under @Alice's grant (3 of 5 left, until 15:00) · grant grt_…`."""
    return (
        f"🎟️ Approved under {mention(grantor)}'s grant ({left} of {uses} left, until "
        f"{date(until)}) · grant {code(grant_id)}"
    )


def home_grants_heading() -> str:
    return "*🎟️ Live grants you may revoke*"


def home_grant_line(
    grant_id: str, action: str, grantor: str, requester: str, left: int, uses: int, until: float
) -> str:
    """One grant on Home: what it lets through, for whom, what is left of it, until when."""
    return (
        f"{code(action)} for {mention(requester)}, granted by {mention(grantor)}: {left} of "
        f"{uses} left, until {date(until)} · {code(grant_id)}"
    )


def grant_revoked(grant_id: str) -> str:
    return f"🎟️ Grant {code(grant_id)} is revoked: it approves nothing more."
