"""`ToolNode(handle_tool_errors=...)` in each form LangGraph takes (True, a string, a function,
an exception class or a tuple of them, False), a tool that handles its own errors, and
`tools_condition` with `messages_key`, in a real graph."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, ToolException, tool
from typing_extensions import TypedDict

from graphs import START, StateGraph
from graphs.graph.message import add_messages
from graphs.prebuilt import TOOL_CALL_ERROR_TEMPLATE, ToolInvocationError, ToolNode, tools_condition


@tool
def refund(amount: int, order: str) -> str:
    """Refund an order; 0 is refused by the payment provider."""
    if amount == 0:
        raise ValueError("amount must be positive")
    return f"refunded {amount}"


@tool
def email(to: str) -> str:
    """Email; the mail server refuses an address without @."""
    if "@" not in to:
        raise ToolException("mail server refused the address")
    return "sent"


CALLS = [
    {"name": "refund", "args": {"amount": 0, "order": "A1"}, "id": "c1", "type": "tool_call"},
    {"name": "email", "args": {"to": "ann"}, "id": "c2", "type": "tool_call"},
    {"name": "refund", "args": {"amount": 5}, "id": "c3", "type": "tool_call"},  # no order
]


def _run(node: ToolNode, calls: list[Any], *, asynchronous: bool = False) -> list[ToolMessage]:
    state = {"messages": [AIMessage("", tool_calls=calls)]}
    out = asyncio.run(node.ainvoke(state)) if asynchronous else node.invoke(state)
    return list(out["messages"])


def _every(e: ValueError | ToolException) -> str:
    return f"handled {type(e).__name__}"


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(
    "handler", [True, (ValueError, ToolException), _every], ids=["true", "tuple", "function"]
)
def test_handlers_of_every_error_answer_each_call_with_an_error(
    handler: Any, asynchronous: bool
) -> None:
    told = _run(
        ToolNode([refund, email], handle_tool_errors=handler), CALLS, asynchronous=asynchronous
    )
    assert [(m.tool_call_id, m.status) for m in told] == [
        ("c1", "error"),
        ("c2", "error"),
        ("c3", "error"),
    ]
    if handler is _every:
        # an argument error is a ToolException too (ToolInvocationError), as LangGraph's
        assert [m.content for m in told] == [
            "handled ValueError",
            "handled ToolException",
            "handled ToolInvocationError",
        ]
    else:
        assert told[0].content == TOOL_CALL_ERROR_TEMPLATE.format(
            error=repr(ValueError("amount must be positive"))
        )
        assert told[1].content == TOOL_CALL_ERROR_TEMPLATE.format(
            error=repr(ToolException("mail server refused the address"))
        )
        assert "order: Field required" in str(told[2].content)


def _value_errors(e: ValueError) -> str:
    return "bad value"


@pytest.mark.parametrize("handler", [(ValueError,), ValueError, _value_errors])
def test_a_handler_of_some_errors_lets_the_others_fail_the_node(handler: Any) -> None:
    node = ToolNode([refund, email], handle_tool_errors=handler)
    [told] = _run(node, CALLS[:1])
    assert told.status == "error"
    with pytest.raises(ToolException, match="mail server refused the address"):
        _run(node, CALLS[:2])


def test_a_string_answers_every_error_and_false_none() -> None:
    told = _run(ToolNode([refund, email], handle_tool_errors="try again later"), CALLS)
    assert [m.content for m in told] == ["try again later"] * 3
    with pytest.raises(ValueError, match="amount must be positive"):
        _run(ToolNode([refund], handle_tool_errors=False), CALLS[:1])
    with pytest.raises(ToolInvocationError):  # not even the model's argument errors
        _run(ToolNode([refund], handle_tool_errors=False), CALLS[2:])


def test_the_default_answers_argument_errors_and_handlers_of_exception_tool_errors_them() -> None:
    [told] = _run(ToolNode([refund]), CALLS[2:])
    assert told.status == "error" and str(told.content).startswith("Error invoking tool 'refund'")
    [told] = _run(ToolNode([refund], handle_tool_errors=(ToolException,)), CALLS[2:])
    assert told.status == "error"  # ToolInvocationError is a ToolException


def test_a_handler_annotated_with_something_else_is_refused() -> None:
    def wrong(e: str) -> str:
        return e

    with pytest.raises(ValueError) as e:
        ToolNode([refund], handle_tool_errors=wrong)
    assert str(e.value) == (
        "ToolNode: handle_tool_errors=wrong has its error parameter 'e' annotated <class 'str'>, "
        "which is not an exception class or a union of them; annotate it with the errors it "
        "handles (`e: ValueError`, `e: ValueError | TypeError`), or leave it unannotated to "
        "handle every error"
    )


def test_a_tool_handling_its_own_errors_answers_with_an_error_message() -> None:
    def lookup(order: str) -> str:
        """Look an order up."""
        raise ToolException("order system down")

    own = StructuredTool.from_function(lookup, handle_tool_error="lookup is down, try later")
    call = {"name": "lookup", "args": {"order": "A1"}, "id": "c9", "type": "tool_call"}
    # its own handling wins over the node's
    [told] = _run(ToolNode([own], handle_tool_errors="node's text"), [call])
    assert (told.status, told.content, told.tool_call_id) == (
        "error",
        "lookup is down, try later",
        "c9",
    )


class Chat(TypedDict):
    chat: Annotated[list[AnyMessage], add_messages]


def test_tools_condition_and_the_tool_node_read_another_messages_key() -> None:
    def model(state: Chat) -> dict[str, Any]:
        if isinstance(state["chat"][-1], ToolMessage):
            return {"chat": [AIMessage(f"done: {state['chat'][-1].content}")]}
        call = {"name": "refund", "args": {"amount": 3, "order": "A1"}, "id": "c1"}
        return {"chat": [AIMessage("", tool_calls=[call])]}

    g = StateGraph(Chat)
    g.add_node("model", model)
    g.add_node("tools", ToolNode([refund], messages_key="chat"))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", partial(tools_condition, messages_key="chat"))
    g.add_edge("tools", "model")
    out = g.compile().invoke({"chat": [HumanMessage("refund A1")]})
    assert [type(m).__name__ for m in out["chat"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert out["chat"][-1].content == "done: refunded 3"

    with pytest.raises(ValueError) as e:
        tools_condition({"chat": []}, messages_key="chat")
    assert str(e.value).startswith(
        "tools_condition: the input state's messages (under 'chat') are empty"
    )
    with pytest.raises(ValueError, match="no messages found in the input state under 'messages'"):
        tools_condition({"chat": [AIMessage("hi")]})
