"""`langgraph._internal._constants`'s task path markers, under the path ported code imports.

`StateTask.path` starts with one of them (`(PULL, node)`, `(PUSH, i, False)`), so code that
compares tasks with `PregelTask(id, name, (PULL, node))` ports with an import change. Their
public home is `graphs.types`. LangGraph's private config keys are not here: graphs' runtime
does not read or set them.
"""

from ..types import PULL, PUSH

__all__ = ["PULL", "PUSH"]
