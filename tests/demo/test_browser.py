"""The sandbox in a real browser: a person starts runs, clicks, types into modals and `/agent`.

Each test drives `signoff demo` (a subprocess: the sandbox page plus the real bot, on SQLite)
through Chromium, as one of the demo people, and leaves a screenshot in `test-output/demo/`.
`SIGNOFF_WRITE_DOCS=1` also writes the README's screenshot, `docs/sandbox.png`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

expect.set_options(timeout=15_000)

DOCS_SHOT = Path(__file__).resolve().parents[2] / "docs" / "sandbox.png"


class Sandbox:
    """The page, seen and used by one person at a time (the "You are" switch)."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def be(self, user_id: str) -> None:
        self.page.select_option("#who", user_id)

    def start(self, workflow: str = "refund", *, channel: str | None = None, **inputs: Any) -> None:
        """Fill in and send the "Start a workflow" form; wait for its confirmation."""
        self.page.get_by_role("button", name="+ Start a workflow").click()
        form = self.page.locator("#start-form")
        form.locator("#start-workflow").select_option(workflow)
        for name, value in inputs.items():
            form.locator(f"#start-{name}").fill(str(value))
        if channel:
            form.locator("#start-channel").select_option(channel)
        form.get_by_role("button", name="Start").click()
        expect(form).to_have_count(0)

    def card(self, title: str) -> Locator:
        """The channel message whose header holds `title`."""
        header = self.page.locator(".block.header", has_text=title)
        return self.page.locator("#messages .msg", has=header)

    def ephemeral(self, text: str) -> Locator:
        return self.page.locator("#messages .msg.ephemeral", has_text=text)

    def modal(self) -> Locator:
        return self.page.locator("#modal-layer .modal")

    def say(self, text: str) -> None:
        box = self.page.locator("#composer-input")
        box.fill(text)
        box.press("Enter")

    def open_thread(self, card: Locator) -> Locator:
        card.locator(".replies-link").click()
        return self.page.locator("#thread")


@pytest.fixture
def sandbox(browser: Any, demo_url: str, shot: Path) -> Iterator[Sandbox]:
    """A fresh page on the demo as Carol; its screenshot is taken when the test ends."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    origin = demo_url.rstrip("/")
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(demo_url + "?as=U_CAROL")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    yield Sandbox(page)
    page.screenshot(path=str(shot))
    context.close()
    assert not errors, errors
    outside = [u for u in requests if not u.startswith((origin + "/", "data:"))]
    assert not outside, f"the page requested something outside the sandbox: {outside}"


def test_a_refund_started_from_the_page_posts_its_card(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-start", amount="42.50", reason="damaged item")
    card = sandbox.card("Refund 42.50 to cust-start")
    expect(card).to_be_visible()
    expect(card).to_contain_text("asks to run send_refund")
    expect(card.locator(".mention", has_text="@Carol").first).to_be_visible()
    for name in ("Approve", "Reject", "Edit", "Full payload"):
        expect(card.get_by_role("button", name=name)).to_be_visible()
    expect(card.get_by_role("button", name="Approve")).to_have_class("btn btn-primary")
    expect(card.get_by_role("button", name="Reject")).to_have_class("btn btn-danger")


def test_an_approver_approves_and_the_thread_hears_the_refund_ran(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-approve", amount="42.50")
    card = sandbox.card("Refund 42.50 to cust-approve")
    expect(card).to_be_visible()
    sandbox.be("U_ALICE")
    card.get_by_role("button", name="Approve").click()
    expect(card.locator(".block.header")).to_contain_text("✅")
    expect(card).to_contain_text("Approved by @Alice")
    expect(card.locator(".actions")).to_have_count(0)
    # the outcome is a thread reply also sent to the channel: shown there, marked as a reply
    notice = sandbox.page.locator("#messages .msg", has_text="refunded 42.50 to cust-approve")
    expect(notice.locator(".broadcast-of")).to_have_text("replied to a thread")
    thread = sandbox.open_thread(card)
    expect(thread).to_contain_text("completed")
    expect(thread).to_contain_text("refunded 42.50 to cust-approve")


def test_a_rejection_asks_for_a_reason_in_a_modal(sandbox: Sandbox, shot: Path) -> None:
    sandbox.start("refund", customer_id="cust-reject", amount="19.99")
    card = sandbox.card("Refund 19.99 to cust-reject")
    sandbox.be("U_BOB")
    card.get_by_role("button", name="Reject").click()
    modal = sandbox.modal()
    expect(modal).to_be_visible()
    modal.locator(".modal-foot .btn-primary").click()  # no reason yet
    expect(modal.locator(".input-error")).to_contain_text("Please complete this required field.")
    sandbox.page.screenshot(path=str(shot.with_name(shot.stem + "-modal.png")))
    modal.locator("textarea").fill("duplicate of an earlier order")
    modal.locator(".modal-foot .btn-primary").click()
    expect(modal).to_have_count(0)
    expect(card.locator(".block.header")).to_contain_text("❌")
    expect(card).to_contain_text("Rejected by @Bob")
    expect(card).to_contain_text("duplicate of an earlier order")
    thread = sandbox.open_thread(card)
    expect(thread).to_contain_text("declined")


def test_an_edited_amount_is_the_one_refunded(sandbox: Sandbox, shot: Path) -> None:
    sandbox.start("refund", customer_id="cust-edit", amount="42.50")
    card = sandbox.card("Refund 42.50 to cust-edit")
    sandbox.be("U_ALICE")
    card.get_by_role("button", name="Edit").click()
    modal = sandbox.modal()
    amount = modal.get_by_label("amount")
    expect(amount).to_have_value("42.50")
    amount.fill("forty")
    modal.locator(".modal-foot .btn-primary").click()
    expect(modal.locator(".input-error").first).to_contain_text("amount must be a number")
    sandbox.page.screenshot(path=str(shot.with_name(shot.stem + "-modal.png")))
    amount.fill("40")
    modal.get_by_label("Note").fill("partial refund: one item kept")
    modal.locator(".modal-foot .btn-primary").click()
    expect(modal).to_have_count(0)
    card = sandbox.card("Refund 40.00 to cust-edit")  # the headline shows the edited amount
    expect(card).to_contain_text("Approved by @Alice")
    expect(sandbox.card("Refund 42.50 to cust-edit")).to_have_count(0)
    thread = sandbox.open_thread(card)
    expect(thread).to_contain_text("refunded 40.00 to cust-edit")
    expect(card).to_contain_text("amount: 42.50 → 40.00")  # the edit line, in the card's format


def test_the_readme_s_agent_asks_one_card_per_turn_and_a_rejected_refund_keeps_its_email(
    sandbox: Sandbox, shot: Path
) -> None:
    """The README's `/agent run support_agent ...`, typed as Carol: the refund and the email
    about it, proposed in one model turn, are on one card, the email marked as running after
    the refund. Bob rejects the refund: the email never goes out, and the agent's reply in the
    thread says who rejected what and why the email did not run."""
    sandbox.say(
        '/agent run support_agent ticket="My kettle from order o-1001 arrived broken." '
        "customer_id=cust_9"
    )
    card = sandbox.card("An agent proposes 2 actions in one turn").filter(
        has_text="Refund 42.50 to cust_9"
    )
    expect(card).to_be_visible()
    expect(card).to_contain_text("Email cust_9@example.com")
    expect(card).to_contain_text("runs after send_refund")
    expect(card.get_by_role("button", name="Approve all")).to_be_visible()
    refund_buttons, email_buttons = card.locator(".actions").nth(0), card.locator(".actions").nth(1)
    expect(refund_buttons.get_by_role("button", name="Reject")).to_be_visible()
    expect(email_buttons.get_by_role("button", name="Approve")).to_be_visible()
    sandbox.page.screenshot(path=str(shot.with_name(shot.stem + "-turn.png")))

    sandbox.be("U_BOB")
    refund_buttons.get_by_role("button", name="Reject").click()
    modal = sandbox.modal()
    modal.locator("textarea").fill("refunded by phone already")
    modal.locator(".modal-foot .btn-primary").click()
    expect(modal).to_have_count(0)
    expect(card).to_contain_text("Rejected by @Bob")
    expect(card.get_by_role("button", name="Approve all")).to_have_count(0)
    thread = sandbox.open_thread(card)
    expect(thread).to_contain_text("U_BOB rejected the call to send_refund")
    expect(thread).to_contain_text("refunded by phone already")
    expect(thread).to_contain_text("email_customer runs only after send_refund")
    expect(thread).not_to_contain_text("sent the email")


def test_a_grant_from_the_card_approves_the_next_refund_for_that_customer(
    sandbox: Sandbox, shot: Path
) -> None:
    sandbox.start("refund", customer_id="cust-grant", amount="40")
    card = sandbox.card("Refund 40.00 to cust-grant")
    sandbox.be("U_ALICE")
    card.get_by_role("button", name="Allow more like this…").click()
    modal = sandbox.modal()
    expect(modal).to_contain_text("let up to 5 more like it be approved without asking anyone")
    modal.get_by_label("Allow up to this many more like it").select_option("2")
    modal.get_by_label("For at most").select_option("3600")
    sandbox.page.screenshot(path=str(shot.with_name(shot.stem + "-modal.png")))
    modal.locator(".modal-foot .btn-primary").click()
    expect(modal).to_have_count(0)
    expect(card).to_contain_text("Approved by @Alice")
    sandbox.be("U_CAROL")
    sandbox.start("refund", customer_id="cust-grant", amount="25")
    later = sandbox.card("Refund 25.00 to cust-grant")
    expect(later).to_contain_text("Approved under @Alice's grant (1 of 2 left, until")
    expect(later.locator(".actions")).to_have_count(0)
    sandbox.start("refund", customer_id="cust-grant", amount="60")  # more than approved: asked
    expect(
        sandbox.card("Refund 60.00 to cust-grant").get_by_role("button", name="Reject")
    ).to_be_visible()

    # Alice revokes it on Home; the next refund for that customer is asked again
    sandbox.be("U_ALICE")
    sandbox.page.locator("#app-list .nav-item").click()
    home = sandbox.page.locator("#messages .home")
    expect(home).to_contain_text("Live grants you may revoke")
    home.get_by_role("button", name="Revoke").click()
    expect(home).to_contain_text("is revoked: it approves nothing more")
    expect(home.get_by_role("button", name="Revoke")).to_have_count(0)
    sandbox.page.locator("#channel-list .nav-item", has_text="approvals").click()
    sandbox.be("U_CAROL")
    sandbox.start("refund", customer_id="cust-grant", amount="5.50")
    card = sandbox.card("Refund 5.50 to cust-grant")
    expect(card.get_by_role("button", name="Reject")).to_be_visible()


def test_approving_ones_own_request_is_refused_privately(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-self", amount="42.50")
    card = sandbox.card("Refund 42.50 to cust-self")
    card.get_by_role("button", name="Approve").click()
    refusal = sandbox.ephemeral("approve your own request")
    expect(refusal).to_be_visible()
    expect(refusal).to_contain_text("Only visible to you")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()  # still pending
    sandbox.be("U_ALICE")
    expect(sandbox.ephemeral("approve your own request")).to_have_count(0)
    sandbox.be("U_CAROL")
    expect(refusal).to_be_visible()


def test_agent_status_typed_in_the_message_box_lists_the_pending_approval(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-status", amount="42.50")
    expect(sandbox.card("Refund 42.50 to cust-status")).to_be_visible()
    sandbox.be("U_BOB")
    sandbox.say("/agent status")
    answer = sandbox.page.locator("#messages .msg.ephemeral", has_text="Waiting on you")
    expect(answer).to_be_visible()
    expect(answer).to_contain_text("Refund 42.50 to cust-status")
    # since when it waits, as a Slack date token: its fallback shown, the reader's time on hover
    since = answer.locator(".date").first
    expect(since).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$"))
    expect(since).to_have_attribute("title", re.compile(r"\d"))
    expect(answer).not_to_contain_text("<!date")


def test_two_of_ops_delete_a_row_after_a_confirm_dialog(sandbox: Sandbox) -> None:
    sandbox.start("delete_row", table="users", row_id="4711", reason="GDPR erasure request")
    card = sandbox.card("Delete row 4711 of users")
    sandbox.be("U_DAVE")
    card.get_by_role("button", name="Approve").click()
    dialog = sandbox.page.locator("#dialog-layer .confirm")
    expect(dialog).to_be_visible()  # critical: Slack's confirm dialog first
    dialog.locator(".btn-danger, .btn-primary").last.click()
    expect(card).to_contain_text("1 of 2")
    card.get_by_role("button", name="Approve").click()  # Dave again: one person, one vote
    dialog.locator(".btn-danger, .btn-primary").last.click()
    expect(sandbox.ephemeral("already voted")).to_be_visible()
    sandbox.be("U_ERIN")
    card.get_by_role("button", name="Approve").click()
    dialog.locator(".btn-danger, .btn-primary").last.click()
    expect(card).to_contain_text("Approved by @Dave and @Erin")
    expect(sandbox.open_thread(card)).to_contain_text("deleted row 4711 of users")


def test_the_form_says_when_the_policy_does_not_let_you_start_a_workflow(sandbox: Sandbox) -> None:
    sandbox.be("U_DAVE")  # ops: may delete rows, not ask for refunds
    sandbox.page.get_by_role("button", name="+ Start a workflow").click()
    form = sandbox.page.locator("#start-form")
    expect(form).to_contain_text("Who may start it: @support, @finance")
    form.get_by_role("button", name="Start").click()
    expect(form.locator(".dialog-error")).to_contain_text("U_DAVE may not start 'refund'")


def test_the_home_tab_lists_what_waits_on_you(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-home", amount="42.50")
    sandbox.be("U_BOB")
    sandbox.page.locator("#app-list .nav-item").click()
    home = sandbox.page.locator("#messages .home")
    expect(home).to_contain_text("Waiting on you")
    expect(home).to_contain_text("Refund 42.50 to cust-home")
    expect(home).to_contain_text("waiting since")
    expect(home.locator(".date").first).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$"))
    expect(home).not_to_contain_text("<!date")


def test_readme_screenshot_a_pending_card_and_a_decided_one(sandbox: Sandbox, shot: Path) -> None:
    # In #general, where no other test posts, so the picture shows these two cards only.
    sandbox.start(
        "refund", channel="C_GENERAL",
        customer_id="cust_7", order_id="o-2041", amount="42.50", reason="damaged item",
    )  # fmt: skip
    decided = sandbox.card("Refund 42.50 to cust_7")
    sandbox.be("U_ALICE")
    decided.get_by_role("button", name="Approve").click()
    expect(decided).to_contain_text("Approved by @Alice")
    sandbox.be("U_CAROL")
    sandbox.start(
        "refund", channel="C_GENERAL",
        customer_id="cust_8", order_id="o-2042", amount="120.00", reason="late delivery",
    )  # fmt: skip
    pending = sandbox.card("Refund 120.00 to cust_8")
    expect(pending.get_by_role("button", name="Approve")).to_be_visible()
    sandbox.be("U_BOB")
    sandbox.open_thread(decided)
    expect(sandbox.page.locator("#thread")).to_contain_text("refunded 42.50 to cust_7")
    sandbox.page.set_viewport_size({"width": 1400, "height": 1160})
    sandbox.page.evaluate("document.querySelector('#toasts').replaceChildren()")
    sandbox.page.locator("#messages").evaluate("box => { box.scrollTop = box.scrollHeight; }")
    sandbox.page.mouse.move(0, 0)
    sandbox.page.screenshot(path=str(shot))
    if os.environ.get("SIGNOFF_WRITE_DOCS"):
        DOCS_SHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(shot, DOCS_SHOT)


ESCAPED_SAMPLES = [
    "*not bold* _not italic_ ~not struck~ `not code`",
    "<@U_ALICE> <!channel> <https://example.com|click> & co",
    ":white_check_mark: done",
    "> not a quote\n>> nor this",
    "order_id a*b 2*3*4 **",
]


def test_mrkdwn_renders_like_slack(sandbox: Sandbox) -> None:
    from bot.slack import messages

    render = """([text, me]) => {
        const d = document.createElement("div");
        d.innerHTML = SlackText.mrkdwn(text, {users: {U_ALICE: {name: "alice", real_name: "Alice"}}, me});
        document.body.append(d);
        const out = [d.innerHTML, d.innerText];
        d.remove();
        return out;
    }"""
    page = sandbox.page

    def html(text: str) -> str:
        return page.evaluate(render, [text, "U_ALICE"])[0]

    assert (
        html("*bold* _it_ ~gone~ `x<y`") == "<b>bold</b> <i>it</i> <s>gone</s> <code>x&lt;y</code>"
    )
    assert html("<@U_ALICE> and <@U_BOB|bob>") == (
        '<span class="mention me" data-user="U_ALICE">@Alice</span> and '
        '<span class="mention" data-user="U_BOB">@bob</span>'
    )
    assert ">2023-11-14 22:13 UTC</span>" in html(
        "<!date^1700000000^{date_short_pretty}|2023-11-14 22:13 UTC>"
    )
    assert html("&lt;script&gt;alert(1)&lt;/script&gt;") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert html("<javascript:alert(1)|x>") == "&lt;javascript:alert(1)|x&gt;"
    assert html("&gt; quoted\nplain") == "<blockquote>quoted</blockquote>plain"
    assert html(":tada: :no_such_emoji:") == "🎉 :no_such_emoji:"
    # Whatever a person typed, escaped by the bot, reads back exactly as typed.
    for text in ESCAPED_SAMPLES:
        shown = page.evaluate(render, [messages.escape(text), "U_BOB"])[1]
        assert shown.replace("\u00ad", "") == text, text


def test_escape_closes_the_modal_wherever_the_focus_is(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-escape", amount="17")
    card = sandbox.card("Refund 17.00 to cust-escape")
    sandbox.be("U_BOB")
    card.get_by_role("button", name="Reject").click()
    expect(sandbox.modal()).to_be_visible()
    sandbox.page.locator("#topbar").click(position={"x": 5, "y": 5}, force=True)  # focus away
    sandbox.page.keyboard.press("Escape")
    expect(sandbox.modal()).to_have_count(0)
    sandbox.page.get_by_role("button", name="+ Start a workflow").click()
    expect(sandbox.page.locator("#start-form")).to_be_visible()
    sandbox.page.keyboard.press("Escape")
    expect(sandbox.page.locator("#start-form")).to_have_count(0)


def test_the_page_works_420_pixels_wide(sandbox: Sandbox, shot: Path) -> None:
    sandbox.page.set_viewport_size({"width": 420, "height": 860})
    sandbox.start("refund", customer_id="cust-narrow", amount="18")
    card = sandbox.card("Refund 18.00 to cust-narrow")
    expect(card).to_be_visible()
    sandbox.be("U_ALICE")
    approve = card.get_by_role("button", name="Approve")
    approve.scroll_into_view_if_needed()
    box = approve.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 420
    width = sandbox.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, f"the page is {width} px wide in a 420 px window"
    approve.click()
    expect(card).to_contain_text("Approved by @Alice")
    thread = sandbox.open_thread(card)
    expect(thread).to_be_visible()
    thread_box = thread.bounding_box()
    assert thread_box is not None and thread_box["width"] <= 420


def test_the_page_works_760_pixels_wide_with_a_thread_open(sandbox: Sandbox) -> None:
    """Beside the sidebar (260 px) a 400 px thread would leave the channel 100 px: at 760 px
    the thread lies over the channel instead, and nothing is wider than the window."""
    sandbox.page.set_viewport_size({"width": 760, "height": 860})
    sandbox.start("refund", customer_id="cust-middle", amount="19")
    card = sandbox.card("Refund 19.00 to cust-middle")
    sandbox.be("U_ALICE")
    card.get_by_role("button", name="Approve").click()
    expect(card).to_contain_text("Approved by @Alice")
    thread = sandbox.open_thread(card)
    expect(thread).to_contain_text("refunded 19.00 to cust-middle")
    main = sandbox.page.locator("#main").bounding_box()
    thread_box = thread.bounding_box()
    assert main is not None and main["width"] >= 480, f"the channel is {main} wide"
    assert thread_box is not None and thread_box["x"] + thread_box["width"] <= 760
    width = sandbox.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 760, f"the page is {width} px wide in a 760 px window"


def test_a_stopped_demo_says_so(sandbox: Sandbox) -> None:
    page = sandbox.page
    page.route("**/_sandbox/**", lambda route: route.abort())  # as if the demo were gone
    page.route("**/_demo/**", lambda route: route.abort())
    page.get_by_role("button", name="+ Start a workflow").click()
    page.locator("#start-form").get_by_role("button", name="Start").click()
    error = page.locator("#start-form .dialog-error")
    expect(error).to_have_text(
        "⚠ the demo has stopped: start signoff demo again and reload this page"
    )  # the command to type shown as code, not between backquotes
    expect(error.locator("code")).to_have_text("signoff demo")
    expect(page.locator("#conn")).to_have_text("● the demo has stopped", timeout=40_000)
    page.unroute("**/_sandbox/**")
    page.unroute("**/_demo/**")


def test_an_open_modal_survives_a_reload_with_what_was_typed(sandbox: Sandbox, shot: Path) -> None:
    page = sandbox.page
    sandbox.start("refund", customer_id="cust-reload", amount="42.50")
    card = sandbox.card("Refund 42.50 to cust-reload")
    sandbox.be("U_ALICE")
    card.get_by_role("button", name="Reject").click()
    reason = sandbox.modal().get_by_label("Why are you rejecting it?")
    reason.fill("the order was never paid")
    page.screenshot(path=str(shot.with_name(shot.stem + "-before.png")))
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    sandbox.be("U_ALICE")  # the page's address says Carol
    expect(sandbox.modal().get_by_label("Why are you rejecting it?")).to_have_value(
        "the order was never paid"
    )
    page.screenshot(path=str(shot.with_name(shot.stem + "-after.png")))
    sandbox.modal().get_by_role("button", name="Cancel").click()
    expect(sandbox.modal()).to_have_count(0)
    page.reload()  # closed, it stays closed, and the card is as clickable as before
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    sandbox.be("U_ALICE")
    expect(sandbox.modal()).to_have_count(0)
    card.get_by_role("button", name="Reject").click()
    expect(sandbox.modal().get_by_label("Why are you rejecting it?")).to_have_value(
        ""
    )  # the draft went with it
    sandbox.modal().get_by_role("button", name="Cancel").click()
    expect(sandbox.modal()).to_have_count(0)


def test_toasts_read_as_sentences(sandbox: Sandbox) -> None:
    sandbox.start("refund", customer_id="cust-toast", amount="42.50")
    toast = sandbox.page.locator("#toasts .toast").last
    expect(toast).to_have_text(re.compile(r"^You started refund: run refund-\w+ is paused\.$"))


def _hover_toolbar_box(sandbox: Sandbox, message: Locator) -> dict[str, float]:
    """Hover `message` on a visible spot; the toolbar's box, asserted below the header."""
    page = sandbox.page
    pane = page.locator("#messages").bounding_box()
    box = message.bounding_box()
    assert pane is not None and box is not None
    top = max(box["y"], pane["y"]) + 20  # a point of the message that is on screen
    page.mouse.move(box["x"] + box["width"] / 2, top)
    toolbar = message.locator(".msg-hover")
    expect(toolbar).to_be_visible()
    bar = toolbar.bounding_box()
    header = page.locator("#main-header").bounding_box()
    assert bar is not None and header is not None
    viewport = page.viewport_size
    assert viewport is not None
    assert bar["y"] >= header["y"] + header["height"], (bar, header)
    assert bar["y"] >= pane["y"], (bar, pane)  # inside the scrolled pane, not clipped by it
    assert bar["y"] + bar["height"] <= viewport["height"]
    assert bar["x"] >= 0 and bar["x"] + bar["width"] <= viewport["width"]
    return bar


def test_the_hover_toolbar_is_not_clipped_under_the_channel_header(
    sandbox: Sandbox, shot: Path
) -> None:
    page = sandbox.page
    page.set_viewport_size({"width": 1100, "height": 560})
    for n in range(4):
        sandbox.start("refund", customer_id=f"cust-hover{n}", amount=f"3{n}")
    expect(sandbox.card("Refund 33.00 to cust-hover3")).to_be_visible()
    messages = page.locator("#messages")
    with_toolbar = page.locator("#messages .msg:has(.msg-hover)")
    messages.evaluate("el => { el.scrollTop = 0; }")
    _hover_toolbar_box(sandbox, with_toolbar.first)
    page.screenshot(path=str(shot.with_name(shot.stem + "-first.png")))
    # Scrolled so that a card's top edge is 30 px above the pane's: hovered, it still shows.
    second = with_toolbar.nth(1)
    messages.evaluate(
        "(el, m) => { el.scrollTop += m.getBoundingClientRect().top"
        " - el.getBoundingClientRect().top + 30; }",
        second.element_handle(),
    )
    pane = messages.bounding_box()
    box = second.bounding_box()
    assert pane is not None and box is not None and box["y"] < pane["y"]  # really scrolled past
    _hover_toolbar_box(sandbox, second)
    page.screenshot(path=str(shot.with_name(shot.stem + "-scrolled.png")))


def test_an_approver_goes_away_and_comes_back_from_the_page(sandbox: Sandbox) -> None:
    # Alice alone: Bob still decides refunds, so the other tests' cards are not escalated.
    sandbox.be("U_ALICE")
    on = re.compile(r"\bon\b")
    for toggle in ("#dnd-toggle", "#vacation-toggle"):
        button = sandbox.page.locator(toggle)
        button.click()
        expect(button).to_have_class(on)
        button.click()
        expect(button).not_to_have_class(on)

    sandbox.say("/agent away until 3d")
    expect(sandbox.ephemeral("You are away until")).to_be_visible()
    sandbox.page.locator("#app-list .nav-item").click()
    home = sandbox.page.locator("#messages .home")
    expect(home).to_contain_text("You are away until")
    home.get_by_role("button", name="I'm back").click()
    expect(home).not_to_contain_text("You are away")
