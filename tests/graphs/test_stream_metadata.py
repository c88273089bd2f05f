"""What a run's config adds to stream and checkpoint metadata, and how `debug`/`checkpoints`
chunks name the checkpoints of a node's subgraph, as LangGraph does."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from graphs import END, START, Command, StateGraph
from graphs.checkpoint.base import BaseCheckpointSaver
from graphs.graph import MessagesState
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite")


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _say(name: str) -> Any:
    def node(state: Log) -> dict[str, Any]:
        return {"log": [name]}

    return node


def _nested() -> Any:
    """outer: a -> mid (a subgraph: b -> inner (a subgraph: c))."""
    inner = StateGraph(Log).add_node("c", _say("c")).add_edge(START, "c").compile()
    mid = StateGraph(Log).add_node("b", _say("b")).add_node("inner", inner)
    mid = mid.add_edge(START, "b").add_edge("b", "inner").add_edge("inner", END).compile()
    outer = StateGraph(Log).add_node("a", _say("a")).add_node("mid", mid)
    return outer.add_edge(START, "a").add_edge("a", "mid").add_edge("mid", END)


# ---- debug / checkpoints chunks and a subgraph's checkpoints --------------------------------


def test_a_checkpoint_chunk_names_where_a_pending_subgraph_task_keeps_its_checkpoints(
    saver: BaseCheckpointSaver,
) -> None:
    graph = _nested().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    chunks = list(graph.stream({"log": []}, config, stream_mode="debug", subgraphs=True))
    by_ns: dict[tuple[str, ...], list[Any]] = {}
    for ns, chunk in chunks:
        if chunk["type"] == "checkpoint":
            by_ns.setdefault(ns, []).append(chunk["payload"])
    assert [len(ns) for ns in by_ns] == [0, 1, 2]
    for ns, payloads in by_ns.items():
        history = list(
            graph.get_state_history(
                {"configurable": {"thread_id": "t", "checkpoint_ns": "|".join(ns)}}
            )
        )[::-1]
        assert [p["config"] for p in payloads] == [h.config for h in history]
        for payload, snapshot in zip(payloads, history, strict=True):
            assert [(t["id"], t["name"], t["state"]) for t in payload["tasks"]] == [
                (t.id, t.name, t.state) for t in snapshot.tasks
            ]
    # The top checkpoint before `mid` runs points at mid's namespace; the one inside `mid`
    # before `inner` runs points one level deeper (each graph's third checkpoint: after its
    # input checkpoint and step 0).
    (top_task,) = by_ns[()][2]["tasks"]
    assert top_task["name"] == "mid"
    mid_ns = f"mid:{top_task['id']}"
    assert top_task["state"] == {"configurable": {"thread_id": "t", "checkpoint_ns": mid_ns}}
    (mid_task,) = by_ns[(mid_ns,)][2]["tasks"]
    assert mid_task["name"] == "inner"
    assert mid_task["state"]["configurable"]["checkpoint_ns"] == (
        f"{mid_ns}|inner:{mid_task['id']}"
    )
    # and that namespace holds inner's checkpoints, which ran `c`
    inner_config = mid_task["state"]
    assert graph.get_state(inner_config).values == {"log": ["a", "b", "c"]}
    # a plain node's task has no state, nor has the input checkpoint's `__start__` task
    for i, name in enumerate(["__start__", "a"]):
        assert by_ns[()][i]["tasks"][0] == {
            "id": by_ns[()][i]["tasks"][0]["id"],
            "name": name,
            "interrupts": (),
            "state": None,
        }


def test_a_subgraphs_history_names_its_own_subgraph_tasks(saver: BaseCheckpointSaver) -> None:
    graph = _nested().compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    (mid_task,) = [t for s in graph.get_state_history(config) for t in s.tasks if t.name == "mid"]
    assert mid_task.name == "mid"
    mid_ns = mid_task.state["configurable"]["checkpoint_ns"]
    mid_history = list(
        graph.get_state_history({"configurable": {"thread_id": "t", "checkpoint_ns": mid_ns}})
    )
    inner_tasks = [t for s in mid_history for t in s.tasks if t.name == "inner"]
    assert len(inner_tasks) == 1
    assert inner_tasks[0].state == {
        "configurable": {"thread_id": "t", "checkpoint_ns": f"{mid_ns}|inner:{inner_tasks[0].id}"}
    }


# ---- checkpoint metadata from the config ----------------------------------------------------


def test_each_checkpoint_notes_the_configs_plain_values(saver: BaseCheckpointSaver) -> None:
    graph = StateGraph(Log).add_node("a", _say("a")).add_node("b", _say("b"))
    graph = graph.add_edge(START, "a").add_edge("a", "b").compile(checkpointer=saver)
    config = {
        "configurable": {
            "thread_id": "t",
            "user_id": "u-1",
            "turn": 3,
            "openai_api_key": "sk-not-stored",
            "auth_token": "nope",
            "client": object(),
            "__internal": "x",
        },
        "metadata": {"team": "billing", "source": "not the checkpoint's"},
    }
    graph.invoke({"log": []}, config)
    metas = [tup.metadata for tup in saver.list({"configurable": {"thread_id": "t"}})]
    assert [m["source"] for m in metas] == ["loop", "loop", "loop", "input"]
    for m in metas:
        assert {k: v for k, v in m.items() if k not in ("source", "step")} == {
            "user_id": "u-1",
            "turn": 3,
            "team": "billing",
            "parents": {},
        }
    # A later run's checkpoints note that run's config.
    graph.invoke({"log": []}, {"configurable": {"thread_id": "t", "user_id": "u-2"}})
    assert saver.get_tuple({"configurable": {"thread_id": "t"}}).metadata["user_id"] == "u-2"
    # A run given nothing else notes nothing.
    graph.invoke({"log": []}, {"configurable": {"thread_id": "plain"}})
    plain = [tup.metadata for tup in saver.list({"configurable": {"thread_id": "plain"}})]
    assert plain == [
        {"source": "loop", "step": 2, "parents": {}},
        {"source": "loop", "step": 1, "parents": {}},
        {"source": "loop", "step": 0, "parents": {}},
        {"source": "input", "step": -1, "parents": {}},
    ]


# ---- messages metadata ----------------------------------------------------------------------


def _returns_message() -> Any:
    def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": HumanMessage("hello", id="h1")}

    return StateGraph(MessagesState).add_node("n", node).add_edge(START, "n")


def test_messages_metadata_has_no_made_up_thread_id(saver: BaseCheckpointSaver) -> None:
    graph = _returns_message().compile()
    ((message, meta),) = graph.stream({"messages": []}, stream_mode="messages")
    assert message.id == "h1"
    assert meta == {
        "ls_integration": "langgraph",
        "langgraph_step": 1,
        "langgraph_node": "n",
        "langgraph_triggers": ("branch:to:n",),
        "langgraph_path": ("__pregel_pull", "n"),
        "langgraph_checkpoint_ns": meta["langgraph_checkpoint_ns"],
    }
    assert meta["langgraph_checkpoint_ns"].startswith("n:")
    # A saved thread's id is a real one (given back in the config): it is there.
    saved = _returns_message().compile(checkpointer=saver)
    config: dict[str, Any] = {"configurable": {}}
    ((_, meta),) = saved.stream({"messages": []}, config, stream_mode="messages")
    assert meta["thread_id"] == config["configurable"]["thread_id"]


def test_messages_metadata_carries_the_configs_ids_and_metadata() -> None:
    graph = _returns_message().compile()
    config = {
        "configurable": {
            "thread_id": "th-1",
            "run_id": "run-1",
            "assistant_id": "asst-1",
            "graph_id": "g-1",
            "model": "not an id",
            "some_api_key": "secret",
        },
        "metadata": {"team": "billing", "ls_integration": "mine"},
    }
    ((_, meta),) = graph.stream({"messages": []}, config, stream_mode="messages")
    assert {k: v for k, v in meta.items() if not k.startswith("langgraph_")} == {
        "thread_id": "th-1",
        "run_id": "run-1",
        "assistant_id": "asst-1",
        "graph_id": "g-1",
        "team": "billing",
        "ls_integration": "mine",
    }


def test_a_chat_models_chunks_show_its_tags_and_the_tasks_namespace() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("hi there")]), tags=["meow"])

    def call(state: MessagesState) -> dict[str, Any]:
        return {"messages": model.invoke(state["messages"])}

    graph = StateGraph(MessagesState).add_node("call", call).add_edge(START, "call").compile()
    chunks = list(graph.stream({"messages": "hi"}, {"tags": ["run-tag"]}, stream_mode="messages"))
    assert "".join(m.content for m, _ in chunks) == "hi there"
    for _, meta in chunks:
        assert meta["tags"] == ["run-tag", "meow"]
        assert meta["checkpoint_ns"] == meta["langgraph_checkpoint_ns"]
        assert meta["checkpoint_ns"].startswith("call:")
        assert meta["ls_integration"] == "langchain_chat_model"  # the model's own wins
        assert meta["ls_provider"] == "genericfakechatmodel"


def test_messages_of_a_list_of_commands_are_streamed() -> None:
    def first(state: MessagesState) -> Any:
        return [Command(update={"messages": HumanMessage("one", id="1")}), None]

    def second(state: MessagesState) -> Any:
        return [Command(update={"messages": [HumanMessage("two", id="2")]})]

    graph = StateGraph(MessagesState).add_sequence([first, second]).add_edge(START, "first")
    chunks = list(graph.compile().stream({"messages": []}, stream_mode="messages"))
    assert [(m.content, meta["langgraph_node"]) for m, meta in chunks] == [
        ("one", "first"),
        ("two", "second"),
    ]


def test_a_sends_messages_carry_its_push_path_as_langgraph_s() -> None:
    from graphs import Send

    class Fan(TypedDict):
        messages: Annotated[list, operator.add]

    def say(arg: dict[str, str]) -> dict[str, Any]:
        return {"messages": [HumanMessage(arg["text"], id=arg["text"])]}

    g = StateGraph(Fan).add_node("say", say)
    g.add_conditional_edges(START, lambda s: [Send("say", {"text": t}) for t in ("a", "b")])
    chunks = list(g.compile().stream({"messages": []}, stream_mode="messages"))
    # the two tasks run beside each other: their messages come in the order they finish
    assert sorted((m.id, meta["langgraph_path"]) for m, meta in chunks) == [
        ("a", ("__pregel_push", 0, False)),
        ("b", ("__pregel_push", 1, False)),
    ]
    assert {meta["langgraph_triggers"] for _, meta in chunks} == {("__pregel_push",)}
