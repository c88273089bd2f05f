"""The saver contract, and every runtime feature, run against every saver.

To add a saver, add a factory to `SAVER_FACTORIES`: it gets the pytest `request` (so it can use
fixtures through `request.getfixturevalue(...)` and register cleanup with
`request.addfinalizer(...)`) and returns a fresh, empty saver. Marks for a saver (for example
`pytest.mark.postgres`) go in `SAVER_MARKS`.

`DictSaver` below is what a user would write against `BaseCheckpointSaver` from its docstrings
alone: plain dicts and deep copies. That it passes everything here is the proof that a user
saver works with every feature.
"""

import asyncio
import copy
import operator
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    BaseCheckpointSaver,
    CheckpointConflictError,
    CheckpointTuple,
    Command,
    GraphInterrupt,
    InMemorySaver,
    StateGraph,
    ThreadBusyError,
    interrupt,
    once,
)
from graphs.checkpoint import Checkpoint, CheckpointMetadata, PendingWrite
from graphs.checkpoint.base import BRANCH_HEAD, branch_head


class DictSaver(BaseCheckpointSaver):
    """A user's saver: each thread's checkpoints in a list, oldest first; writes by checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.writes: dict[tuple[str, str, str], list[tuple[str, str, Any]]] = {}

    @staticmethod
    def _key(config: Any) -> tuple[str, str]:
        c = config["configurable"]
        return c["thread_id"], c.get("checkpoint_ns") or ""

    @staticmethod
    def _config(key: tuple[str, str], checkpoint_id: str) -> Any:
        return {
            "configurable": {
                "thread_id": key[0],
                "checkpoint_ns": key[1],
                "checkpoint_id": checkpoint_id,
            }
        }

    def _tuple(self, key: tuple[str, str], row: dict[str, Any]) -> CheckpointTuple:
        checkpoint_id = row["checkpoint"]["id"]
        writes = self.writes.get((*key, checkpoint_id), [])
        return CheckpointTuple(
            config=self._config(key, checkpoint_id),
            checkpoint=copy.deepcopy(row["checkpoint"]),
            metadata=copy.deepcopy(row["metadata"]),
            parent_config=self._config(key, row["parent"]) if row["parent"] else None,
            pending_writes=[PendingWrite(*w) for w in copy.deepcopy(writes)],
        )

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        key = self._key(config)
        wanted = config["configurable"].get("checkpoint_id")
        for row in reversed(self.rows.get(key, [])):
            if wanted is None or row["checkpoint"]["id"] == wanted:
                return self._tuple(key, row)
        return None

    def list(
        self, config: Any, *, before: Any = None, limit: int | None = None
    ) -> Iterator[CheckpointTuple]:
        keys = list(self.rows) if config is None else [self._key(config)]
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        found = []
        for key in keys:
            rows = self.rows.get(key, [])
            ids = [row["checkpoint"]["id"] for row in rows]
            if before_id in ids:
                rows = rows[: ids.index(before_id)]
            found += [self._tuple(key, row) for row in reversed(rows)]
        return iter(found if limit is None else found[:limit])

    def put(
        self,
        config: Any,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: dict[str, int],
    ) -> Any:
        key = self._key(config)
        rows = self.rows.setdefault(key, [])
        head = rows[-1]["checkpoint"]["id"] if rows else None
        parent = config["configurable"].get("checkpoint_id")
        expected = branch_head(config) or parent  # a branch names the head it is written over
        if expected != head:
            raise CheckpointConflictError(f"head is {head!r}, not {expected!r}", key[0])
        if expected != parent and all(r["checkpoint"]["id"] != parent for r in rows):
            raise CheckpointConflictError(f"no checkpoint {parent!r} to branch from", key[0])
        row = {"checkpoint": checkpoint, "metadata": metadata, "parent": parent}
        rows.append(copy.deepcopy(row))
        return self._config(key, checkpoint["id"])

    def put_writes(self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str) -> None:
        where = (*self._key(config), config["configurable"]["checkpoint_id"])
        stored = self.writes.setdefault(where, [])
        stored += [(task_id, channel, copy.deepcopy(value)) for channel, value in writes]

    def delete_thread(self, thread_id: str) -> None:
        self.rows = {k: v for k, v in self.rows.items() if k[0] != thread_id}
        self.writes = {k: v for k, v in self.writes.items() if k[0] != thread_id}


SaverFactory = Callable[[pytest.FixtureRequest], BaseCheckpointSaver]


def sql_saver(request: pytest.FixtureRequest, kind: str) -> BaseCheckpointSaver:
    """A set-up `SQLSaver` on a fresh database (fixtures in this folder's conftest.py)."""
    from graphs.checkpoint.sql import SQLSaver

    if kind == "sqlite":
        url = f"sqlite:///{request.getfixturevalue('tmp_path') / 'contract.db'}"
    elif kind == "sqlite_memory":
        url = "sqlite://"
    else:
        url = request.getfixturevalue("pg_url")
    saver = SQLSaver(url)
    saver.setup()
    request.addfinalizer(saver.close)
    return saver


SAVER_FACTORIES: dict[str, SaverFactory] = {
    "memory": lambda request: InMemorySaver(),
    "user_dict_saver": lambda request: DictSaver(),
    "sqlite": lambda request: sql_saver(request, "sqlite"),
    "sqlite_memory": lambda request: sql_saver(request, "sqlite_memory"),
    "postgres": lambda request: sql_saver(request, "postgres"),
}
SAVER_MARKS: dict[str, list[pytest.MarkDecorator]] = {"postgres": [pytest.mark.postgres]}


def saver_fixture(*names: str, name: str = "saver") -> Any:
    """A fixture `name` over the named savers (all of them when none is named), each with its
    marks: a test module says `saver = saver_fixture("memory", "sqlite")`."""

    @pytest.fixture(
        name=name,
        params=[pytest.param(n, marks=SAVER_MARKS.get(n, [])) for n in names or SAVER_FACTORIES],
    )
    def saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
        return SAVER_FACTORIES[request.param](request)

    return saver


saver = saver_fixture()


# ---- the saver API directly ------------------------------------------------------------------


def thread(name: str = "t", ns: str = "") -> Any:
    return {"configurable": {"thread_id": name, "checkpoint_ns": ns}}


def checkpoint(seq: int, values: dict[str, Any], versions: dict[str, int], **extra: Any) -> Any:
    return Checkpoint(
        v=1,
        id=f"{seq:012x}-0000000{seq % 10}",
        ts=f"2026-01-01T00:00:{seq:02d}+00:00",
        channel_values=values,
        channel_versions=versions,
        next_tasks=extra.get("next_tasks", []),
        paused=[],
        appended=extra.get("appended", {}),
    )


def put_chain(saver: BaseCheckpointSaver, config: Any, count: int) -> list[Any]:
    """`count` checkpoints; `log` grows by one item each time, `owner` is written once."""
    configs, parent, log = [], config, []
    for seq in range(count):
        log = [*log, seq]
        new_versions = {"log": seq + 1, **({"owner": 1} if seq == 0 else {})}
        cp = checkpoint(
            seq,
            {"log": log, "owner": "ada"},
            {"log": seq + 1, "owner": 1},
            next_tasks=[["node", f"task{seq}"]],
            appended={"log": 1} if seq else {},
        )
        parent = saver.put(parent, cp, {"source": "loop", "step": seq}, new_versions)
        configs.append(parent)
    return configs


def test_an_empty_saver(saver: BaseCheckpointSaver) -> None:
    assert saver.get_tuple(thread()) is None
    assert list(saver.list(thread())) == []
    assert list(saver.list(None)) == []


def test_put_then_get_tuple(saver: BaseCheckpointSaver) -> None:
    first, second = put_chain(saver, thread(), 2)
    assert first["configurable"] == {
        "thread_id": "t",
        "checkpoint_ns": "",
        "checkpoint_id": "000000000000-00000000",
    }
    head = saver.get_tuple(thread())
    assert head is not None
    assert head.config == second
    assert head.parent_config == first
    assert head.metadata == {"source": "loop", "step": 1}
    assert head.checkpoint["channel_values"] == {"log": [0, 1], "owner": "ada"}
    assert head.checkpoint["channel_versions"] == {"log": 2, "owner": 1}
    assert head.checkpoint["next_tasks"] == [["node", "task1"]]
    assert head.checkpoint["ts"] == "2026-01-01T00:00:01+00:00"
    assert head.pending_writes == []
    older = saver.get_tuple(first)
    assert older is not None and older.checkpoint["channel_values"] == {"log": [0], "owner": "ada"}
    assert older.parent_config is None
    missing = {"configurable": {**thread()["configurable"], "checkpoint_id": "0" * 12 + "-x"}}
    assert saver.get_tuple(missing) is None


def test_list_is_newest_first_with_limit_and_before(saver: BaseCheckpointSaver) -> None:
    configs = put_chain(saver, thread(), 5)
    put_chain(saver, thread("other"), 1)
    ids = [c["configurable"]["checkpoint_id"] for c in configs]

    assert [t.config["configurable"]["checkpoint_id"] for t in saver.list(thread())] == ids[::-1]
    assert [t.metadata["step"] for t in saver.list(thread(), limit=2)] == [4, 3]
    assert [t.metadata["step"] for t in saver.list(thread(), before=configs[3])] == [2, 1, 0]
    assert len(list(saver.list(None))) == 6


def test_history_never_forks(saver: BaseCheckpointSaver) -> None:
    first, _second = put_chain(saver, thread(), 2)
    with pytest.raises(CheckpointConflictError):
        saver.put(first, checkpoint(7, {}, {}), {"source": "loop", "step": 1}, {})
    with pytest.raises(CheckpointConflictError):  # a "new thread" that already exists
        saver.put(thread(), checkpoint(8, {}, {}), {"source": "input", "step": 0}, {})
    assert [t.metadata["step"] for t in saver.list(thread())] == [1, 0]


def test_a_branch_from_a_past_checkpoint_is_a_compare_and_set_on_the_head(
    saver: BaseCheckpointSaver,
) -> None:
    """A put that names the head it is written over (`BRANCH_HEAD`, LangGraph's time travel)
    may have a past checkpoint as its parent; it is refused when the head moved or the parent
    is not the thread's, and the past stays as it was."""
    first, second = put_chain(saver, thread(), 2)
    second_id = second["configurable"]["checkpoint_id"]

    def over(head: str, parent: Any = first) -> Any:
        return {"configurable": {**parent["configurable"], BRANCH_HEAD: head}}

    new = checkpoint(2, {"log": [0, 9], "owner": "bob"}, {"log": 3, "owner": 2})
    with pytest.raises(CheckpointConflictError):  # the head named is not the head
        saver.put(over(first["configurable"]["checkpoint_id"]), new, {"step": 1}, {"log": 3})
    elsewhere = {"configurable": {**first["configurable"], "checkpoint_id": "0000000000ff-x"}}
    with pytest.raises(CheckpointConflictError):  # no such checkpoint to branch from
        saver.put(over(second_id, elsewhere), new, {"step": 1}, {"log": 3})
    assert [t.metadata["step"] for t in saver.list(thread())] == [1, 0]

    made = saver.put(over(second_id), new, {"source": "fork", "step": 1}, {"log": 3, "owner": 2})
    head = saver.get_tuple(thread())
    assert head is not None and head.config == made and head.parent_config == first
    assert head.checkpoint["channel_values"] == {"log": [0, 9], "owner": "bob"}
    old = saver.get_tuple(second)
    assert old is not None and old.checkpoint["channel_values"] == {"log": [0, 1], "owner": "ada"}
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(thread())]
    assert listed == [new["id"], second_id, first["configurable"]["checkpoint_id"]]
    with pytest.raises(CheckpointConflictError):  # the same branch again: the head moved
        saver.put(over(second_id), checkpoint(3, {}, {}), {"step": 1}, {})
    with pytest.raises(CheckpointConflictError):  # and a plain put from the past still fails
        saver.put(first, checkpoint(4, {}, {}), {"step": 1}, {})


def test_pending_writes_keep_their_order_and_their_checkpoint(saver: BaseCheckpointSaver) -> None:
    first, second = put_chain(saver, thread(), 2)
    saver.put_writes(second, [("log", [9]), ("__done__", True)], "task-a")
    saver.put_writes(second, [("__error__", "Boom: no")], "task-b")
    saver.put_writes(second, [("__resume__", ["id1", {"approved": True}])], "task-a")
    saver.put_writes(first, [("log", ["old"])], "task-z")

    head = saver.get_tuple(thread())
    assert head is not None
    assert [tuple(w) for w in head.pending_writes] == [
        ("task-a", "log", [9]),
        ("task-a", "__done__", True),
        ("task-b", "__error__", "Boom: no"),
        ("task-a", "__resume__", ["id1", {"approved": True}]),
    ]
    older = saver.get_tuple(first)
    assert older is not None and [tuple(w) for w in older.pending_writes] == [
        ("task-z", "log", ["old"])
    ]


def test_namespaces_are_separate_and_delete_thread_removes_them_all(
    saver: BaseCheckpointSaver,
) -> None:
    put_chain(saver, thread("t"), 2)
    put_chain(saver, thread("t", ns="side"), 3)
    put_chain(saver, thread("keep"), 1)
    assert len(list(saver.list(thread("t", ns="side")))) == 3

    saver.delete_thread("t")

    assert saver.get_tuple(thread("t")) is None
    assert saver.get_tuple(thread("t", ns="side")) is None
    assert len(list(saver.list(thread("keep")))) == 1
    put_chain(saver, thread("t"), 1)  # the id can be used again
    assert len(list(saver.list(thread("t")))) == 1


def test_stored_values_are_copies(saver: BaseCheckpointSaver) -> None:
    values = {"log": [1], "meta": {"k": [1]}}
    cp = checkpoint(0, values, {"log": 1, "meta": 1})
    config = saver.put(thread(), cp, {"source": "input", "step": 0}, {"log": 1, "meta": 1})
    values["log"].append("mutated")
    values["meta"]["k"].append("mutated")
    answer = {"approved": True}
    saver.put_writes(config, [("__resume__", ["id", answer])], "task")
    answer["approved"] = False

    read = saver.get_tuple(thread())
    assert read is not None
    read.checkpoint["channel_values"]["log"].append("mutated after read")
    again = saver.get_tuple(thread())
    assert again is not None
    assert again.checkpoint["channel_values"] == {"log": [1], "meta": {"k": [1]}}
    assert [tuple(w) for w in again.pending_writes] == [
        ("task", "__resume__", ["id", {"approved": True}])
    ]


async def test_async_twins(saver: BaseCheckpointSaver) -> None:
    config = await saver.aput(
        thread(), checkpoint(0, {"a": 1}, {"a": 1}), {"source": "input", "step": 0}, {"a": 1}
    )
    await saver.aput_writes(config, [("a", 2)], "task")
    head = await saver.aget_tuple(thread())
    assert head is not None and head.checkpoint["channel_values"] == {"a": 1}
    assert [tuple(w) for w in head.pending_writes] == [("task", "a", 2)]
    assert [t.config async for t in saver.alist(thread(), limit=10)] == [config]
    await saver.adelete_thread("t")
    assert await saver.aget_tuple(thread()) is None


def test_one_holder_per_thread(saver: BaseCheckpointSaver) -> None:
    with saver.lock_thread(thread("t")):
        with pytest.raises(ThreadBusyError), saver.lock_thread(thread("t")):
            pass
        with saver.lock_thread(thread("u")):  # other threads are free
            pass
    with saver.lock_thread(thread("t")):  # released
        pass


# ---- every runtime feature, on this saver ------------------------------------------------------


class State(TypedDict):
    log: Annotated[list, operator.add]
    status: str


CONFIG = {"configurable": {"thread_id": "t"}}


def counted(name: str, calls: Counter) -> Any:
    def node(state: State) -> dict[str, Any]:
        calls[name] += 1
        return {"log": [name]}

    return node


def asking(name: str, calls: Counter) -> Any:
    def node(state: State) -> dict[str, Any]:
        calls[name] += 1
        return {"log": [f"{name}={interrupt(name + '?')}"]}

    return node


def test_runs_history_and_threads(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()
    g = StateGraph(State).add_node("a", counted("a", calls)).add_node("b", counted("b", calls))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(checkpointer=saver)
    app.invoke({"log": ["1"]}, CONFIG)
    assert app.invoke({"log": ["2"]}, CONFIG) == {"log": ["1", "a", "b", "2", "a", "b"]}
    assert app.invoke({"log": []}, {"configurable": {"thread_id": "u"}}) == {"log": ["a", "b"]}
    history = list(app.get_state_history(CONFIG))
    # LangGraph's layout: each run's input checkpoint, then its steps, numbered on.
    assert [(s.metadata["source"], s.metadata["step"]) for s in history] == [
        ("loop", 6),
        ("loop", 5),
        ("loop", 4),
        ("input", 3),
        ("loop", 2),
        ("loop", 1),
        ("loop", 0),
        ("input", -1),
    ]
    assert app.get_state(history[3].config).values == {"log": ["1", "a", "b"]}
    assert app.get_state(history[2].config).values == {"log": ["1", "a", "b", "2"]}


def test_interrupt_resume_and_finished_branches(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()
    g = StateGraph(State)
    g.add_node("a", asking("a", calls)).add_node("b", asking("b", calls))
    g.add_node("c", counted("c", calls)).add_node("d", counted("d", calls))
    g.add_edge(START, "a").add_edge(START, "b").add_edge(START, "c")
    g.add_edge(["a", "b", "c"], "d")
    app = g.compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    ids = {i.node: i.id for i in info.value.interrupts}
    assert app.get_state(CONFIG).interrupts == info.value.interrupts

    with pytest.raises(GraphInterrupt):
        app.invoke(Command(resume={ids["a"]: "A"}), CONFIG)
    assert app.invoke(Command(resume={ids["b"]: "B"}), CONFIG) == {"log": ["a=A", "b=B", "c", "d"]}
    assert calls == Counter(a=2, b=3, c=1, d=1)


def test_static_interrupt_update_state_and_as_node(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()
    g = StateGraph(State).add_node("plan", counted("plan", calls))
    g.add_node("act", lambda s: {"log": [f"act:{s['status']}"]})
    g.add_edge(START, "plan").add_edge("plan", "act")
    app = g.compile(checkpointer=saver, interrupt_before=["plan", "act"])

    def paused_at() -> list[str]:
        head = saver.get_tuple(CONFIG)
        assert head is not None
        return head.checkpoint["paused"]

    with pytest.raises(GraphInterrupt):
        app.invoke({"log": ["in"], "status": "new"}, CONFIG)
    assert paused_at() == ["plan"]
    app.update_state(CONFIG, {"log": ["my plan"]}, as_node="plan")
    assert app.get_state(CONFIG).next == ("act",)
    assert paused_at() == ["act"]  # as if plan had run: now paused before act
    new_config = app.update_state(CONFIG, {"status": "approved"})
    assert app.get_state(CONFIG).config == new_config
    assert paused_at() == ["act"]  # an update does not lift the pause
    assert app.invoke(None, CONFIG) == {
        "log": ["in", "my plan", "act:approved"],
        "status": "approved",
    }
    assert paused_at() == []
    assert calls == Counter()
    fresh = app.update_state({"configurable": {"thread_id": "fresh"}}, {"status": "seeded"})
    assert app.get_state(fresh).values == {"status": "seeded", "log": []}


def test_failure_and_resume(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()
    broken = [True]

    def flaky(state: State) -> dict[str, Any]:
        calls["flaky"] += 1
        if broken[0]:
            raise TimeoutError("gateway")
        return {"log": ["flaky"]}

    g = StateGraph(State).add_node("ok", counted("ok", calls)).add_node("flaky", flaky)
    g.add_edge(START, "ok").add_edge(START, "flaky")
    app = g.compile(checkpointer=saver)
    with pytest.raises(TimeoutError):
        app.invoke({"log": []}, CONFIG)
    assert [(t.name, t.done, t.error) for t in app.get_state(CONFIG).tasks] == [
        ("ok", True, None),
        ("flaky", False, "TimeoutError('gateway')"),
    ]
    broken[0] = False
    # ok's saved write and flaky's are applied by node name, as in LangGraph.
    assert app.invoke(None, CONFIG) == {"log": ["flaky", "ok"]}
    assert calls == Counter(ok=1, flaky=2)


def test_once_across_replays(saver: BaseCheckpointSaver) -> None:
    drafted: list[int] = []

    def ask(state: State) -> dict[str, Any]:
        text = once("draft", lambda: drafted.append(1) or f"draft {len(drafted)}")
        return {"log": [f"{interrupt(text)}: {text}"]}

    app = StateGraph(State).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": []}, CONFIG)
    with pytest.raises(GraphInterrupt):
        app.invoke(None, CONFIG)
    assert app.invoke(Command(resume="ok"), CONFIG) == {"log": ["ok: draft 1"]}
    # Once per thread: a later run on the thread gets the stored draft.
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"log": []}, CONFIG)
    assert info.value.interrupts[0].value == "draft 1"
    assert drafted == [1]


async def test_async_runs(saver: BaseCheckpointSaver) -> None:
    calls: Counter = Counter()

    async def ask(state: State) -> dict[str, Any]:
        calls["ask"] += 1
        return {"status": interrupt("status?")}

    async def other(state: State) -> dict[str, Any]:
        calls["other"] += 1
        await asyncio.sleep(0)
        return {"log": ["other"]}

    g = StateGraph(State).add_node("ask", ask).add_node("other", other)
    g.add_edge(START, "ask").add_edge(START, "other")
    app = g.compile(checkpointer=saver)
    with pytest.raises(GraphInterrupt):
        await app.ainvoke({"log": []}, CONFIG)
    chunks = [c async for c in app.astream(Command(resume="done"), CONFIG, stream_mode="updates")]
    # "other" finished in the paused attempt: its update shows first, marked, and it does not run
    assert chunks == [
        {"other": {"log": ["other"]}, "__metadata__": {"cached": True}},
        {"ask": {"status": "done"}},
    ]
    assert (await app.aget_state(CONFIG)).values == {"log": ["other"], "status": "done"}
    assert calls == Counter(ask=2, other=1)


def test_a_long_append_only_list_reads_back_exactly(saver: BaseCheckpointSaver) -> None:
    g = StateGraph(State)
    g.add_node("grow", lambda s: {"log": [len(s["log"])]})
    g.add_edge(START, "grow")
    g.add_conditional_edges("grow", lambda s: "grow" if len(s["log"]) % 10 else END)
    app = g.compile(checkpointer=saver)
    app.invoke({"log": [0]}, CONFIG)
    app.update_state(CONFIG, {"log": ["replaced"]})  # a replacement, not an append
    app.invoke({"log": []}, CONFIG)
    expected = ["replaced", *range(1, 10)]
    assert app.get_state(CONFIG).values["log"] == expected
    oldest_first = [s.values.get("log") for s in app.get_state_history(CONFIG)][::-1]
    assert oldest_first == [
        [],  # the first run's input checkpoint: the state before it (a reducer key's empty value)
        [0],
        *[list(range(n)) for n in range(2, 11)],
        ["replaced"],  # update_state
        ["replaced"],  # the second run's input checkpoint
        ["replaced"],  # its input (an empty list) applied
        *[["replaced", *range(1, n)] for n in range(2, 11)],
    ]


def test_mutations_after_a_step_do_not_reach_the_saved_history(saver: BaseCheckpointSaver) -> None:
    def vandal(state: State) -> dict[str, Any]:
        state["log"].append("evil")
        return {"status": "vandalised"}

    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_node("vandal", vandal)
    app = g.add_edge(START, "a").add_edge("a", "vandal").compile(checkpointer=saver)
    result = app.invoke({"log": []}, CONFIG)
    result["log"].append("result mutated")
    values = [s.values for s in app.get_state_history(CONFIG)][::-1]
    assert values[:3] == [{"log": []}, {"log": []}, {"log": ["a"]}]


async def test_one_run_per_thread_through_the_saver(saver: BaseCheckpointSaver) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(state: State) -> dict[str, Any]:
        started.set()
        async with asyncio.timeout(5):
            await release.wait()
        return {"log": ["slow"]}

    app = (
        StateGraph(State).add_node("slow", slow).add_edge(START, "slow").compile(checkpointer=saver)
    )
    first = asyncio.create_task(app.ainvoke({"log": []}, CONFIG))
    async with asyncio.timeout(5):
        await started.wait()
    with pytest.raises(ThreadBusyError):
        await app.ainvoke({"log": []}, CONFIG)
    release.set()
    assert await first == {"log": ["slow"]}


def test_delete_thread_forgets_the_thread(saver: BaseCheckpointSaver) -> None:
    app = (
        StateGraph(State)
        .add_node("a", lambda s: {"log": ["a"]})
        .add_edge(START, "a")
        .compile(checkpointer=saver)
    )
    app.invoke({"log": []}, CONFIG)
    saver.delete_thread("t")
    assert (app.get_state(CONFIG).values, list(app.get_state_history(CONFIG))) == ({}, [])
    assert app.invoke({"log": ["new"]}, CONFIG) == {"log": ["new", "a"]}
