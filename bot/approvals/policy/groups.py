"""Group membership: the policy's `@groups` resolved to user ids (a static map, or Slack)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from .decide import reach_problem
from .model import ActionPolicy

__all__ = ["GroupResolver", "StaticGroups", "resolve_members", "unreachable"]


class GroupResolver(Protocol):
    """Resolves a group name (without `@`) to the user ids in it."""

    async def members(self, group: str) -> frozenset[str]:
        """The user ids in `group`; an empty set when there is no such group."""
        ...


class StaticGroups:
    """Groups from a fixed map (the `[groups]` table): for the CLI, tests and the demo.

    A name that is not in the map is asked of `fallback` (e.g. Slack user groups) when one is
    given, else it has no members.
    """

    def __init__(
        self, groups: Mapping[str, Iterable[str]], fallback: GroupResolver | None = None
    ) -> None:
        self._groups = {name.removeprefix("@"): frozenset(ids) for name, ids in groups.items()}
        self._fallback = fallback

    async def members(self, group: str) -> frozenset[str]:
        name = group.removeprefix("@")
        if name in self._groups:
            return self._groups[name]
        if self._fallback is not None:
            return await self._fallback.members(name)
        return frozenset()


async def resolve_members(rule_entries: Iterable[str], resolver: GroupResolver) -> frozenset[str]:
    """The user ids named by `entries`: the user ids themselves and the members of each `@group`."""
    out: set[str] = set()
    for entry in rule_entries:
        if entry.startswith("@"):
            out.update(await resolver.members(entry[1:]))
        else:
            out.add(entry)
    return frozenset(out)


async def unreachable(
    rule: ActionPolicy, requester: str | None, resolver: GroupResolver
) -> str | None:
    """Why `requester`'s request for `rule`'s action could never be approved by the people
    its approvers (and escalation targets) name now, or None (`reach_problem`).

    Raises:
        GroupsUnavailable: the resolver could not say who is in a group (Slack did not answer).
    """
    entries = rule.approver_entries(escalated=True)
    sizes = {e: len(await resolver.members(e[1:])) for e in entries if e.startswith("@")}
    members = await resolve_members(entries, resolver)
    return reach_problem(rule, requester=requester, members=members, groups=sizes)
