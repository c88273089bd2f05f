"""`langgraph._internal._constants`'s names that graphs gives, under the path ported code
imports.

`StateTask.path` starts with `PULL` or `PUSH` (`(PULL, node)`, `(PUSH, i, False)`), so code that
compares tasks with `PregelTask(id, name, (PULL, node))` ports with an import change; their
public home is `graphs.types`, which takes them from here, as LangGraph's does.

`CONFIG_KEY_NODE_FINISHED` is the one private config key graphs reads: a callable in a run's
`configurable` under it is called with a node's name each time one of the run's tasks (or a
subgraph's, which inherit the config) finishes without an error or a pause, as LangGraph's
runner calls it. The other private keys of LangGraph's are not here: graphs' runtime does not
read or set them.
"""

PULL = "__pregel_pull"
"""The head of the `path` of a task an edge, a router or a `Command(goto=node)` triggered:
`(PULL, node)` (LangGraph's name and value)."""

PUSH = "__pregel_push"
"""The head of the `path` of a task a `Send` started: `(PUSH, i, False)`, i its place among
the frontier's `Send`s (LangGraph's name and value)."""

CONFIG_KEY_NODE_FINISHED = "__pregel_node_finished"
"""`configurable[CONFIG_KEY_NODE_FINISHED] = fn`: `fn(node_name)` as each task finishes (the
key is LangGraph's string, so code that spells it out works too)."""

__all__ = ["CONFIG_KEY_NODE_FINISHED", "PULL", "PUSH"]
