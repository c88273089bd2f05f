"""Who a card pings: the policy's approver entries as Slack mentions.

A user id becomes `<@U…>`; a group from the policy's `[groups]` table mentions each of its
members (Slack knows no such group); any other `@handle` is a Slack user group, mentioned as
`<!subteam^ID>` so that its members are notified. A handle Slack does not know (or cannot be
asked about now) is written as text: the card is posted anyway, never held back by a lookup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from .mrkdwn import escape, mention

__all__ = ["GroupIds", "approver_mentions"]

_GROUP_ID = re.compile(r"S[A-Z0-9_]{1,40}")


class GroupIds(Protocol):
    """Slack user group ids by handle (`SlackGroups`)."""

    async def group_id(self, handle: str) -> str | None: ...


async def approver_mentions(
    entries: Iterable[str],
    *,
    static: Mapping[str, Iterable[str]],
    slack: GroupIds | None,
    skip: Iterable[str] = (),
) -> list[str]:
    """The mrkdwn mentions of `entries`, in order, each once; users in `skip` (the requester)
    are left out of static groups' members, not out of entries naming them alone."""
    out: list[str] = []
    left_out = set(skip)
    for entry in entries:
        if not entry.startswith("@"):
            out.append(mention(entry))
            continue
        handle = entry[1:]
        if handle in static:
            out.extend(mention(u) for u in static[handle] if u not in left_out)
            continue
        group_id = await slack.group_id(handle) if slack is not None else None
        out.append(
            f"<!subteam^{group_id}>"
            if group_id and _GROUP_ID.fullmatch(group_id)
            else escape(entry)
        )
    return list(dict.fromkeys(out))
