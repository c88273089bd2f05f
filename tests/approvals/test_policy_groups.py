"""A group the policy names but `[groups]` does not define is warned about at load: the file,
the action or workflow, the group, that Slack will be asked for it, and what to do if it is a
typo (with the closest defined group when there is one)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.approvals.policy import load_policy

POLICY = """\
[groups]
finance = ["U_ALICE"]
ops = ["U_DAVE"]

[workflows.refund]
starters = ["@suport", "@finance"]

[actions.send_refund]
tier = "high"
approvers = ["@finanse", "U_BOB"]
escalate_after = "1h"
escalate_to = ["@oncall"]

[actions.send_refund.args]
amount = { type = "number" }
"""


def test_groups_not_in_the_policy_are_warned_about_with_what_to_do(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "typo.toml"
    path.write_text(POLICY)
    with caplog.at_level(logging.WARNING, logger="signoff.policy"):
        policy = load_policy(path)
        load_policy(path)  # once per file, action and group, however often it is read
    assert sorted(policy.external_groups) == ["finanse", "oncall", "suport"]
    slack = "it will be looked up in Slack as the user group with the handle"
    said = [
        (
            f"{path}: action send_refund names @finanse in approvers, and [groups] does not define "
            f"it: {slack} 'finanse' (no members outside Slack, e.g. from the CLI); if it is a typo "
            "of @finance, correct it, or define it under [groups]"
        ),
        (
            f"{path}: action send_refund names @oncall in escalate_to, and [groups] does not define "
            f"it: {slack} 'oncall' (no members outside Slack, e.g. from the CLI); if it is a typo, "
            "write one of @finance, @ops, or define it under [groups]"
        ),
        (
            f"{path}: workflow refund names @suport in starters, and [groups] does not define it: "
            f"{slack} 'suport' (no members outside Slack, e.g. from the CLI); if it is a typo, "
            "write one of @finance, @ops, or define it under [groups]"
        ),
    ]
    assert [r.getMessage() for r in caplog.records] == said


def test_defined_groups_are_not_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "fine.toml"
    path.write_text(POLICY.replace("@suport", "@ops").replace("@finanse", "@finance").replace(
        "@oncall", "@ops"
    ))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="signoff.policy"):
        load_policy(path)
    assert [r.getMessage() for r in caplog.records] == []
