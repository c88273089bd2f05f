"""`before_call` returning `Edited`: the call runs with the replacement's arguments, once, and
its `ToolMessage` starts with the hook's note (so the model knows what ran)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from graphs.prebuilt import Edited, ToolNode


def _ai(**args: Any) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "pay", "args": args, "id": "c1", "type": "tool_call"}]
    )


def test_an_edited_call_runs_with_the_new_arguments_and_says_so() -> None:
    ran: list[int] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(amount)
        return f"paid {amount}"

    def hook(call: Any, state: Any, config: Any) -> Any:
        return Edited({**call, "args": {"amount": 40}}, "Edited: amount 40, not 42.")

    out = ToolNode([pay], before_call=hook).invoke(
        {"messages": [HumanMessage("x"), _ai(amount=42)]}
    )
    (msg,) = out["messages"]
    assert ran == [40]
    assert (msg.tool_call_id, msg.status) == ("c1", "success")
    assert msg.content == "Edited: amount 40, not 42.\n\npaid 40"


def test_an_edited_call_keeps_its_id() -> None:
    @tool
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    def hook(call: Any, state: Any, config: Any) -> Any:
        return Edited({**call, "id": "other"}, "note")

    with pytest.raises(ValueError, match="a replacement keeps the call's id"):
        ToolNode([pay], before_call=hook).invoke({"messages": [_ai(amount=1)]})
