"""The people of `signoff demo`'s sandbox workspace, the same ones the demo policy names.

`bot/policies/demo.toml` puts them in groups (finance approves refunds, ops and Alice delete
rows, two of finance and ops release payments); `demo_workspace()` builds the sandbox's users,
channels and user groups from that file, so the two cannot disagree.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from bot.sandbox.workspace import BOT_USER, User, UserGroup, Workspace

__all__ = ["APPROVALS_CHANNEL", "DEMO_POLICY", "PEOPLE", "Person", "demo_workspace"]

DEMO_POLICY = Path(__file__).resolve().parents[1] / "policies" / "demo.toml"
"""The demo policy (`bot/policies/demo.toml`)."""

APPROVALS_CHANNEL = ("C_APPROVALS", "approvals")
"""Where the demo's cards go (`SIGNOFF_DEFAULT_CHANNEL`)."""
OTHER_CHANNELS = [("C_GENERAL", "general")]


@dataclass(frozen=True)
class Person:
    """One demo person."""

    id: str
    """Slack user id, as the policy names them (`U_ALICE`)."""
    name: str
    """Handle (`alice`)."""
    real_name: str
    role: str
    """What they do in the demo, shown by the page's "you are" switch."""


PEOPLE = [
    Person("U_ALICE", "alice", "Alice", "finance: approves refunds and payments, may delete rows"),
    Person("U_BOB", "bob", "Bob", "finance: approves refunds and payments"),
    Person("U_CAROL", "carol", "Carol", "support: asks for refunds and deletions"),
    Person("U_DAVE", "dave", "Dave", "ops: deletes rows (two of ops and Alice), releases payments"),
    Person("U_ERIN", "erin", "Erin", "ops: deletes rows (two of ops and Alice), releases payments"),
]
"""Everyone in the sandbox, in the order the page lists them."""


def policy_groups(policy_path: Path = DEMO_POLICY) -> dict[str, list[str]]:
    """The `[groups]` table of a policy file: handle -> member user ids."""
    with open(policy_path, "rb") as f:
        groups = tomllib.load(f).get("groups", {})
    return {str(handle): [str(m) for m in members] for handle, members in groups.items()}


def demo_workspace(policy_path: Path = DEMO_POLICY) -> Workspace:
    """The sandbox workspace: `PEOPLE`, #approvals and #general, and the policy's groups as
    Slack user groups (`@finance`, ...)."""
    people = [User(p.id, p.name, real_name=p.real_name, tz="Europe/London") for p in PEOPLE]
    groups = [
        UserGroup(f"S_{handle.upper()}", handle, members)
        for handle, members in policy_groups(policy_path).items()
    ]
    return Workspace(
        users=[*people, BOT_USER], channels=[APPROVALS_CHANNEL, *OTHER_CHANNELS], usergroups=groups
    )
