"""Reading the policy file (`load_policy`) or text (`parse_policy`) into a checked `Policy`."""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Iterator

from ..errors import PolicyError
from ._file import _Reader, _syntax_error
from .model import Policy

__all__ = [
    "MINIMAL_POLICY",
    "load_policy",
    "parse_policy",
    "undefined_group",
    "unknown_groups",
]

log = logging.getLogger("signoff.policy")
# Shown where the process configures logging (`signoff run`, the demo); a one-shot CLI command
# does not repeat it on stderr before its one line.
log.addHandler(logging.NullHandler())
_warned: set[tuple[str, ...]] = set()
"""What was warned about already (a policy is parsed again by each part that reads it)."""

MINIMAL_POLICY = """\
[actions.send_refund]
tier = "high"
approvers = ["U_ALICE"]
"""
"""The smallest useful policy, shown when the file is missing."""


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy file at `path`.

    Raises:
        PolicyError: the file is missing, unreadable or invalid (with file, line and key).
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise PolicyError(
            "no policy file here; signoff denies every action until one names it. Create it "
            "(or point SIGNOFF_POLICY at yours), for example:\n\n" + MINIMAL_POLICY,
            source=source,
        ) from None
    except OSError as exc:
        raise PolicyError(
            f"cannot read the policy file: {exc.strerror or exc}", source=source
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise PolicyError(
            "is not UTF-8 text (TOML must be UTF-8)", source=source, line=line
        ) from None
    return parse_policy(text.removeprefix("\ufeff"), source)


def parse_policy(text: str, source: str = "signoff.toml") -> Policy:
    """Parse and validate policy text.

    Raises:
        PolicyError: never anything else; the message starts with `source:line:` and the key.
    """
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PolicyError("invalid TOML: nested too deeply", source=source) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing thousands of digits
        raise _syntax_error(str(exc), text, source) from None
    policy = _Reader(text, source).policy(data)
    for name, rule in policy.actions.items():
        if rule.args is None and (source, name) not in _warned:
            _warned.add((source, name))
            log.warning(
                "%s: action %s declares no argument schema ([actions.%s.args]): its arguments "
                "and approvers' edits are not checked, and its auto-approval rules see them as "
                "they come",
                source,
                name,
                name,
            )
    for where, key, group in unknown_groups(policy):
        if (source, where, key, group) in _warned:
            continue
        _warned.add((source, where, key, group))
        log.warning("%s: %s", source, unknown_group_warning(policy, where, key, group))
    return policy


def unknown_groups(policy: Policy) -> Iterator[tuple[str, str, str]]:
    """(where, key, group) for each `@group` an action or workflow names that `[groups]` does
    not define: `("action send_refund", "approvers", "finanse")`."""
    for name, rule in policy.actions.items():
        for role, entries in (("approvers", rule.approvers), ("escalate_to", rule.escalate_to)):
            for entry in entries:
                if entry.startswith("@") and entry[1:] in policy.external_groups:
                    yield f"action {name}", role, entry[1:]
    for name, wf in policy.workflows.items():
        for entry in wf.starters:
            if entry.startswith("@") and entry[1:] in policy.external_groups:
                yield f"workflow {name}", "starters", entry[1:]


def undefined_group(policy: Policy, slack_handles: frozenset[str]) -> str | None:
    """The first `@group` the policy names that neither `[groups]` nor Slack (whose user groups
    are `slack_handles`) defines, said as a refusal naming the file, where and what to do; or
    None when every group is defined somewhere."""
    for where, key, group in unknown_groups(policy):
        if group not in slack_handles:
            known = ", ".join(f"@{h}" for h in sorted(slack_handles)) or "none"
            return (
                f"{policy.source or 'the policy'}: {where} names @{group} in {key}, and neither "
                f"[groups] nor Slack defines it (Slack's user groups: {known}): correct it, or "
                "define it under [groups]"
            )
    return None


def unknown_group_warning(policy: Policy, where: str, key: str, group: str) -> str:
    """The warning for a group `[groups]` does not define: what happens, and what to do if it
    is a typo."""
    close = difflib.get_close_matches(group, list(policy.groups), n=1)
    if close:
        fix = f"if it is a typo of @{close[0]}, correct it"
    elif policy.groups:
        known = ", ".join(f"@{g}" for g in sorted(policy.groups))
        fix = f"if it is a typo, write one of {known}"
    else:
        fix = "if it is a typo, correct it"
    return (
        f"{where} names @{group} in {key}, and [groups] does not define it: it will "
        f"be looked up in Slack as the user group with the handle {group!r} (no members "
        f"outside Slack, e.g. from the CLI); {fix}, or define it under [groups]"
    )
