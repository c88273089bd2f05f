"""`graphs.channels`: LangGraph's channel classes, as markers for state keys.

In LangGraph a channel is a Pregel object that holds one key's value. graphs has no Pregel layer;
these classes are only read, when a graph is compiled, from a state key's annotation, and give
that key the behaviour LangGraph's channel of the same name has:

```python
class State(TypedDict):
    session: Annotated[Client, UntrackedValue]               # never written to a checkpoint
    hint: Annotated[str, EphemeralValue(str)]                # seen by the next step only
    events: Annotated[list[str], Topic(str, accumulate=True)]  # every write, in a list
    messages: Annotated[list, DeltaChannel(merge_batch)]     # reducer(state, [w1, w2, ...])
    total: Annotated[int, BinaryOperatorAggregate(int, operator.add)]  # = Annotated[int, add]
    name: Annotated[str, LastValue(str)]                     # a plain key
```

A marker may be given as its class where LangGraph allows it (`Annotated[Client, UntrackedValue]`):
it then takes the key's type. None of them holds a value; a graph's state lives in its runs and
checkpoints, as for any other key.

Each class sits in the module of LangGraph's name for it (`graphs.channels.delta`, ...).
"""

from .base import ChannelMarker
from .binop import BinaryOperatorAggregate
from .delta import DeltaChannel
from .ephemeral_value import EphemeralValue
from .last_value import LastValue
from .topic import Topic
from .untracked_value import UntrackedValue

__all__ = [
    "BinaryOperatorAggregate",
    "ChannelMarker",
    "DeltaChannel",
    "EphemeralValue",
    "LastValue",
    "Topic",
    "UntrackedValue",
]
