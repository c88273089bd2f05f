"""Time travel inside a thread, in LangGraph's dialect: the same program, its imports switched
between LangGraph and `graphs`' LangGraph module paths, does the same thing.

The pattern of LangGraph's time-travel guide: run a thread, read its history, pick a past
checkpoint, `invoke(None, that_config)` to replay from it, `update_state(that_config, values)`
to fork from it and `invoke(None, the_config_returned)` to run the fork; plus a review step that
pauses in `interrupt()` and before a node (`interrupt_before`), replayed past both. What each
program records (the invocations' results, the nodes that ran with what they saw, the whole
history with each checkpoint's source, step, next nodes, values and parent) is compared whole,
on LangGraph's `InMemorySaver` and on each of graphs' savers (in memory, SQLite, PostgreSQL).

Around it, what graphs keeps: the top-level `graphs` API (seed 000's dialect) still refuses a
past checkpoint; new input given with a past checkpoint runs from there (as LangGraph), a
`Command` given with one is refused; one run per thread holds for a replay; a `once()` effect the thread recorded is not run again on a
replay.
"""

from __future__ import annotations

import asyncio
import importlib
import operator
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage

import graphs
from graphs.errors import InvalidUpdateError, ResumeError, ThreadBusyError


def imports(dialect: str) -> SimpleNamespace:
    """What a program imports, from LangGraph or from graphs' LangGraph module paths."""
    graph = importlib.import_module(f"{dialect}.graph")
    return SimpleNamespace(
        StateGraph=graph.StateGraph,
        MessagesState=graph.MessagesState,
        START=graph.START,
        END=graph.END,
        InMemorySaver=importlib.import_module(f"{dialect}.checkpoint.memory").InMemorySaver,
        types=importlib.import_module(f"{dialect}.types"),
    )


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def graphs_saver(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """A saver for the graphs run of a program: in memory, or `SQLSaver` on SQLite or
    PostgreSQL (a fresh database each)."""
    if request.param == "memory":
        yield None  # the program's own `InMemorySaver`, imported from graphs' module path
        return
    from graphs.checkpoint.sql import SQLSaver

    url = (
        f"sqlite:///{tmp_path / 'travel.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    saver = SQLSaver(url)
    saver.setup()
    try:
        yield saver
    finally:
        saver.close()


def history(graph: Any, config: Any) -> list[tuple[Any, ...]]:
    """The thread's history, newest first: each checkpoint's source, step, next nodes,
    values (messages as their contents) and its parent's index in this list."""
    snapshots = list(graph.get_state_history(config))
    index = {s.config["configurable"]["checkpoint_id"]: i for i, s in enumerate(snapshots)}
    rows = []
    for s in snapshots:
        parent = ((s.parent_config or {}).get("configurable") or {}).get("checkpoint_id")
        rows.append(
            (s.metadata["source"], s.metadata["step"], s.next, shown(s.values), index.get(parent))
        )
    return rows


def shown(values: Any) -> Any:
    if isinstance(values, dict):
        return {k: shown(v) for k, v in values.items()}
    if isinstance(values, list):
        return [shown(v) for v in values]
    return getattr(values, "content", values)


# ---- the programs ------------------------------------------------------------------------------


class JokeState(TypedDict, total=False):
    topic: str
    joke: str
    log: Annotated[list[str], operator.add]


def joke_graph(lg: SimpleNamespace, calls: list[Any], saver: Any) -> Any:
    """The guide's two nodes: one picks a topic, the next writes a joke on it."""

    def generate_topic(state: JokeState) -> JokeState:
        calls.append(("generate_topic", state.get("topic")))
        return {"topic": "cats", "log": ["topic"]}

    def write_joke(state: JokeState) -> JokeState:
        calls.append(("write_joke", state["topic"]))
        return {"joke": f"a joke about {state['topic']}", "log": ["joke"]}

    builder = lg.StateGraph(JokeState)
    builder.add_node("generate_topic", generate_topic)
    builder.add_node("write_joke", write_joke)
    builder.add_edge(lg.START, "generate_topic")
    builder.add_edge("generate_topic", "write_joke")
    builder.add_edge("write_joke", lg.END)
    return builder.compile(checkpointer=saver or lg.InMemorySaver())


def replay_and_fork(dialect: str, saver: Any = None, **run: Any) -> dict[str, Any]:
    """Run; replay from the checkpoint before `write_joke`; fork there with another topic and
    run the fork; replay once more, streamed. `run`: what the replays and the fork's run are
    invoked with besides."""
    lg = imports(dialect)
    calls: list[Any] = []
    graph = joke_graph(lg, calls, saver)
    config = {"configurable": {"thread_id": "jokes"}}
    first = graph.invoke({"log": ["start"]}, config)
    before_joke = next(s for s in graph.get_state_history(config) if s.next == ("write_joke",))
    replayed = graph.invoke(None, before_joke.config, **run)
    fork_config = graph.update_state(before_joke.config, {"topic": "chickens"})
    forked_head = graph.get_state(config)
    forked = graph.invoke(None, fork_config, **run)
    modes = ["values", "updates"]
    streamed = [shown(c) for c in graph.stream(None, before_joke.config, stream_mode=modes, **run)]
    return {
        "results": [shown(first), shown(replayed), shown(forked)],
        "streamed replay": streamed,
        "calls": calls,
        "head after the fork": (shown(forked_head.values), forked_head.next),
        "head at the end": shown(graph.get_state(config).values),
        "history": history(graph, config),
    }


async def replay_and_fork_async(dialect: str, saver: Any = None) -> dict[str, Any]:
    """`replay_and_fork` through the async API."""
    lg = imports(dialect)
    calls: list[Any] = []
    graph = joke_graph(lg, calls, saver)
    config = {"configurable": {"thread_id": "jokes-async"}}
    first = await graph.ainvoke({"log": ["start"]}, config)
    past = [s async for s in graph.aget_state_history(config)]
    before_joke = next(s for s in past if s.next == ("write_joke",))
    replayed = await graph.ainvoke(None, before_joke.config)
    fork_config = await graph.aupdate_state(before_joke.config, {"topic": "chickens"})
    forked = await graph.ainvoke(None, fork_config)
    return {
        "results": [shown(first), shown(replayed), shown(forked)],
        "calls": calls,
        "history": history(graph, config),
    }


def review_graph(lg: SimpleNamespace, calls: list[Any], saver: Any) -> Any:
    """A draft, a review that asks a person (`interrupt()`), and a send paused before
    (`interrupt_before`), on `MessagesState`."""

    def draft(state: dict[str, Any]) -> dict[str, Any]:
        n = len(state["messages"])
        calls.append(("draft", n))
        return {"messages": [AIMessage(content=f"draft {n}", id=f"d{n}")]}

    def review(state: dict[str, Any]) -> dict[str, Any]:
        answer = lg.types.interrupt(f"approve {state['messages'][-1].content}?")
        calls.append(("review", answer))
        n = len(state["messages"])
        return {"messages": [HumanMessage(content=f"review: {answer}", id=f"r{n}")]}

    def send(state: dict[str, Any]) -> dict[str, Any]:
        calls.append(("send", state["messages"][-1].content))
        return {"messages": [AIMessage(content="sent", id=f"s{len(state['messages'])}")]}

    builder = lg.StateGraph(lg.MessagesState)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("send", send)
    builder.add_edge(lg.START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "send")
    return builder.compile(checkpointer=saver or lg.InMemorySaver(), interrupt_before=["send"])


def replay_past_pauses(dialect: str, saver: Any = None) -> dict[str, Any]:
    """Approve and send; replay from the pause before `send` (it runs again), then from before
    the review (it asks again, the answer given on the old branch is not reused); answer no;
    edit the draft at that past checkpoint (`add_messages` replaces it by id) and run the
    edit, which asks again."""
    lg = imports(dialect)
    Command = lg.types.Command
    calls: list[Any] = []
    graph = review_graph(lg, calls, saver)
    config = {"configurable": {"thread_id": "review"}}
    steps: list[Any] = []

    def record(what: str, result: dict[str, Any]) -> None:
        asked = [i.value for i in result.get("__interrupt__", ())]
        steps.append((what, shown(result["messages"]), asked, graph.get_state(config).next))

    record("asked", graph.invoke({"messages": [HumanMessage(content="hi", id="h")]}, config))
    record("approved", graph.invoke(Command(resume="yes"), config))
    record("sent", graph.invoke(None, config))
    past = list(graph.get_state_history(config))
    before_review = next(s for s in past if s.next == ("review",))
    before_send = next(s for s in past if s.next == ("send",))
    record("replayed before send", graph.invoke(None, before_send.config))
    record("replayed before review", graph.invoke(None, before_review.config))
    record("answered no", graph.invoke(Command(resume="no"), config))
    draft_id = before_review.values["messages"][-1].id
    edited = AIMessage(content="draft edited", id=draft_id)
    edit_config = graph.update_state(before_review.config, {"messages": [edited]})
    record("edit run", graph.invoke(None, edit_config))
    record("answered ok", graph.invoke(Command(resume="ok"), config))
    return {"steps": steps, "calls": calls, "history": history(graph, config)}


PROGRAMS = [replay_and_fork, replay_past_pauses]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_time_travel_does_what_it_does_on_langgraph(
    program: Callable[..., dict[str, Any]], graphs_saver: Any
) -> None:
    on_langgraph = program("langgraph")
    assert program("graphs", graphs_saver) == on_langgraph


def test_time_travel_saved_at_exit_does_what_it_does_on_langgraph(graphs_saver: Any) -> None:
    """`durability="exit"`: the replay's steps are saved when it ends, the branch whole."""
    on_langgraph = replay_and_fork("langgraph", durability="exit")
    assert replay_and_fork("graphs", graphs_saver, durability="exit") == on_langgraph


def test_time_travel_through_the_async_api_does_what_it_does_on_langgraph(
    graphs_saver: Any,
) -> None:
    on_langgraph = asyncio.run(replay_and_fork_async("langgraph"))
    assert asyncio.run(replay_and_fork_async("graphs", graphs_saver)) == on_langgraph


def test_the_old_branch_stays_in_history_as_it_was(graphs_saver: Any) -> None:
    """The replay and the fork write new checkpoints only: each checkpoint of the first run
    reads back as it was before (values, next nodes), so a branch never rewrites the past."""
    lg = imports("graphs")
    graph = joke_graph(lg, [], graphs_saver)
    config = {"configurable": {"thread_id": "jokes"}}
    graph.invoke({"log": ["start"]}, config)
    before = {
        s.config["configurable"]["checkpoint_id"]: (shown(s.values), s.next)
        for s in graph.get_state_history(config)
    }
    before_joke = next(s for s in graph.get_state_history(config) if s.next == ("write_joke",))
    graph.invoke(None, before_joke.config)
    graph.invoke(None, graph.update_state(before_joke.config, {"topic": "chickens"}))
    after = {
        s.config["configurable"]["checkpoint_id"]: (shown(s.values), s.next)
        for s in graph.get_state_history(config)
    }
    assert {k: after[k] for k in before} == before
    # The replay's fork checkpoint and its step; the update's checkpoint and its step.
    assert len(after) == len(before) + 4
    assert graph.get_state(config).values["joke"] == "a joke about chickens"


# ---- what graphs keeps ---------------------------------------------------------------------------


def _seed_graph(calls: list[str]) -> Any:
    def pick(state: dict[str, Any]) -> dict[str, Any]:
        calls.append("pick")
        return {"topic": "cats"}

    def write(state: dict[str, Any]) -> dict[str, Any]:
        calls.append("write")
        return {"joke": f"on {state['topic']}"}

    builder = graphs.StateGraph(JokeState)
    builder.add_node("pick", pick)
    builder.add_node("write", write)
    builder.add_edge(graphs.START, "pick")
    builder.add_edge("pick", "write")
    return builder.compile(checkpointer=graphs.InMemorySaver())


def test_seed_000_dialect_still_refuses_a_past_checkpoint() -> None:
    """The top-level `graphs.StateGraph` keeps seed 000's rule: history never branches inside
    a thread; a replay or an update of a past checkpoint is refused, nothing written."""
    calls: list[str] = []
    graph = _seed_graph(calls)
    config = {"configurable": {"thread_id": "seed"}}
    graph.invoke({"log": []}, config)
    past = next(s for s in graph.get_state_history(config) if s.next == ("write",))
    count = len(list(graph.get_state_history(config)))
    with pytest.raises(ResumeError, match="fork it into a new thread"):
        graph.invoke(None, past.config)
    with pytest.raises(InvalidUpdateError, match="fork it into a new thread"):
        graph.update_state(past.config, {"topic": "dogs"})
    assert len(list(graph.get_state_history(config))) == count
    assert calls == ["pick", "write"]


def new_input_at_past_checkpoints(dialect: str, saver: Any = None) -> dict[str, Any]:
    """Two turns; new input given with the checkpoint after the first (a new run from there,
    the second turn not in its state); with a past checkpoint paused in the review (its pending
    task is dropped, as new input on a paused thread does); with the second turn's input
    checkpoint (the new input replaces the one it held)."""
    lg = imports(dialect)
    calls: list[Any] = []
    graph = review_graph(lg, calls, saver)
    config = {"configurable": {"thread_id": "turns"}}
    Command = lg.types.Command
    results = [graph.invoke({"messages": [HumanMessage(content="one", id="h1")]}, config)]
    results.append(graph.invoke(Command(resume="yes"), config))
    results.append(graph.invoke(None, config))
    results.append(graph.invoke({"messages": [HumanMessage(content="two", id="h2")]}, config))
    paused = next(s for s in graph.get_state_history(config) if s.next == ("review",))
    past = list(graph.get_state_history(config))
    finished = next(s for s in past if s.next == ())
    second_input = next(s for s in past if s.next == ("__start__",))
    for text, at in (("three", finished), ("four", paused), ("five", second_input)):
        message = HumanMessage(content=text, id=text)
        results.append(graph.invoke({"messages": [message]}, at.config))
    return {
        "results": [
            (shown(r["messages"]), [i.value for i in r.get("__interrupt__", ())]) for r in results
        ],
        "calls": calls,
        "head": (shown(graph.get_state(config).values), graph.get_state(config).next),
        "history": history(graph, config),
    }


def test_new_input_with_a_past_checkpoint_runs_from_there_as_on_langgraph(
    graphs_saver: Any,
) -> None:
    on_langgraph = new_input_at_past_checkpoints("langgraph")
    ours = new_input_at_past_checkpoints("graphs", graphs_saver)
    assert ours == on_langgraph
    messages, asked = ours["results"][4]
    assert messages == ["one", "draft 1", "review: yes", "sent", "three", "draft 5"]
    assert asked == ["approve draft 5?"]
    assert ours["results"][6][0] == ["one", "draft 1", "review: yes", "sent", "five", "draft 5"]


def test_a_command_with_a_past_checkpoint_is_refused_in_langgraph_dialect() -> None:
    """An answer given with a past checkpoint would answer a pause that is not the thread's:
    it is refused, nothing written, and the refusal says what to do instead."""
    calls: list[Any] = []
    lg = imports("graphs")
    graph = review_graph(lg, calls, None)
    config = {"configurable": {"thread_id": "review"}}
    graph.invoke({"messages": [HumanMessage(content="hi", id="h")]}, config)
    graph.invoke(lg.types.Command(resume="yes"), config)
    past = next(s for s in graph.get_state_history(config) if s.next == ("review",))
    count = len(list(graph.get_state_history(config)))
    with pytest.raises(ResumeError, match="a Command is not given with a past checkpoint"):
        graph.invoke(lg.types.Command(resume="no"), past.config)
    assert len(list(graph.get_state_history(config))) == count
    assert calls == [("draft", 1), ("review", "yes")]


def test_a_replay_holds_the_thread_like_any_run() -> None:
    """One run per thread: a replay of a thread another run holds is refused at once."""
    lg = imports("graphs")
    saver = lg.InMemorySaver()
    graph = joke_graph(lg, [], saver)
    config = {"configurable": {"thread_id": "jokes"}}
    graph.invoke({"log": ["start"]}, config)
    past = next(s for s in graph.get_state_history(config) if s.next == ("write_joke",))
    with saver.lock_thread({"configurable": {"thread_id": "jokes", "checkpoint_ns": ""}}):
        with pytest.raises(ThreadBusyError):
            graph.invoke(None, past.config)
        with pytest.raises(ThreadBusyError):
            graph.update_state(past.config, {"topic": "dogs"})
    assert graph.get_state(config).values["joke"] == "a joke about cats"


def _notify_graph(sent: list[str], saver: Any) -> Any:
    """A node that sends a notice once (`once()`) and then asks for approval."""
    lg = imports("graphs")

    def notify(state: dict[str, Any]) -> dict[str, Any]:
        receipt = graphs.once("notice", lambda: sent.append("notice") or f"receipt {len(sent)}")
        answer = lg.types.interrupt("go on?")
        return {"log": [f"{receipt}: {answer}"]}

    builder = lg.StateGraph(JokeState)
    builder.add_node("notify", notify)
    builder.add_edge(lg.START, "notify")
    return builder.compile(checkpointer=saver or lg.InMemorySaver())


def test_a_replay_does_not_run_a_once_effect_the_thread_recorded(graphs_saver: Any) -> None:
    """Replaying from before the node that sent the notice runs the node again from its top:
    `once()` returns the recorded receipt, whether the thread's head recorded it in a finished
    step or as the pending write of a paused one; the question is asked again."""
    sent: list[str] = []
    graph = _notify_graph(sent, graphs_saver)
    Command = imports("graphs").types.Command
    config = {"configurable": {"thread_id": "notices"}}
    graph.invoke({"log": ["start"]}, config)  # paused in `notify`, the notice sent
    start = next(s for s in graph.get_state_history(config) if s.next == ("__start__",))
    again = graph.invoke(None, start.config)  # the head recorded it as a pending write
    assert [i.value for i in again["__interrupt__"]] == ["go on?"]
    done = graph.invoke(Command(resume="yes"), config)
    assert done["log"] == ["start", "receipt 1: yes"]
    after = graph.invoke(None, start.config)  # recorded in a finished step now
    assert [i.value for i in after["__interrupt__"]] == ["go on?"]
    assert graph.invoke(Command(resume="no"), config)["log"] == ["start", "receipt 1: no"]
    assert sent == ["notice"]


class DiesBeforeRecording(graphs.InMemorySaver):
    """Kills the 'process' after a `once()` effect ran, before its outcome is recorded."""

    dying = True

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if self.dying and any(c == "__once__" and v[1] == "done" for c, v in writes):
            raise ProcessDied
        super().put_writes(config, writes, task_id)


class ProcessDied(BaseException):
    """What the runtime sees of a process killed mid-node: nothing after this point happens."""


def test_time_travel_is_refused_while_an_effect_of_unknown_outcome_is_at_the_head() -> None:
    """The process died between sending the notice and recording it: the thread's head holds
    the effect started, outcome unknown. A replay or a fork would run the node under a new
    task where nothing says so, and could send it again unseen: both are refused, nothing
    written, until the head is resumed and the effect settled."""
    sent: list[str] = []
    saver = DiesBeforeRecording()
    graph = _notify_graph(sent, saver)
    config = {"configurable": {"thread_id": "notices"}}
    with pytest.raises(ProcessDied):
        graph.invoke({"log": ["start"]}, config)
    saver.dying = False
    start = next(s for s in graph.get_state_history(config) if s.next == ("__start__",))
    count = len(list(graph.get_state_history(config)))
    with pytest.raises(graphs.SideEffectUnknownError) as refused:
        graph.invoke(None, start.config)
    assert "time travel refused" in " ".join(refused.value.__notes__)
    with pytest.raises(graphs.SideEffectUnknownError):
        graph.update_state(start.config, {"log": ["other"]})
    assert len(list(graph.get_state_history(config))) == count
    assert sent == ["notice"]


def test_a_replay_saved_at_exit_stores_its_lists_whole(graphs_saver: Any) -> None:
    """Under `durability="exit"` the replay's steps are saved once, at its end, as the branch's
    first checkpoint: its lists are stored whole, never as items appended to a version of the
    old branch that happens to have the right length (the old head's `log` has 3 items, the
    replay's last step adds 1 to a list of 3 that is not that one)."""
    lg = imports("graphs")
    runs: list[int] = []

    def first(state: JokeState) -> JokeState:
        runs.append(1)
        return {"log": ["a"] if len(runs) == 1 else ["x", "w"]}

    def second(state: JokeState) -> JokeState:
        return {"log": ["b"] if len(runs) == 1 else ["y"]}

    builder = lg.StateGraph(JokeState)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(lg.START, "first")
    builder.add_edge("first", "second")
    graph = builder.compile(checkpointer=graphs_saver or lg.InMemorySaver())
    config = {"configurable": {"thread_id": "lists"}}
    assert graph.invoke({"log": ["start"]}, config)["log"] == ["start", "a", "b"]
    before_first = next(s for s in graph.get_state_history(config) if s.next == ("first",))
    replayed = graph.invoke(None, before_first.config, durability="exit")
    assert replayed["log"] == ["start", "x", "w", "y"]
    assert graph.get_state(config).values["log"] == ["start", "x", "w", "y"]
