"""graphs in LangGraph's dialect, under the names `../shared/bench/workloads.py` takes from an
engine module (`--engine graphs_langgraph_dialect`, with bench/ on the path): the same runtime
reached through LangGraph's module paths (`graphs.graph`, `graphs.types`,
`graphs.checkpoint.memory`), where a graph's dialect is LangGraph's. `bench/dialects.py` times
it beside the top-level API."""

from graphs.checkpoint.memory import InMemorySaver
from graphs.checkpoint.sql import SQLSaver
from graphs.graph import END, START, StateGraph
from graphs.types import Command, interrupt

__all__ = ["END", "START", "Command", "InMemorySaver", "SQLSaver", "StateGraph", "interrupt"]
