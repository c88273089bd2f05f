"""`InMemorySaver` stores an appended list as what was appended, and reads every version back whole."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from graphs import END, START, InMemorySaver, StateGraph
from graphs.checkpoint.memory import _Appended, _Whole


class Chat(TypedDict):
    log: Annotated[list[str], operator.add]
    turns: int


def _turn(state: Chat) -> dict[str, Any]:
    return {"log": [f"turn {state['turns']}: " + "x" * 200], "turns": state["turns"] + 1}


def _chat(saver: InMemorySaver) -> Any:
    b = StateGraph(Chat)
    b.add_node("turn", _turn)
    b.add_edge(START, "turn")
    b.add_conditional_edges("turn", lambda s: END if s["turns"] >= 200 else "turn")
    return b.compile(checkpointer=saver)


def _stored_bytes(saver: InMemorySaver) -> int:
    return sum(
        len(blob.items) if isinstance(blob, (_Whole, _Appended)) else len(str(blob))
        for blob in saver._blobs.values()
    )


def test_a_200_turn_log_costs_what_was_appended_not_the_square() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 500}
    final = _chat(saver).invoke({"log": [], "turns": 0}, config)
    assert len(final["log"]) == 200
    final_bytes = len(json.dumps(final["log"]))
    # Stored whole at every step this would be about 100 times the final list.
    assert _stored_bytes(saver) < 1.5 * final_bytes


def test_every_past_version_reads_back_whole() -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 500}
    graph = _chat(saver)
    graph.invoke({"log": [], "turns": 0}, config)
    history = list(graph.get_state_history(config))
    assert len(history) > 200
    for snapshot in history:
        values = snapshot.values
        if "turns" in values:
            assert len(values["log"]) == values["turns"]
            assert all(entry.startswith(f"turn {i}: ") for i, entry in enumerate(values["log"]))


def test_a_list_replaced_rather_than_extended_is_stored_whole() -> None:
    class Replaced(TypedDict):
        log: list[str]

    b = StateGraph(Replaced)
    b.add_node("shrink", lambda s: {"log": s["log"][1:]})
    b.add_edge(START, "shrink")
    b.add_edge("shrink", END)
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t"}}
    graph = b.compile(checkpointer=saver)
    assert graph.invoke({"log": ["a", "b", "c"]}, config) == {"log": ["b", "c"]}
    assert graph.get_state(config).values == {"log": ["b", "c"]}
    assert not any(isinstance(blob, _Appended) for blob in saver._blobs.values())
