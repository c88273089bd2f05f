"""An app whose Messages tab is hidden gets its direct messages refused by Slack
(`messages_tab_disabled`). The manifests show the tab; where an admin hid it anyway, what the bot
would have said in a DM is said in the card's thread, to the person by name, and nothing waits
or is retried. `signoff run` and the stand-in as processes, the stand-in installed with the tab
hidden."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.slack import messages
from bot.slack.payloads import APPROVE
from tests.kit.e2e import (
    BOB,
    CAROL,
    E2E,
    JSON,
    BotProcess,
    FakeSlackProcess,
    sqlite_url,
    write_policy,
)
from tests.slack.test_e2e import POLICY

ROOT = Path(__file__).resolve().parents[2]

DM_POLICY = POLICY.replace(
    'approvers = ["@approvers"]\neditable', 'approvers = ["@approvers"]\nnotify = "both"\neditable'
)
"""Refund approvers (alice, bob) get the card in the channel and a copy in a DM."""


@pytest.fixture(scope="module")
def fake_slack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeSlackProcess]:
    fake = FakeSlackProcess(tmp_path_factory.mktemp("no-messages-tab"), messages_tab=False)
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def bot(
    fake_slack: FakeSlackProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BotProcess]:
    directory = tmp_path_factory.mktemp("messages-tab")
    process = BotProcess(
        directory, sqlite_url(directory), fake_slack.url, write_policy(directory, DM_POLICY)
    )
    yield process
    process.stop()


def dms(state: JSON) -> list[JSON]:
    return [m for ch in state["channels"] if ch["is_im"] for m in ch["messages"]]


def test_both_manifests_show_the_messages_tab_read_only() -> None:
    for name in ("manifest.yml", "manifest-http.yml"):
        home = yaml.safe_load((ROOT / name).read_text())["features"]["app_home"]
        assert (home["messages_tab_enabled"], home["messages_tab_read_only_enabled"]) == (
            True,
            True,
        ), name


async def test_with_the_tab_hidden_what_a_dm_would_say_is_said_in_the_thread(e2e: E2E) -> None:
    run = await e2e.refund("cust-no-dms")
    waits = messages.waits_for_you("Refund 42.50 to cust-no-dms")
    asked = await e2e.replies(
        run.card, lambda r: len([t for t in r if waits in t]) == 2, "the approvers told in thread"
    )
    assert sorted(t for t in asked if waits in t) == sorted(
        f"<@{user}> {waits}" for user in ("U0ALICE", BOB)
    )

    await e2e.slack.click(BOB, run.card["channel"], run.card["ts"], APPROVE)
    told = await e2e.replies(
        run.card, lambda r: any(t.startswith(f"<@{CAROL}> ") for t in r), "the requester told"
    )
    (to_carol,) = [t for t in told if t.startswith(f"<@{CAROL}> ")]
    assert "approved" in to_carol and BOB in to_carol
    await e2e.idle()
    state = await e2e.slack.state()
    assert dms(state) == []  # Slack took none
    assert e2e.db.jobs(thread_id=run.thread_id, undone=True) == []  # and nothing waits
    assert e2e.db.run(run.thread_id)["status"] == "completed"
