"""`create_react_agent`: a model and its tools in a loop (LangGraph's
`langgraph.prebuilt.chat_agent_executor`).

The graph, as LangGraph draws it: `[pre_model_hook] -> agent -> [post_model_hook] -> tools ->
(back to the first) ... -> [generate_structured_response] -> END`, the bracketed nodes there
only when asked for.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, get_type_hints

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableBinding
from langchain_core.tools import BaseTool
from pydantic import BaseModel, create_model
from typing_extensions import TypedDict

from .._context import _current
from .._nodes import (
    _config_by_name,
    _injected,
    _is_async,
    _takes_config,
    _with_config_by_name,
    _with_injected,
)
from .._specs import is_runnable
from .._types import END, START, RunConfig, Send
from ..checkpoint.base import BaseCheckpointSaver
from ..compiled import CompiledGraph
from ..graph.message import add_messages
from ..graph.state import StateGraph
from ..managed import RemainingSteps
from ..runtime import task_runtime
from ..store import BaseStore
from .tool_node import BeforeCall, ToolNode, tools_condition

__all__ = [
    "AgentState",
    "AgentStateWithStructuredResponse",
    "Prompt",
    "create_react_agent",
]

NEED_MORE_STEPS = "Sorry, need more steps to process this request."
"""The agent's last message when the recursion limit leaves no room for the tools it asked
for (LangGraph's text)."""


class AgentState(TypedDict):
    """The agent's state: `messages`, merged with `add_messages`, and the steps left."""

    messages: Annotated[list[AnyMessage], add_messages]
    remaining_steps: NotRequired[RemainingSteps]


class AgentStateWithStructuredResponse(AgentState):
    """`AgentState` with the `response_format` answer."""

    structured_response: Any


Prompt: TypeAlias = "str | SystemMessage | Callable[[Any], Sequence[BaseMessage]] | Any"
"""A system prompt (a string or a `SystemMessage`, put before the messages), a function of the
state returning the messages to send (sync or async; given the config and the store if it
declares them, as a node is: `def prompt(state, config, *, store)`), or a Runnable doing the
same."""

ResponseFormat: TypeAlias = "type[BaseModel] | dict[str, Any] | tuple[str, Any]"
"""A pydantic class, a TypedDict, a JSON schema or an OpenAI tool schema (what a chat model's
`with_structured_output` takes), or `(prompt, schema)`."""


def _get(state: Any, key: str, default: Any = None) -> Any:
    if isinstance(state, dict):
        return state.get(key, default)
    return getattr(state, key, default)


class _Prompt:
    """The `prompt` as the agent node calls it: `invoke(state, config)` (or `ainvoke`) returns
    what the model is sent."""

    def __init__(self, prompt: Prompt | None) -> None:
        self.system: SystemMessage | None = None
        self.runnable: Any = None
        self.fn: Callable[[Any, RunConfig], Any] | None = None
        self.is_async = False
        if prompt is None:
            return
        if isinstance(prompt, str):
            prompt = SystemMessage(prompt)
        if isinstance(prompt, SystemMessage):
            self.system = prompt
        elif is_runnable(prompt) and not callable(prompt):
            self.runnable = prompt
        elif callable(prompt):
            self.fn, self.is_async = _as_prompt_call(prompt), _is_async(prompt)
        else:
            raise TypeError(
                f"create_react_agent: prompt must be a str, a SystemMessage, a function or a "
                f"Runnable, got {type(prompt).__name__} {prompt!r:.80}"
            )

    def _plain(self, state: Any) -> Any:
        messages = _get(state, "messages")
        return messages if self.system is None else [self.system, *messages]

    def invoke(self, state: Any, config: RunConfig) -> Any:
        if self.runnable is not None:
            return self.runnable.invoke(state, config)
        if self.fn is None:
            return self._plain(state)
        if self.is_async:
            raise TypeError(
                "create_react_agent: the prompt is an async function, and the agent was run "
                "with invoke()/stream(): run it with ainvoke()/astream(), or give a sync prompt"
            )
        return self._expanded(self.fn(state, config), state, config)

    async def ainvoke(self, state: Any, config: RunConfig) -> Any:
        if self.runnable is not None:
            ainvoke = getattr(self.runnable, "ainvoke", None)
            if callable(ainvoke):
                return await ainvoke(state, config)
            return await asyncio.to_thread(self.runnable.invoke, state, config)
        if self.fn is None:
            return self._plain(state)
        out = self.fn(state, config)
        if inspect.isawaitable(out):
            out = await out
        return self._expanded(out, state, config)

    @staticmethod
    def _expanded(out: Any, state: Any, config: RunConfig) -> Any:
        """A function's messages; a prompt template it returned (`SystemMessage("...") +
        state["messages"]` is one) run on the state, as LangGraph runs a returned Runnable."""
        if is_runnable(out) and not isinstance(out, (list, tuple, BaseMessage)):
            return out.invoke(state, config)
        return out


def _as_prompt_call(fn: Callable[..., Any]) -> Callable[[Any, RunConfig], Any]:
    """A prompt function called as `(state, config)`, whatever of `config`, `store`,
    `runtime` and `writer` it declares (as a node's are handed: `def prompt(state, config, *,
    store)`, LangGraph's form)."""
    takes_config = _takes_config(fn, "create_react_agent prompt")
    injected = _injected(fn)
    if injected:
        how: Literal["pos", "kw", "no"] = (
            ("kw" if _config_by_name(fn) else "pos") if takes_config else "no"
        )
        return _with_injected(fn, injected, how, _is_async(fn))
    if takes_config:
        return _with_config_by_name(fn) if _config_by_name(fn) else fn
    return lambda state, config: fn(state)


def _is_chooser(model: Any) -> bool:
    """A model-choosing function, `model(state, runtime)` returning the chat model to call
    (LangGraph's dynamic model): a plain function (or callable object) of two positional
    parameters. A function of one is a model itself, called with the messages."""
    if isinstance(model, (str, type)) or not callable(model) or is_runnable(model):
        return False
    try:
        params = list(inspect.signature(model).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 2


class _Chooser:
    """Calls a model-choosing function with the state and the run's `Runtime`."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = _is_async(fn)

    @staticmethod
    def _runtime() -> Any:
        task = _current.get()
        return task_runtime(task) if task is not None else None

    def choose(self, state: Any) -> Any:
        if self.is_async:
            raise RuntimeError(
                "create_react_agent: the model-choosing function is async, and the agent was "
                "run with invoke()/stream(): run it with ainvoke()/astream(), or give a sync "
                "function"
            )
        return self.fn(state, self._runtime())

    async def achoose(self, state: Any) -> Any:
        out = self.fn(state, self._runtime())
        return (await out) if inspect.isawaitable(out) else out


def _call_model(model: Any, messages: Any, config: RunConfig) -> Any:
    invoke = getattr(model, "invoke", None)
    return invoke(messages, config) if callable(invoke) else model(messages)


async def _acall_model(model: Any, messages: Any, config: RunConfig) -> Any:
    ainvoke = getattr(model, "ainvoke", None)
    invoke = getattr(model, "invoke", None)
    if callable(ainvoke):
        return await ainvoke(messages, config)
    if callable(invoke):  # a sync-only model: in a thread, as a sync node runs
        return await asyncio.to_thread(invoke, messages, config)
    reply = model(messages)
    return (await reply) if inspect.isawaitable(reply) else reply


class _ModelNode:
    """The agent node: the prompt's messages to the model, its reply appended (named after the
    agent; replaced by `NEED_MORE_STEPS` when the steps left cannot run the tools it asks
    for)."""

    def __init__(
        self,
        model: Any,
        tools: Sequence[BaseTool],
        prompt: Prompt | None,
        *,
        agent_name: str | None = None,
        reads_llm_input: bool = False,
        builtin: Sequence[dict[str, Any]] = (),
    ) -> None:
        bind = getattr(model, "bind_tools", None)
        self.model = model
        # a chosen model is called as it is chosen (bound to the tools by whoever chose it)
        self.chooser = _Chooser(model) if _is_chooser(model) else None
        wants = bool(tools or builtin) and self.chooser is None
        if wants and callable(bind) and _needs_binding(model, tools, len(builtin)):
            try:
                self.model = bind([*tools, *builtin])
            except NotImplementedError:  # a chat model that takes no tools (a fake, say)
                pass
        self.prompt = _Prompt(prompt)
        self.name = "agent"
        self.agent_name = agent_name
        self.reads_llm_input = reads_llm_input
        self.direct = {t.name for t in tools if t.return_direct}

    def _input(self, state: Any) -> Any:
        """What the prompt reads: the state, its `messages` those a `pre_model_hook` gave as
        `llm_input_messages` when it gave some; each tool call in them must be answered."""
        if not self.reads_llm_input:
            _check_answered(_get(state, "messages"))
            return state
        messages = _get(state, "llm_input_messages") or _get(state, "messages")
        _check_answered(messages)
        if isinstance(state, dict):
            return {**state, "messages": messages}
        if isinstance(state, BaseModel):
            return state.model_copy(update={"messages": messages})
        return state

    def _reply(self, state: Any, reply: Any) -> dict[str, Any]:
        reply = _checked(reply)
        if reply.name != self.agent_name:
            reply = reply.model_copy(update={"name": self.agent_name})
        if self._needs_more_steps(state, reply):
            reply = AIMessage(id=reply.id, content=NEED_MORE_STEPS)
        return {"messages": [reply]}

    def _needs_more_steps(self, state: Any, reply: BaseMessage) -> bool:
        left = _get(state, "remaining_steps")
        if left is None:
            return False
        if not isinstance(reply, AIMessage):
            return False
        calls = reply.tool_calls
        # LangGraph's rule: no step left even for direct-return tools, or none for the tools
        # and the model's next turn
        if left < 1 and all(c["name"] in self.direct for c in calls):
            return True
        return bool(calls) and left < 2

    def invoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        config = config or {}
        model = self.model if self.chooser is None else self.chooser.choose(state)
        messages = self.prompt.invoke(self._input(state), config)
        return self._reply(state, _call_model(model, messages, config))

    async def ainvoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        config = config or {}
        model = self.model if self.chooser is None else await self.chooser.achoose(state)
        messages = await self.prompt.ainvoke(self._input(state), config)
        return self._reply(state, await _acall_model(model, messages, config))


class _StructuredNode:
    """`generate_structured_response`: one more model call, for the answer in the
    `response_format` schema, put under `structured_response`."""

    def __init__(self, model: Any, response_format: ResponseFormat) -> None:
        self.prompt: str | None = None
        schema: Any = response_format
        if isinstance(response_format, tuple):
            self.prompt, schema = response_format
        self.schema = schema
        self.chooser = _Chooser(model) if _is_chooser(model) else None
        self.model: Any = None if self.chooser is not None else self._structured(model)
        self.name = "generate_structured_response"

    def _structured(self, model: Any) -> Any:
        if isinstance(model, RunnableBinding):  # a chosen model bound to its tools
            model = model.bound
        structured = getattr(model, "with_structured_output", None)
        if not callable(structured):
            raise TypeError(
                f"create_react_agent: response_format needs a chat model with "
                f"with_structured_output(); {type(model).__name__} has none"
            )
        return structured(self.schema)

    def _messages(self, state: Any) -> list[Any]:
        messages = list(_get(state, "messages"))
        return [SystemMessage(self.prompt), *messages] if self.prompt else messages

    def invoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        model = self.model
        if self.chooser is not None:
            model = self._structured(self.chooser.choose(state))
        return {"structured_response": model.invoke(self._messages(state), config)}

    async def ainvoke(self, state: Any, config: RunConfig | None = None) -> dict[str, Any]:
        model = self.model
        if self.chooser is not None:
            model = self._structured(await self.chooser.achoose(state))
        reply = await model.ainvoke(self._messages(state), config)
        return {"structured_response": reply}


def _needs_binding(model: Any, tools: Sequence[BaseTool], builtin: int) -> bool:
    """Whether the agent binds the tools to `model`: not when it was bound to them already
    (`model.bind_tools(tools)`), which must then be bound to the same tools (and `builtin`
    provider tools), as LangGraph checks."""
    if not isinstance(model, RunnableBinding) or "tools" not in model.kwargs:
        return True
    bound = model.kwargs["tools"]
    if len(tools) != len(bound) - builtin:
        raise ValueError(
            f"create_react_agent: the model was bound to {len(bound) - builtin} tool(s) "
            f"(model.bind_tools(...)) and is given {len(tools)}: give it the same tools, or "
            "pass the model unbound (the agent binds them)"
        )
    names = set()
    for t in bound:
        if t.get("type") == "function":  # OpenAI's form
            names.add(t["function"]["name"])
        elif t.get("name"):  # Anthropic's
            names.add(t["name"])
    missing = sorted({t.name for t in tools} - names)
    if missing:
        raise ValueError(
            f"create_react_agent: the model was bound (model.bind_tools(...)) without the "
            f"tool(s) {missing} it is given: bind the same tools, or pass the model unbound"
        )
    return False


def _check_answered(messages: Any) -> None:
    """Refuse to send the model a conversation with a tool call no `ToolMessage` answers (most
    providers refuse it, with a less helpful error), as LangGraph does."""
    if not messages:
        return
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    unanswered = [
        call
        for m in messages
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if call["id"] not in answered
    ]
    if unanswered:
        raise ValueError(
            "create_react_agent: the messages have tool calls that no ToolMessage answers "
            f"(the first of them: {unanswered[:3]}); every tool call needs its ToolMessage "
            "before the model is called again (most model providers refuse the conversation "
            "otherwise): answer each by its id (update_state with a ToolMessage(content, "
            "tool_call_id=...)), or remove the AIMessage that made it"
        )


def _checked(reply: Any) -> BaseMessage:
    if not isinstance(reply, BaseMessage):
        raise TypeError(
            f"create_react_agent: the model returned {type(reply).__name__} {reply!r:.80}; "
            "expected a message (an AIMessage)"
        )
    return reply


def _llm_input_schema(state_schema: type[Any]) -> type[Any]:
    """The agent node's input when a `pre_model_hook` may give `llm_input_messages`: the
    state with that key too (a channel of its own, not in the graph's output)."""
    if isinstance(state_schema, type) and issubclass(state_schema, BaseModel):
        made: type[Any] = create_model(
            "CallModelInputSchema",
            llm_input_messages=(list[AnyMessage], []),
            __base__=state_schema,
        )
        return made

    class CallModelInputSchema(state_schema):  # type: ignore[misc]
        llm_input_messages: list[AnyMessage]

    return CallModelInputSchema


def _chat_model(model: Any) -> Any:
    """`model`, or for a string (`"openai:gpt-4o"`) the chat model langchain's
    `init_chat_model` makes of it, as LangGraph does."""
    if not isinstance(model, str):
        return model
    try:  # lazy: langchain (not langchain_core) is optional, needed only for a model's name
        from langchain.chat_models import (  # type: ignore[import-not-found,unused-ignore]
            init_chat_model,
        )
    except ImportError as e:
        raise ImportError(
            f"create_react_agent: model {model!r} is a model name, and making a chat model of "
            "a name needs the langchain package (its init_chat_model), which is not installed; "
            "install it (pip install langchain, and the provider's package, such as "
            "langchain-openai), or pass a chat model object instead: "
            "create_react_agent(ChatOpenAI(model='gpt-4o'), tools)"
        ) from e
    return init_chat_model(model)


def _check_state_schema(state_schema: type[Any], response_format: Any) -> None:
    needed = {"messages"} | ({"structured_response"} if response_format is not None else set())
    try:
        keys = set(get_type_hints(state_schema))
    except Exception:  # noqa: BLE001 -- StateGraph reports an unreadable schema
        return
    missing = sorted(needed - keys)
    if missing:
        raise ValueError(
            f"create_react_agent: state_schema {state_schema.__qualname__} has no key(s) "
            f"{missing}; the agent writes them"
        )


def create_react_agent(
    model: Any,
    tools: Sequence[BaseTool | Callable[..., Any] | dict[str, Any]] | ToolNode,
    *,
    prompt: Prompt | None = None,
    response_format: ResponseFormat | None = None,
    pre_model_hook: Any = None,
    post_model_hook: Any = None,
    state_schema: type[Any] | None = None,
    context_schema: type[Any] | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    store: BaseStore | None = None,
    interrupt_before: Sequence[str] | None = None,
    interrupt_after: Sequence[str] | None = None,
    before_call: BeforeCall | None = None,
    version: Literal["v1", "v2"] = "v2",
    name: str | None = None,
) -> CompiledGraph:
    """A graph that calls `model` on the messages, runs the tools it asks for, and loops until
    it answers without tool calls.

    Nodes: `"agent"` (the model) and `"tools"` (a `ToolNode`), and `"pre_model_hook"`,
    `"post_model_hook"`, `"generate_structured_response"` when asked for. The graph ends after
    a tool marked `return_direct` ran. When the state has `remaining_steps` (`AgentState` has)
    and the recursion limit leaves too few steps to run the tools the model asked for, the
    agent answers `NEED_MORE_STEPS` instead of failing with `GraphRecursionError`.

    Args:
        model: a langchain_core chat model (given the tools with `bind_tools`), any
            Runnable or function taking the messages and returning an `AIMessage`, or a
            model name (`"openai:gpt-4o"`), made a chat model by langchain's
            `init_chat_model` (which needs the `langchain` package and the provider's), or a
            function `model(state, runtime)` (two positional parameters, sync or async)
            choosing the model for each call, which it returns bound to the tools it should
            offer (the agent does not bind a chosen model).
        tools: the tools (see `ToolNode`), or a `ToolNode` of them; a dict among them is a
            provider's built-in tool (`{"type": "web_search_preview"}`), bound to the model
            and run by the provider, not by the `tools` node. A model bound to the tools
            already (`model.bind_tools(tools)`) is not bound again; it must have the same
            tools.
        prompt: a system prompt before the messages, or a function (or Runnable) of the
            state returning the messages to send (see `Prompt`).
        response_format: a schema for a last answer: after the loop, the model is asked once
            more (`with_structured_output(schema)`, with the prompt first for a `(prompt,
            schema)` pair) and its answer is the state's `structured_response`.
        pre_model_hook: a node (function or Runnable) run before every model call; it may
            update `messages`, or return `llm_input_messages`: what the model is sent this
            time, the state's messages unchanged.
        post_model_hook: a node run after every model call (a guardrail, a review); then
            the tool calls still unanswered run, else the loop goes back (after tools) or
            ends.
        state_schema: the state (a TypedDict or pydantic model with `messages`, and
            `structured_response` with a `response_format`); default `AgentState` (or
            `AgentStateWithStructuredResponse`).
        context_schema: what `context=` holds (see `StateGraph`).
        checkpointer: where the thread is saved (needed to pause and resume).
        store: the graph's store (what `InjectedStore` tools and `runtime.store` get).
        interrupt_before, interrupt_after: node names, to pause there.
        before_call: the `ToolNode`'s pause before a call (ignored when `tools` is a ToolNode,
            which has its own).
        version: how a turn's tool calls reach the `tools` node, as LangGraph: `"v2"` (the
            default) sends each call to a task of its own (a `Send` of a one-call list), so
            the calls run in parallel and a call that pauses (`before_call`) does not hold up
            the others: a call let through runs as soon as its own hook settles; `"v1"` runs
            all of them in one task, so that no tool of the turn runs until every call's hook
            has settled. Either way each gated call pauses once, is answered by its own
            interrupt id, and runs at most once per tool call id.
        name: the graph's name, also given to each of the model's messages (so a supervisor
            can tell its agents apart).

    Raises:
        ValueError: an unknown `version`, a `state_schema` without the keys the agent
            writes, or a model bound to other tools than `tools`.
        ImportError: `model` is a name and the `langchain` package is not installed.
    """
    if version not in ("v1", "v2"):
        raise ValueError(f"create_react_agent: version must be 'v1' or 'v2', got {version!r}")
    if state_schema is not None:
        _check_state_schema(state_schema, response_format)
    else:
        state_schema = AgentStateWithStructuredResponse if response_format else AgentState
    model = _chat_model(model)
    builtin: list[dict[str, Any]] = []
    if isinstance(tools, ToolNode):
        tool_node = tools
    else:
        # a dict is a provider's own tool (a web search, say): bound to the model, run by it
        builtin = [t for t in tools if isinstance(t, dict)]
        own = [t for t in tools if not isinstance(t, dict)]
        tool_node = ToolNode(own, before_call=before_call)
    tool_list = list(tool_node.tools_by_name.values())
    graph = StateGraph(state_schema, context_schema)
    agent = _ModelNode(
        model,
        tool_list,
        prompt,
        agent_name=name,
        reads_llm_input=pre_model_hook is not None,
        builtin=builtin,
    )
    entry, last, done = _add_model_nodes(
        graph, agent, state_schema, pre_model_hook, post_model_hook, model, response_format
    )

    def compiled() -> CompiledGraph:
        return graph.compile(
            checkpointer,
            interrupt_before=interrupt_before or (),
            interrupt_after=interrupt_after or (),
            store=store,
            name=name,
        )

    if not tool_list:
        graph.add_edge(last, done)
        return compiled()
    graph.add_node("tools", tool_node)
    _add_tool_routes(graph, tool_list, version, entry, done, post_model_hook is not None)
    return compiled()


def _add_model_nodes(
    graph: StateGraph,
    agent: _ModelNode,
    state_schema: type[Any],
    pre_model_hook: Any,
    post_model_hook: Any,
    model: Any,
    response_format: ResponseFormat | None,
) -> tuple[str, str, str]:
    """`create_react_agent`'s nodes around the model (its hooks, the structured answer), and
    the edges between them; returns where a turn starts, the node after which it routes, and
    where the loop ends."""
    if pre_model_hook is not None:
        graph.add_node("agent", agent, input_schema=_llm_input_schema(state_schema))
        graph.add_node("pre_model_hook", pre_model_hook)
        graph.add_edge(START, "pre_model_hook")
        graph.add_edge("pre_model_hook", "agent")
        entry = "pre_model_hook"
    else:
        graph.add_node("agent", agent)
        graph.add_edge(START, "agent")
        entry = "agent"
    last = "agent"
    if post_model_hook is not None:
        graph.add_node("post_model_hook", post_model_hook)
        graph.add_edge("agent", "post_model_hook")
        last = "post_model_hook"
    done = END
    if response_format is not None:
        structured = _StructuredNode(model, response_format)
        graph.add_node("generate_structured_response", structured)
        # the app's schema, stored in `structured_response`: a class it names is allowed there
        graph.node_schemas.append(structured.schema)
        graph.add_edge("generate_structured_response", END)
        done = "generate_structured_response"
    return entry, last, done


def _add_tool_routes(
    graph: StateGraph,
    tool_list: list[BaseTool],
    version: Literal["v1", "v2"],
    entry: str,
    done: str,
    post_hook: bool,
) -> None:
    """`create_react_agent`'s routes to the `tools` node (from the model, or from its post
    hook) and back from it (to `entry`, or to `END` after a `return_direct` tool)."""

    def to_tools(pending: list[ToolCall], every: bool) -> str | list[Send]:
        """v1: one `tools` task for the calls (the node's own input when they are all of the
        turn's); v2: one task per call, each a `Send` of a one-call list."""
        if version == "v2":
            return [Send("tools", [call]) for call in pending]
        return "tools" if every else [Send("tools", pending)]

    if not post_hook:

        def after_agent(state: Any) -> str | list[Send]:
            messages = _get(state, "messages")
            if tools_condition(messages) != "tools":
                return done
            return to_tools(list(messages[-1].tool_calls), True)

        graph.add_conditional_edges("agent", after_agent, [n for n in ("tools", done)])
    else:

        def after_hook(state: Any) -> Any:
            messages = _get(state, "messages")
            answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
            calls = list(ai.tool_calls) if ai is not None else []
            pending = [c for c in calls if c["id"] not in answered]
            if pending:
                # the calls the hook left unanswered (all of them: the usual case)
                return to_tools(pending, len(pending) == len(calls))
            if messages and isinstance(messages[-1], ToolMessage):
                return entry
            return done

        graph.add_conditional_edges("post_model_hook", after_hook, ["tools", entry, done])
    direct = {t.name for t in tool_list if t.return_direct}
    if direct:

        def after_tools(state: Any) -> str:
            for message in reversed(_get(state, "messages")):
                if isinstance(message, AIMessage):
                    break
                if getattr(message, "name", None) in direct:
                    return END
            return entry

        graph.add_conditional_edges("tools", after_tools, [entry, END])
    else:
        graph.add_edge("tools", entry)
