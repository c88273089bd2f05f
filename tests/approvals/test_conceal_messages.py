"""Secrets inside an agent's messages (a tool call's arguments, a text quoting them) are found
and hidden like any other field's: the concealer reads messages as their fields."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage

from bot.approvals._conceal import HIDDEN, Concealer, secret_texts

CARD = "4111 1111 1111 1111"


def test_a_secret_in_a_tool_call_is_learned_and_hidden_where_it_is_quoted() -> None:
    call = {"name": "charge", "args": {"card": CARD, "amount": 5}, "id": "call-1"}
    state = {
        "messages": [
            AIMessage("", tool_calls=[call], id="ai-1"),
            ToolMessage(f"charged {CARD}", tool_call_id="call-1", id="t-1"),
        ]
    }
    assert CARD in secret_texts(state, ["card"])
    shown = Concealer({}, None, secret_texts(state, ["card"])).hide(state)
    ai, tool = shown["messages"]
    assert ai["type"] == "ai" and ai["tool_calls"][0]["args"] == {"card": HIDDEN, "amount": 5}
    assert tool == {
        "type": "tool",
        "content": f"charged {HIDDEN}",
        "tool_call_id": "call-1",
        "id": "t-1",
    }
