"""`before_call` returning `RunsAfter`: a call runs only once the calls it names have run, and
not at all when one of them failed; the model is told which. The outputs keep the model's order.
Both `invoke` (one call after another) and `ainvoke` (concurrently), with the email proposed
before the refund it announces, as a model may order them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import ToolException, tool

from graphs.prebuilt import Edited, Rejected, RunsAfter, ToolNode


def _turn(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "messages": [
            AIMessage(
                "",
                tool_calls=[
                    {"name": name, "args": args, "id": call_id, "type": "tool_call"}
                    for name, call_id, args in calls
                ],
            )
        ]
    }


EMAIL_FIRST = _turn(
    ("email", "c_email", {"to": "ann@example.com"}),
    ("refund", "c_refund", {"amount": 40}),
)


def _tools(events: list[str], *, declined: bool = False) -> list[Any]:
    @tool
    def refund(amount: int) -> str:
        """Refund."""
        events.append("refund started")
        time.sleep(0.05)  # a payment provider's round trip (under ainvoke, in a thread)
        if declined:
            raise ToolException("the payment provider declined it")
        events.append(f"refunded {amount}")
        return f"refunded {amount}"

    @tool
    def email(to: str) -> str:
        """Email."""
        events.append(f"emailed {to}")
        return "sent"

    refund.handle_tool_error = True  # a declined refund is an error message, not a crash
    return [refund, email]


def _email_after_refund(call: Any, state: Any, config: Any) -> Any:
    return RunsAfter(("c_refund",)) if call["name"] == "email" else None


def _run(node: ToolNode, input: Any, use_async: bool) -> dict[str, Any]:
    if use_async:
        return asyncio.run(node.ainvoke(input))  # type: ignore[no-any-return]
    return node.invoke(input)  # type: ignore[no-any-return]


def _said(out: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(m.tool_call_id, m.status, str(m.content)) for m in out["messages"]]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_the_email_runs_after_the_refund_it_announces_and_answers_keep_the_model_s_order(
    use_async: bool,
) -> None:
    events: list[str] = []
    node = ToolNode(_tools(events), before_call=_email_after_refund)
    out = _run(node, EMAIL_FIRST, use_async)
    assert events == ["refund started", "refunded 40", "emailed ann@example.com"]
    assert _said(out) == [
        ("c_email", "success", "sent"),
        ("c_refund", "success", "refunded 40"),
    ]


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_failed_refund_keeps_the_email_from_going_out_and_the_model_is_told(
    use_async: bool,
) -> None:
    events: list[str] = []
    node = ToolNode(_tools(events, declined=True), before_call=_email_after_refund)
    out = _run(node, EMAIL_FIRST, use_async)
    assert events == ["refund started"]  # no email
    [(email_id, email_status, email_said), (refund_id, refund_status, _)] = _said(out)
    assert (refund_id, refund_status) == ("c_refund", "error")
    assert (email_id, email_status) == ("c_email", "error")
    assert email_said == (
        "Not run: it runs only after call c_refund (refund), which did not run or failed: "
        "the payment provider declined it"
    )


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_rejected_refund_keeps_the_email_in_and_an_edited_email_runs_edited(
    use_async: bool,
) -> None:
    events: list[str] = []

    def hook(call: Any, state: Any, config: Any) -> Any:
        if call["name"] == "refund":
            return Rejected("Rejected by Bob: not returned")
        edited = {**call, "args": {"to": "ann@example.org"}}
        return RunsAfter(("c_refund",), Edited(edited, "Edited: to ann@example.org."))

    out = _run(ToolNode(_tools(events), before_call=hook), EMAIL_FIRST, use_async)
    assert events == []
    assert _said(out)[0][1:] == (
        "error",
        (
            "Not run: it runs only after call c_refund (refund), which did not run or failed: "
            "Rejected by Bob: not returned"
        ),
    )

    # the refund approved, the edited email runs with its edit and says so
    events.clear()

    def approve_refund(call: Any, state: Any, config: Any) -> Any:
        return None if call["name"] == "refund" else hook(call, state, config)

    out = _run(ToolNode(_tools(events), before_call=approve_refund), EMAIL_FIRST, use_async)
    assert events == ["refund started", "refunded 40", "emailed ann@example.org"]
    assert _said(out)[0] == ("c_email", "success", "Edited: to ann@example.org.\n\nsent")


@pytest.mark.parametrize("use_async", [False, True], ids=["invoke", "ainvoke"])
def test_calls_that_each_run_after_the_other_run_neither_and_say_so(use_async: bool) -> None:
    events: list[str] = []

    def hook(call: Any, state: Any, config: Any) -> Any:
        return RunsAfter(("c_refund",) if call["name"] == "email" else ("c_email",))

    out = _run(ToolNode(_tools(events), before_call=hook), EMAIL_FIRST, use_async)
    assert events == []
    reason = "Not run: it and another call of this turn each run only after the other"
    assert [m[1:] for m in _said(out)] == [("error", reason), ("error", reason)]


def test_a_call_named_that_the_node_does_not_have_is_not_waited_on() -> None:
    """`create_react_agent(version="v2")` gives each call a task of its own: there the call it
    runs after is in another task, and this node runs its own call as it is."""
    events: list[str] = []
    node = ToolNode(_tools(events), before_call=lambda c, s, cfg: RunsAfter(("elsewhere",)))
    out = node.invoke(_turn(("email", "c_email", {"to": "ann@example.com"})))
    assert events == ["emailed ann@example.com"]
    assert isinstance(out["messages"][0], ToolMessage)
