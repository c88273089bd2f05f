"""Managed values (LangGraph's `langgraph.managed`): state keys the runtime computes for each
node run, never written, stored or returned.

```python
class State(TypedDict):
    messages: Annotated[list, add_messages]
    remaining_steps: RemainingSteps
```

A node reading `state["remaining_steps"]` gets how many more supersteps this invocation may
run after the node's own (the `recursion_limit` less the steps run, this one included: 0 in
the last step allowed), so that it can stop in good order before `GraphRecursionError`; the
numbers are LangGraph's, whose count includes the step that takes the input. A router
(`add_conditional_edges`) reads the keys too, with the values the nodes it routes after had
(after the input: one more than the first step's nodes get), as LangGraph's do. What a node
returns under such a key is dropped.
"""

from __future__ import annotations

from typing import Annotated

__all__ = ["IsLastStep", "ManagedValue", "RemainingSteps"]


class ManagedValue:
    """A state key's annotation (`Annotated[int, RemainingStepsManager]`) saying the runtime
    computes its value for each node run; subclasses say how, from the steps left."""

    @staticmethod
    def get(remaining: int) -> object:
        """The key's value for a node of a step after which `remaining` more may run."""
        raise NotImplementedError


class RemainingStepsManager(ManagedValue):
    """`RemainingSteps`: how many more steps this invocation may run after this one."""

    @staticmethod
    def get(remaining: int) -> int:
        return remaining


class IsLastStepManager(ManagedValue):
    """`IsLastStep`: True when one more step is allowed after this one (LangGraph's meaning:
    a node that would need two more, say the tools and the model again, should stop)."""

    @staticmethod
    def get(remaining: int) -> bool:
        return remaining == 1


RemainingSteps = Annotated[int, RemainingStepsManager]
IsLastStep = Annotated[bool, IsLastStepManager]
