"""`signoff report`: what the record says about how people decide. Requests are asked and decided
through the governance core with a clock the test moves; the report is the `signoff` command in
a process of its own, reading the same database (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from bot.approvals.policy import parse_policy
from bot.approvals.report import Asked, summarize
from tests.kit.flows import POLICY
from tests.kit.signoff import Kit


async def refund(kit: Kit, amount: float) -> str:
    """Ask for a refund that a person must decide: its approval's id."""
    report = await kit.ask("send_refund", {"customer_id": "cust_1", "amount": amount})
    (approval_id,) = report.approvals
    return approval_id


async def decided_record(kit: Kit) -> dict[str, str]:
    """Small refunds by the rule; refunds asked of people, decided at known speeds."""
    for _ in range(3):  # the demo's rule approves these: nobody is asked
        await kit.ask("send_refund", {"customer_id": "cust_1", "amount": 3})
    ids = {}
    # Alice approves 10.00 five seconds after it is asked, without opening the payload.
    ids["glance"] = await refund(kit, 10)
    kit.clock.advance(5)
    await kit.app.vote(ids["glance"], "U_ALICE", True)
    # Bob opens the payload first, then approves 20.00 just as fast: he read it.
    ids["read"] = await refund(kit, 20)
    kit.clock.advance(3)
    await kit.app.payload_viewed(await kit.app.get(ids["read"]), "U_BOB")
    kit.clock.advance(3)
    await kit.app.vote(ids["read"], "U_BOB", True)
    # 30.00 waits two hours, 50.00 a day and a half; 200.00 is rejected after half an hour.
    for name, amount, after, approve in (
        ("slow", 30, 7200, True),
        ("slower", 50, 129600, True),
        ("big", 200, 1800, False),
    ):
        ids[name] = await refund(kit, amount)
        kit.clock.advance(after)
        await kit.app.vote(ids[name], "U_ALICE", approve, note="" if approve else "too much")
    return ids


def cli(kit: Kit, *args: str) -> str:
    done = kit.cli("report", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_report_shows_how_people_decide_and_the_rule_they_would_support(
    kit: Kit, tmp_path: Path
) -> None:
    ids = await decided_record(kit)

    data = json.loads(await asyncio.to_thread(cli, kit, "--json"))
    (refunds,) = data["actions"]
    assert {k: refunds[k] for k in ("action", "requests", "auto_approved", "approved")} == {
        "action": "send_refund",
        "requests": 8,
        "auto_approved": 3,
        "approved": 4,
    }
    assert (refunds["rejected"], refunds["approval_rate"]) == (1, 0.8)
    # decided after 5 s, 6 s, 30 min, 2 h and 36 h: the median is the third, p90 the last
    assert refunds["decide_seconds"] == {"median": 1800.0, "p90": 129600.0}
    # Alice's glance counts; Bob's approval as fast does not: he opened the payload first
    assert refunds["quick_approvals"] == [ids["glance"]]
    (suggested,) = refunds["suggestions"]
    assert (suggested["field"], suggested["le"], suggested["taken"], suggested["of"]) == (
        "amount",
        50.0,
        4,
        5,
    )

    # The suggested rule is policy text that loads, and decides what people approved.
    policy = parse_policy(POLICY + "\n" + suggested["toml"])
    rules = policy.actions["send_refund"].auto_approve
    assert [r.matches({"customer_id": "c", "amount": 50}) for r in rules[1:]] == [True]
    assert [r.matches({"customer_id": "c", "amount": 200}) for r in rules[1:]] == [False]

    page = tmp_path / "report.html"
    text = await asyncio.to_thread(cli, kit, "--html", str(page))
    assert re.search(
        r"^send_refund\s+8\s+3\s+4\s+1\s+0\s+80%\s+30m\s+1d12h\s+1$", text, re.MULTILINE
    )
    assert ids["glance"] in text and "le = 50 }" in text
    assert tomllib.loads(
        text[text.index("[[actions.") : text.index("\nwrote")]
    )  # the printed rule is TOML as is
    assert text.rstrip().endswith(f"wrote {page}")

    html = page.read_text(encoding="utf-8")
    outside = OutsideReferences()
    outside.feed(html)
    assert outside.found == []  # charts drawn in the file: nothing is loaded from anywhere
    assert html.count("<svg") == 2  # how its requests ended, and how long people took
    assert "<title>approved: 4</title>" in html and "<title>by rule: 3</title>" in html
    assert ids["glance"] in html


async def test_a_period_with_nothing_asked_says_so(kit: Kit) -> None:
    await refund(kit, 10)
    kit.clock.advance(7200)
    await asyncio.to_thread(kit.cli, "db", "upgrade")
    done = await asyncio.to_thread(kit.cli, "report", "--since", "1h", "--action", "delete_row")
    assert (done.returncode, done.stdout.strip()) == (
        0,
        "no approvals were requested in the last 1h",
    )
    wrong = await asyncio.to_thread(kit.cli, "report", "--since", "a week")
    assert wrong.returncode == 2
    assert "durations are written like" in wrong.stderr and "'a week'" in wrong.stderr


def asked(n: int, action: str, tier: str, amount: float, status: str = "approved") -> list[Asked]:
    return [
        Asked(
            id=f"{action}-{i}",
            action=action,
            tier=tier,
            requester="U_CAROL",
            args={"amount": amount + i},
            status=status,
            by=("U_ALICE",),
            created_at=0.0,
            decided_at=60.0,
        )
        for i in range(n)
    ]


def test_no_rule_is_suggested_for_a_critical_action_or_on_too_few_decisions() -> None:
    policy = parse_policy(POLICY)
    figures = {
        f.action: f
        for f in summarize(
            asked(10, "delete_row", "critical", 1)
            + asked(2, "deploy", "high", 1)
            + asked(5, "release_payment", "high", 1)
            + asked(1, "release_payment", "high", 0, status="rejected"),
            policy,
        )
    }
    assert figures["delete_row"].approved == 10 and figures["delete_row"].suggestions == ()
    assert figures["deploy"].suggestions == ()  # two decisions support nothing
    # a rejection below every approval leaves no threshold people always approved under
    assert figures["release_payment"].suggestions == ()


class OutsideReferences(HTMLParser):
    """Every attribute of the page that would load something: a `src`, an `href`, a `url(...)`
    in a style, or an `@import`."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[Any] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href", "srcset", "data", "action") or "url(" in (value or ""):
                self.found.append((tag, name, value))

    def handle_data(self, data: str) -> None:
        if "@import" in data or "url(" in data:
            self.found.append(("text", data[:80]))
