"""Managed values (LangGraph's `langgraph.managed`): state keys the runtime computes for each
node run, never written, stored or returned.

```python
class State(TypedDict):
    messages: Annotated[list, add_messages]
    remaining_steps: RemainingSteps
```

A node reading `state["remaining_steps"]` gets how many supersteps this invocation may still
run, counting the node's own (the `recursion_limit` less the steps already run), so that it
can stop in good order before `GraphRecursionError`. What a node returns under such a key is
dropped.
"""

from __future__ import annotations

from typing import Annotated

__all__ = ["IsLastStep", "ManagedValue", "RemainingSteps"]


class ManagedValue:
    """A state key's annotation (`Annotated[int, RemainingStepsManager]`) saying the runtime
    computes its value for each node run; subclasses say how, from the steps left."""

    @staticmethod
    def get(remaining: int) -> object:
        """The key's value for a node of a step with `remaining` steps left, its own included."""
        raise NotImplementedError


class RemainingStepsManager(ManagedValue):
    """`RemainingSteps`: the steps this invocation may still run, the node's own included."""

    @staticmethod
    def get(remaining: int) -> int:
        return remaining


class IsLastStepManager(ManagedValue):
    """`IsLastStep`: True in the last step the recursion limit allows."""

    @staticmethod
    def get(remaining: int) -> bool:
        return remaining == 1


RemainingSteps = Annotated[int, RemainingStepsManager]
IsLastStep = Annotated[bool, IsLastStepManager]
