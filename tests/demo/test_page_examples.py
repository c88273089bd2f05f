"""The demo page's "start a workflow" form is filled in with an example per bundled workflow
(`EXAMPLES`): started as it comes, each must reach a person, never be refused by the demo's own
policy (the vendor payment's "Acme Ltd" was, against the vendor id's pattern)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from bot.approvals.errors import InvalidInputError
from bot.approvals.policy import load_policy
from bot.sandbox.page import EXAMPLES
from bot.sandbox.people import DEMO_POLICY
from tests.kit.signoff import Kit


def a_starter(workflow: str) -> str:
    """Someone the demo policy lets start `workflow`."""
    policy = load_policy(DEMO_POLICY)
    first = policy.workflows[workflow].starters[0]
    return min(policy.groups[first.removeprefix("@")]) if first.startswith("@") else first


@pytest.mark.parametrize("workflow", sorted(EXAMPLES))
async def test_the_page_s_example_of_each_workflow_asks_a_person(
    workflow: str, tmp_path: Path
) -> None:
    kit = Kit(f"sqlite:///{quote(str(tmp_path / 'signoff.db'))}", tmp_path)
    await kit.db.upgrade()
    try:
        app = kit.new_app(policy_text=DEMO_POLICY.read_text(encoding="utf-8"), share_db=True)
        report = await app.start(workflow, EXAMPLES[workflow], requester=a_starter(workflow))
        assert (report.status, report.error) == ("paused", None)
        for approval_id in report.approvals:
            approval = await app.get(approval_id)
            assert (approval.status, approval.reason) == ("pending", None)
    finally:
        await kit.aclose()


async def test_a_value_off_the_pattern_is_refused_in_words_not_as_a_regex(tmp_path: Path) -> None:
    kit = Kit(f"sqlite:///{quote(str(tmp_path / 'signoff.db'))}", tmp_path)
    await kit.db.upgrade()
    try:
        app = kit.new_app(policy_text=DEMO_POLICY.read_text(encoding="utf-8"), share_db=True)
        given = {**EXAMPLES["vendor_payment"], "vendor": "Acme Ltd"}
        with pytest.raises(InvalidInputError) as refused:
            await app.start("vendor_payment", given, requester=a_starter("vendor_payment"))
        said = str(refused.value)
        assert "vendor must be the vendor's id: letters, digits and _ . : -, no spaces" in said
        assert "got 'Acme Ltd'" in said
        assert "[A-Za-z0-9]" not in said
    finally:
        await kit.aclose()
