"""What the programs of `test_langgraph_patterns.py` and `test_langgraph_multiagent.py` share:
their imports from LangGraph or from graphs' LangGraph module paths, and how what they observed
is shown for comparison (random task ids in stream namespaces hidden, messages as their parts).
"""

from __future__ import annotations

import importlib
import re
import warnings
from types import SimpleNamespace
from typing import Any


def imports(dialect: str) -> SimpleNamespace:
    """What a program imports, from LangGraph or from graphs' LangGraph module paths."""
    graph = importlib.import_module(f"{dialect}.graph")
    types = importlib.import_module(f"{dialect}.types")
    prebuilt = importlib.import_module(f"{dialect}.prebuilt")
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        MessagesState=graph.MessagesState,
        START=graph.START,
        END=graph.END,
        add_messages=graph.add_messages,
        InMemorySaver=importlib.import_module(f"{dialect}.checkpoint.memory").InMemorySaver,
        Command=types.Command,
        Send=types.Send,
        interrupt=types.interrupt,
        ToolNode=prebuilt.ToolNode,
        InjectedState=prebuilt.InjectedState,
        tools_condition=prebuilt.tools_condition,
        inbox=importlib.import_module(f"{dialect}.prebuilt.interrupt"),
    )


_TASK_NS = re.compile(r"^([^:|]+):[0-9a-f-]{36}$")


def ns(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """A stream namespace with its task ids hidden; one not of LangGraph's `node:<task id>`
    shape is kept as it is, so the comparison shows it."""
    return tuple(_TASK_NS.sub(r"\1:<task id>", part) for part in namespace)


def shown(value: Any) -> Any:
    """A value as compared: messages as (type, content, tool calls, name), interrupts as their
    values, containers recursively."""
    if hasattr(value, "type") and hasattr(value, "content"):
        calls = [(c["name"], c["args"]) for c in getattr(value, "tool_calls", None) or []]
        return (value.type, value.content, calls, getattr(value, "name", None))
    if type(value).__name__ == "Interrupt":
        return ("Interrupt", shown(value.value))
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(shown(v) for v in value)
    return value


def history(graph: Any, config: Any) -> list[tuple[Any, ...]]:
    """The thread's history, newest first: source, step, next nodes and values."""
    return [
        (s.metadata["source"], s.metadata["step"], s.next, shown(s.values))
        for s in graph.get_state_history(config)
    ]


def on_langgraph(program: Any, *args: Any, **kwargs: Any) -> Any:
    """`program("langgraph")`, LangGraph's deprecation warnings aside (LangGraph 1.x deprecates
    its Agent Inbox types, moved to `langchain.agents`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return program("langgraph", *args, **kwargs)
