"""`graphs.func`: `@entrypoint` graphs and `@task` calls, whose finished results a replay reuses."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphInterrupt,
    GraphSetupError,
    InMemorySaver,
    RetryPolicy,
    StateGraph,
    interrupt,
)
from graphs.cache import CachePolicy
from graphs.cache.memory import InMemoryCache
from graphs.checkpoint.base import BaseCheckpointSaver
from graphs.func import _call, entrypoint, task
from graphs.runtime import Runtime
from graphs.store.memory import InMemoryStore
from tests.graphs.checkpoint.test_contract import saver_fixture

saver = saver_fixture("memory", "sqlite")


def cfg(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


class Ran(Counter[str]):
    """How often each task ran (from any thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def hit(self, name: str) -> None:
        with self.lock:
            self[name] += 1


# ---- entrypoint as a graph ------------------------------------------------------------------


def test_an_entrypoint_returns_what_its_function_returns_and_streams_each_task() -> None:
    @task
    def double(x: int) -> int:
        return x * 2

    @entrypoint()
    def total(numbers: list[int]) -> int:
        return sum(f.result() for f in [double(n) for n in numbers])

    assert total.invoke([1, 2, 3]) == 12
    chunks = list(total.stream([1, 2]))
    assert sorted(chunks[:-1], key=str) == [{"double": 2}, {"double": 4}]
    assert chunks[-1] == {"total": 6}
    assert list(total.stream([4], stream_mode="values")) == [8]


def test_the_input_and_output_json_schemas_come_from_the_function_s_annotations() -> None:
    @entrypoint()
    def f(xs: list[int]) -> entrypoint.final[list[str], int]:
        return entrypoint.final(value=[str(x) for x in xs], save=len(xs))

    assert f.get_input_jsonschema() == {
        "type": "array",
        "items": {"type": "integer"},
        "title": "LangGraphInput",
    }
    assert f.get_output_jsonschema()["items"] == {"type": "string"}


def test_previous_is_the_last_run_s_return_and_final_saves_another_value(
    saver: BaseCheckpointSaver,
) -> None:
    seen: list[Any] = []

    @entrypoint(checkpointer=saver)
    def running_total(n: int, *, previous: Any = None) -> entrypoint.final[Any, int]:
        seen.append(previous)
        total = (previous or 0) + n
        return entrypoint.final(value=f"total {total}", save=total)

    config = cfg("sums")
    assert running_total.invoke(1, config) == "total 1"
    assert running_total.invoke(2, config) == "total 3"
    assert running_total.invoke(10, config) == "total 13"
    assert seen == [None, 1, 3]
    assert running_total.get_state(config).values == "total 13"
    # another thread starts afresh
    assert running_total.invoke(5, cfg("other")) == "total 5"


def test_config_runtime_and_store_are_given_by_name() -> None:
    @dataclass
    class Ctx:
        user: str

    store = InMemoryStore()
    store.put(("prefs",), "alice", {"tone": "brief"})

    @entrypoint(checkpointer=InMemorySaver(), store=store, context_schema=Ctx)
    def greet(name: str, *, config: Any, runtime: Runtime[Ctx], store: Any) -> str:
        item = store.get(("prefs",), runtime.context.user)
        return f"{name} for {runtime.context.user} ({item.value['tone']}) on {config['configurable']['thread_id']}"

    out = greet.invoke("report", cfg("t9"), context={"user": "alice"})
    assert out == "report for alice (brief) on t9"


# ---- durability: finished calls are not run again -------------------------------------------


def test_a_resumed_entrypoint_does_not_rerun_the_tasks_that_finished(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()

    @task
    def draft(topic: str) -> str:
        ran.hit("draft")
        return f"essay on {topic}"

    @entrypoint(checkpointer=saver)
    def review(topic: str) -> dict[str, str]:
        essay = draft(topic).result()
        verdict = interrupt({"essay": essay})
        return {"essay": essay, "verdict": verdict}

    config = cfg("r1")
    paused = review.invoke("cats", config)  # as LangGraph: the pause returns
    assert paused["__interrupt__"][0].value == {"essay": "essay on cats"}
    state = review.get_state(config)
    assert list(state.next) == ["review"]
    assert [i.value for i in state.interrupts] == [{"essay": "essay on cats"}]

    assert review.invoke(Command(resume="good"), config) == {
        "essay": "essay on cats",
        "verdict": "good",
    }
    assert ran == {"draft": 1}
    # a new run on the thread calls the task again: saved calls belong to one run
    assert "__interrupt__" in review.invoke("dogs", config)
    assert ran == {"draft": 2}


def test_nested_concurrent_calls_get_back_their_own_results_on_a_replay(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()

    @task
    def label(i: int) -> str:
        ran.hit(f"label{i}")
        time.sleep((3 - i % 10) / 100)  # finish in the reverse order of the calls
        return f"L{i}"

    @task
    def item(i: int) -> str:
        ran.hit(f"item{i}")
        return label(i).result() + label(i + 10).result()

    @entrypoint(checkpointer=saver, interrupt_mode="return")
    def flow(n: int) -> list[str]:
        futures = [item(i) for i in range(n)]
        got = [f.result() for f in futures]
        suffix = interrupt("suffix?")
        return [g + suffix for g in got]

    config = cfg("nest")
    paused = flow.invoke(3, config)
    assert [i.value for i in paused["__interrupt__"]] == ["suffix?"]
    assert flow.invoke(Command(resume="!"), config) == ["L0L10!", "L1L11!", "L2L12!"]
    assert set(ran.values()) == {1}  # nothing ran twice
    assert len(ran) == 9


def test_an_error_after_a_task_is_resumed_without_running_the_task_again(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()
    broken = {"yes": True}

    @task
    def charge(amount: int) -> str:
        ran.hit("charge")
        return f"charged {amount}"

    @task
    def notify(receipt: str) -> str:
        ran.hit("notify")
        if broken["yes"]:
            raise ConnectionError("mail server down")
        return f"sent: {receipt}"

    @entrypoint(checkpointer=saver)
    def refund(amount: int) -> str:
        return notify(charge(amount).result()).result()

    config = cfg("refund")
    with pytest.raises(ConnectionError, match="mail server down"):
        refund.invoke(42, config)
    broken["yes"] = False
    assert refund.invoke(None, config) == "sent: charged 42"
    assert ran == {"charge": 1, "notify": 2}


def test_an_interrupt_inside_a_task_pauses_the_run_and_its_answer_reaches_the_task(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()

    @task
    def prepare(x: int) -> int:
        ran.hit("prepare")
        return x + 1

    @task
    def approve(x: int) -> str:
        ran.hit("approve")
        answer = interrupt(f"approve {x}?")
        return f"{x}: {answer}"

    @entrypoint(checkpointer=saver)
    def flow(x: int) -> str:
        return approve(prepare(x).result()).result()

    config = cfg("ask")
    paused = flow.invoke(1, config)
    assert paused["__interrupt__"][0].value == "approve 2?"
    assert flow.invoke(Command(resume="yes"), config) == "2: yes"
    assert ran == {"prepare": 1, "approve": 2}  # the asking task runs again, from its top


def _two_approvals(saver: BaseCheckpointSaver, ran: Ran, finished: list[str]) -> Any:
    @task
    def approve(item: str) -> str:
        ran.hit(item)
        answer = interrupt(f"approve {item}?")
        finished.append(item)
        return f"{item}: {answer}"

    @task
    def count(items: list[str]) -> int:
        ran.hit("count")
        return len(items)

    @entrypoint(checkpointer=saver, interrupt_mode="return")
    def flow(items: list[str]) -> list[Any]:
        calls = [approve(item) for item in items]  # both start before either is waited for
        n = count(items)
        return [*(c.result() for c in calls), n.result()]

    return flow


def test_two_task_calls_that_pause_at_once_are_asked_in_one_pause(
    saver: BaseCheckpointSaver,
) -> None:
    ran, finished = Ran(), []
    flow = _two_approvals(saver, ran, finished)
    config = cfg("both")
    out = flow.invoke(["refund", "email"], config)
    asked = out["__interrupt__"]
    assert [i.value for i in asked] == ["approve refund?", "approve email?"]  # call order
    assert len({i.id for i in asked}) == 2
    state = flow.get_state(config)
    assert list(state.interrupts) == asked
    assert list(state.tasks[0].interrupts) == asked

    # One answer each, by id, in one resume: each task goes on once, the finished one is kept.
    answers = {asked[1].id: "no", asked[0].id: "yes"}
    assert flow.invoke(Command(resume=answers), config) == ["refund: yes", "email: no", 2]
    assert sorted(finished) == ["email", "refund"]
    assert ran == {"refund": 2, "email": 2, "count": 1}  # each asking task again, from its top
    assert flow.get_state(config).next == ()


def test_answering_one_of_two_pauses_asks_the_other_again_under_its_id(
    saver: BaseCheckpointSaver,
) -> None:
    ran, finished = Ran(), []
    flow = _two_approvals(saver, ran, finished)
    config = cfg("one")
    first, second = flow.invoke(["refund", "email"], config)["__interrupt__"]
    out = flow.invoke(Command(resume={first.id: "yes"}), config)
    assert out["__interrupt__"] == [second]
    assert finished == ["refund"]
    assert flow.invoke(Command(resume={second.id: "later"}), config) == [
        "refund: yes",
        "email: later",
        2,
    ]
    assert finished == ["refund", "email"]  # the answered task finished once, not again
    assert ran["refund"] == 2 and ran["email"] == 3


async def test_two_async_task_calls_that_pause_at_once_are_asked_in_one_pause(
    saver: BaseCheckpointSaver,
) -> None:
    finished: list[str] = []

    @task
    async def approve(item: str) -> str:
        answer = interrupt(f"approve {item}?")
        finished.append(item)
        return f"{item}: {answer}"

    @entrypoint(checkpointer=saver)
    async def flow(items: list[str]) -> list[str]:
        return list(await asyncio.gather(*[approve(item) for item in items]))

    config = cfg("async-both")
    paused = await flow.ainvoke(["a", "b", "c"], config)
    asked = paused["__interrupt__"]
    assert [i.value for i in asked] == ["approve a?", "approve b?", "approve c?"]
    answers = {i.id: n for n, i in enumerate(asked)}
    assert await flow.ainvoke(Command(resume=answers), config) == ["a: 0", "b: 1", "c: 2"]
    assert sorted(finished) == ["a", "b", "c"]


def test_two_task_calls_of_a_state_graph_node_that_pause_at_once_are_asked_in_one_pause(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()

    @task
    def approve(item: str) -> str:
        ran.hit(item)
        return f"{item}: {interrupt(f'approve {item}?')}"

    class State(TypedDict, total=False):
        items: list[str]
        done: list[str]

    def review(state: State) -> State:
        calls = [approve(item) for item in state["items"]]
        return {"done": [c.result() for c in calls]}

    g = StateGraph(State)
    g.add_node("review", review)
    g.add_edge(START, "review")
    g.add_edge("review", END)
    app = g.compile(checkpointer=saver)
    config = cfg("node-both")
    with pytest.raises(GraphInterrupt) as paused:
        app.invoke({"items": ["refund", "email"]}, config)
    asked = paused.value.interrupts
    assert [i.value for i in asked] == ["approve refund?", "approve email?"]
    assert app.get_state(config).interrupts == asked
    out = app.invoke(Command(resume={asked[0].id: "yes", asked[1].id: "no"}), config)
    assert out["done"] == ["refund: yes", "email: no"]
    assert ran == {"refund": 2, "email": 2}


def test_a_task_called_in_a_state_graph_node_is_not_run_again_when_the_node_resumes(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()

    @task
    def lookup(customer: str) -> dict[str, Any]:
        ran.hit("lookup")
        return {"customer": customer, "limit": 100}

    class State(TypedDict):
        customer: str
        decision: str

    def decide(state: State) -> dict[str, Any]:
        account = lookup(state["customer"]).result()
        answer = interrupt({"account": account})
        return {"decision": f"{answer} (limit {account['limit']})"}

    g = StateGraph(State)
    g.add_node("decide", decide)
    g.add_edge(START, "decide")
    g.add_edge("decide", END)
    app = g.compile(checkpointer=saver)
    config = cfg("node")
    with pytest.raises(GraphInterrupt):
        app.invoke({"customer": "acme"}, config)
    out = app.invoke(Command(resume="approved"), config)
    assert out == {"customer": "acme", "decision": "approved (limit 100)"}
    assert ran == {"lookup": 1}


async def test_async_tasks_run_on_the_event_loop_and_are_not_rerun_on_resume(
    saver: BaseCheckpointSaver,
) -> None:
    ran = Ran()
    running = 0
    most = 0

    @task
    async def fetch(i: int) -> int:
        nonlocal running, most
        ran.hit(f"fetch{i}")
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)
        running -= 1
        return i * i

    @task
    def sync_step(total: int) -> int:  # a sync task awaited from async code
        ran.hit("sync_step")
        return total + 1

    @entrypoint(checkpointer=saver)
    async def flow(n: int) -> int:
        squares = await asyncio.gather(*[fetch(i) for i in range(n)])
        total = await sync_step(sum(squares))
        ok = interrupt("ok?")
        return total if ok else -1

    config = cfg("async")
    chunks = []
    async for chunk in flow.astream(3, config):
        chunks.append(chunk)
    assert "__interrupt__" in chunks[-1]  # as LangGraph: the stream ends with the pause
    assert sorted(chunks[:-1], key=str) == [
        {"fetch": 0},
        {"fetch": 1},
        {"fetch": 4},
        {"sync_step": 6},
    ]
    assert most == 3  # the three fetches ran at once
    assert await flow.ainvoke(Command(resume=True), config) == 6
    assert set(ran.values()) == {1}


def test_a_task_called_outside_a_running_graph_says_where_to_call_it() -> None:
    @task
    def lonely(x: int) -> int:
        return x

    with pytest.raises(RuntimeError, match="call it inside an @entrypoint function"):
        lonely(1)


def test_entrypoint_without_parentheses_says_to_add_them() -> None:
    with pytest.raises(GraphSetupError, match=r"write @entrypoint\(\)"):

        @entrypoint  # type: ignore[arg-type]
        def forgot(x: int) -> int:
            return x


def test_a_task_s_retry_policy_retries_its_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_call, "sleep", lambda _s: None)
    attempts = Ran()

    @task(retry_policy=RetryPolicy(max_attempts=3, retry_on=ConnectionError))
    def flaky(x: int) -> int:
        attempts.hit("flaky")
        if attempts["flaky"] < 3:
            raise ConnectionError("try again")
        return x

    @task(retry_policy=RetryPolicy(max_attempts=3, retry_on=ConnectionError))
    def wrong(x: int) -> int:
        attempts.hit("wrong")
        raise ValueError("bad input")

    @entrypoint()
    def ok(x: int) -> int:
        return flaky(x).result()

    @entrypoint()
    def bad(x: int) -> int:
        return wrong(x).result()

    assert ok.invoke(7) == 7
    assert attempts["flaky"] == 3
    with pytest.raises(ValueError, match="bad input"):
        bad.invoke(1)
    assert attempts["wrong"] == 1  # not an error the policy retries


def test_a_cached_task_is_not_called_again_for_the_same_arguments() -> None:
    ran = Ran()

    @task(cache_policy=CachePolicy(ttl=60))
    def slow_square(x: int) -> int:
        ran.hit(f"sq{x}")
        return x * x

    @entrypoint(cache=InMemoryCache())
    def squares(xs: list[int]) -> list[int]:
        return [f.result() for f in [slow_square(x) for x in xs]]

    assert squares.invoke([2, 3]) == [4, 9]
    assert squares.invoke([3, 2, 4]) == [9, 4, 16]
    assert ran == {"sq2": 1, "sq3": 1, "sq4": 1}


def test_an_entrypoint_without_a_checkpointer_runs_as_a_subgraph_inside_a_node() -> None:
    ran = Ran()

    @task
    def times(a: int, b: int) -> int:
        ran.hit("times")
        return a * b

    @entrypoint()
    def multiply(pair: list[int]) -> int:
        product = times(*pair).result()
        return product if interrupt(f"{product}?") else 0

    class State(TypedDict):
        a: int
        b: int
        product: int

    def node(state: State) -> dict[str, int]:
        return {"product": multiply.invoke([state["a"], state["b"]])}

    g = StateGraph(State)
    g.add_node("node", node)
    g.add_edge(START, "node")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt) as paused:  # the pause inside pauses the parent
        app.invoke({"a": 6, "b": 7}, cfg("sub"))
    assert paused.value.interrupts[0].value == "42?"
    assert app.invoke(Command(resume=True), cfg("sub")) == {"a": 6, "b": 7, "product": 42}
    assert ran == {"times": 1}  # saved in the subgraph's namespace, reused on resume


# ---- a real restart ---------------------------------------------------------------------------

WORKER = str(Path(__file__).with_name("func_worker.py"))


def test_a_process_killed_after_task_one_is_saved_resumes_without_rerunning_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'func.db'}"
    log, marker = tmp_path / "ran.log", tmp_path / "second-started"
    dying = subprocess.Popen(
        [sys.executable, WORKER, "start", url, "crash", str(log), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert dying.poll() is None, dying.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.02)
        dying.send_signal(signal.SIGKILL)
    finally:
        dying.kill()
        dying.communicate()
    assert log.read_text().split() == ["first", "second"]

    done = subprocess.run(
        [sys.executable, WORKER, "resume", url, "crash", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"a": 6, "b": 60}
    assert log.read_text().split() == ["first", "second", "second"]  # `first` ran once
