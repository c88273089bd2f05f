"""The public typing of `graphs`, checked by a type checker and never run by pytest.

`mypy --strict --follow-imports=silent tests/typing_graphs.py` must pass: every `assert_type`
holds, and every `# type: ignore[...]` marks a misuse the checker must catch (with
`warn_unused_ignores`, an ignore that is no longer needed is itself an error).
"""

import operator
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, TypedDict, assert_type

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    CheckpointTuple,
    Command,
    CompiledGraph,
    GraphInterrupt,
    GraphRecursionError,
    InMemorySaver,
    Interrupt,
    RunConfig,
    StateGraph,
    StateSnapshot,
    aonce,
    interrupt,
    once,
)


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    approved: bool


def ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "ok?"})
    assert_type(answer, Any)
    return {"approved": bool(answer)}


def draft(state: State, config: RunConfig) -> dict[str, Any]:
    text = once("draft", lambda: "hello")
    assert_type(text, str)
    count = once("count", len, state["messages"])
    assert_type(count, int)
    return {"messages": [text]}


async def fetch() -> float:
    return 1.0


async def async_node(state: State) -> dict[str, Any]:
    value = await aonce("fetch", fetch)
    assert_type(value, float)
    return {}


builder = StateGraph(State)
assert_type(builder.add_node("draft", draft), StateGraph)
builder.add_node("ask", ask).add_node(async_node)
builder.add_edge(START, "draft").add_edge("draft", "ask").add_edge(["ask", "async_node"], END)
builder.add_conditional_edges("ask", lambda s: END, {END: END})

saver = InMemorySaver()
assert_type(saver, InMemorySaver)
base: BaseCheckpointSaver = saver
app = builder.compile(checkpointer=saver, interrupt_before=["ask"], interrupt_mode="return")
assert_type(app, CompiledGraph)
builder.compile(interrupt_mode="pause")  # type: ignore[arg-type]

config: RunConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}, "recursion_limit": 5}
bad_config: RunConfig = {"configurable": {"thread": "t"}}  # type: ignore[typeddict-unknown-key]

assert_type(app.invoke({"messages": []}, config), dict[str, Any])
assert_type(app.invoke(None, config), dict[str, Any])
assert_type(app.invoke(Command(resume={"approved": True}), config), dict[str, Any])
app.invoke(42, config)  # type: ignore[call-overload]
assert_type(app.stream(None, config, stream_mode="updates"), Iterator[Any])
app.stream(None, config, stream_mode="tokens")  # type: ignore[arg-type]
assert_type(app.stream(None, config, stream_mode=["messages", "custom", "debug"]), Iterator[Any])
app.stream(None, config, stream_mode=["tasks", "checkpoints"], context={"user": "u"})
assert_type(app.astream(None, config), AsyncIterator[Any])

snapshot = app.get_state(config)
assert_type(snapshot, StateSnapshot)
assert_type(snapshot.next, tuple[str, ...])
assert_type(snapshot.values, dict[str, Any])
assert_type(snapshot.interrupts, tuple[Interrupt, ...])
assert_type(app.get_state_history(config, limit=3), Iterator[StateSnapshot])
assert_type(app.update_state(config, {"approved": True}, as_node="ask"), RunConfig)
assert_type(saver.get_tuple(config), CheckpointTuple | None)

try:
    app.invoke(None, config)
except GraphRecursionError as e:
    assert_type(e.limit, int)
    assert_type(e.current, int)
except GraphInterrupt as e:
    assert_type(e.config, RunConfig | None)

pause = Interrupt("value", "id")
pause.value = 1  # type: ignore[misc]
Command(resume=1, goto="ask", update={"approved": False})
Command(1)  # type: ignore[call-arg]

# ---- LangGraph's module paths --------------------------------------------------------------

from typing import Literal

from langchain_core.messages import BaseMessage

from graphs import Send
from graphs.config import get_config
from graphs.graph import MessagesState, add_messages
from graphs.graph import StateGraph as GraphStateGraph
from graphs.types import interrupt as types_interrupt

assert_type(GraphStateGraph(dict).compile(), CompiledGraph)  # LangGraph's dialect, same types
assert_type(types_interrupt("x"), Any)
assert_type(get_config(), RunConfig)
assert_type(add_messages([], [("user", "hi")]), list[BaseMessage])


def chat(state: MessagesState) -> dict[str, Any]:
    return {"messages": [("ai", state["messages"][-1].content)]}


def router(state: MessagesState) -> Command[Literal["chat"]]:
    return Command(goto=[Send("chat", {"messages": []})])


plain: Command = Command(goto="chat")  # no parameter: any node name
chat_graph = GraphStateGraph(MessagesState)
chat_graph.add_node("chat", chat, destinations=("chat",))
Send("chat", 1).node = "x"  # type: ignore[misc]

# ---- stream writer, typed state, context and Runtime ---------------------------------------

import dataclasses

from langchain_core.runnables.graph import Graph
from pydantic import BaseModel

from graphs.config import get_stream_writer
from graphs.runtime import ExecutionInfo, Runtime, get_runtime
from graphs.types import StreamMode, StreamWriter

writer = get_stream_writer()
assert_type(writer, StreamWriter)
writer({"progress": 1})
mode: StreamMode = "messages"
bad_mode: StreamMode = "tokens"  # type: ignore[assignment]


@dataclasses.dataclass
class Ctx:
    user_id: str


class Typed(BaseModel):
    count: int = 0


def typed_node(state: Typed, writer: StreamWriter, runtime: Runtime[Ctx]) -> dict[str, Any]:
    assert_type(runtime.context, Ctx)
    assert_type(runtime.execution_info, ExecutionInfo | None)
    runtime.stream_writer("x")
    return {"count": state.count + len(runtime.context.user_id)}


def untyped_runtime(state: Typed, runtime: Runtime) -> None:
    assert_type(runtime.context, None)


assert_type(get_runtime(Ctx), Runtime[Ctx])
typed = StateGraph(Typed, context_schema=Ctx, input_schema=Typed, output_schema=Typed)
typed.add_node("typed_node", typed_node).add_edge(START, "typed_node")
typed_app = typed.compile()
assert_type(typed_app.invoke(Typed(count=1), context=Ctx("u")), dict[str, Any])
assert_type(typed_app.get_graph(), Graph)
assert_type(typed_app.get_graph().draw_mermaid(), str)
