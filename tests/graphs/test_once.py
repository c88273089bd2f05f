"""`once()` / `aonce()`: a side effect runs once per thread, however often its node is replayed."""

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest

from graphs import (
    END,
    START,
    Command,
    GraphInterrupt,
    InMemorySaver,
    SideEffectUnknownError,
    StateGraph,
    aonce,
    interrupt,
    once,
)


class State(TypedDict):
    customer: str
    log: Annotated[list, operator.add]


def config(thread: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


# ---- the example: replay-safe code before an interrupt() -----------------------------------


class Outbox:
    """Stands in for a model that drafts, and a mail server that sends."""

    def __init__(self) -> None:
        self.drafted = 0
        self.sent: list[str] = []

    def draft(self, customer: str) -> str:
        self.drafted += 1
        return f"Dear {customer}, your refund (draft #{self.drafted}) is approved."

    def send(self, text: str) -> None:
        self.sent.append(text)


def email_graph(outbox: Outbox) -> Any:
    def write_and_ask(state: State) -> dict[str, Any]:
        # This node runs again from its top when the thread is resumed. The draft (a model
        # call that costs money and would differ each time) is wrapped in once(): it runs on
        # the first pass only, and every replay gets the stored text back.
        text = once("draft", outbox.draft, state["customer"])
        decision = interrupt({"action": "send_email", "text": text})
        return {"log": [f"{decision['approved']}: {text}"]}

    def send(state: State) -> dict[str, Any]:
        # The irreversible part comes after the decision, in a node of its own.
        outbox.send(state["log"][-1])
        return {}

    g = StateGraph(State).add_node("write_and_ask", write_and_ask).add_node("send", send)
    g.add_edge(START, "write_and_ask").add_edge("write_and_ask", "send").add_edge("send", END)
    return g.compile(checkpointer=InMemorySaver())


def test_the_reviewer_approves_the_text_that_is_sent() -> None:
    outbox = Outbox()
    app = email_graph(outbox)
    with pytest.raises(GraphInterrupt) as info:
        app.invoke({"customer": "Ada"}, config())
    shown = info.value.interrupts[0].value["text"]

    with pytest.raises(GraphInterrupt):
        app.invoke(None, config())  # resumed without an answer: replays, asks again

    app.invoke(Command(resume={"approved": True}), config())

    assert shown == "Dear Ada, your refund (draft #1) is approved."
    assert outbox.drafted == 1
    assert outbox.sent == [f"True: {shown}"]


def test_once_is_per_thread() -> None:
    outbox = Outbox()
    app = email_graph(outbox)
    for thread in ("one", "two"):
        with pytest.raises(GraphInterrupt):
            app.invoke({"customer": "Ada"}, config(thread))
    assert outbox.drafted == 2


def test_a_stored_result_survives_later_runs_on_the_thread() -> None:
    calls: Counter = Counter()

    def token() -> str:
        calls["token"] += 1
        return f"tok-{calls['token']}"

    g = StateGraph(State).add_node("n", lambda s: {"log": [once("token", token)]})
    app = g.add_edge(START, "n").compile(checkpointer=InMemorySaver())
    app.invoke({"log": []}, config())
    assert app.invoke({"log": []}, config()) == {"log": ["tok-1", "tok-1"]}
    assert calls == Counter(token=1)


def test_a_failed_effect_is_not_stored_and_runs_again() -> None:
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("mail server down")
        return "sent"

    g = StateGraph(State).add_node("n", lambda s: {"log": [once("mail", flaky)]})
    app = g.add_edge(START, "n").compile(checkpointer=InMemorySaver())
    with pytest.raises(ConnectionError):
        app.invoke({"log": []}, config())
    assert app.invoke(None, config()) == {"log": ["sent"]}
    assert len(attempts) == 2


# ---- an effect whose outcome was never recorded ----------------------------------------------


class ProcessDied(BaseException):
    """What the runtime sees of a process killed mid-node: nothing after this point happens."""


class DiesBeforeRecording(InMemorySaver):
    """Kills the 'process' after a once() effect ran, before its result is recorded."""

    dying = True

    def put_writes(self, config: Any, writes: Any, task_id: str) -> None:
        if self.dying and any(c == "__once__" and v[1] == "done" for c, v in writes):
            raise ProcessDied()
        super().put_writes(config, writes, task_id)


def charging_graph(saver: Any, charges: list[str], *, retry_unknown: bool = False) -> Any:
    def charge(state: State) -> dict[str, Any]:
        def pay() -> str:
            charges.append(state["customer"])
            return f"ch_{len(charges)}"

        return {"log": [once("charge", pay, retry_unknown=retry_unknown)]}

    g = StateGraph(State).add_node("charge", charge).add_edge(START, "charge")
    return g.compile(checkpointer=saver)


def test_an_effect_started_but_not_recorded_is_not_run_again_blindly() -> None:
    saver = DiesBeforeRecording()
    charges: list[str] = []
    with pytest.raises(ProcessDied):
        charging_graph(saver, charges).invoke({"customer": "Ada"}, config())
    saver.dying = False

    # A fresh process, same database.
    with pytest.raises(SideEffectUnknownError) as info:
        charging_graph(saver, charges).invoke(None, config())
    assert str(info.value) == (
        "Side effect 'charge' on thread 't' was started on an earlier attempt and its outcome "
        "was never recorded (that attempt crashed, or the database stayed down for the "
        "record); check whether it happened, then rerun with once(..., retry_unknown=True) if "
        "it did not."
    )
    assert info.value.waited is None
    assert (info.value.thread_id, info.value.key) == ("t", "charge")
    assert charges == ["Ada"]


def test_retry_unknown_runs_it_again_on_purpose() -> None:
    saver = DiesBeforeRecording()
    charges: list[str] = []
    with pytest.raises(ProcessDied):
        charging_graph(saver, charges).invoke({"customer": "Ada"}, config())
    saver.dying = False

    app = charging_graph(saver, charges, retry_unknown=True)
    assert app.invoke(None, config()) == {"customer": "Ada", "log": ["ch_2"]}
    assert charges == ["Ada", "Ada"]
    # Recorded now: a later run on the thread gets the stored result.
    assert app.invoke({"log": []}, config())["log"] == ["ch_2", "ch_2"]
    assert charges == ["Ada", "Ada"]


# ---- aonce ----------------------------------------------------------------------------------


async def test_aonce_in_an_async_node() -> None:
    drafted: list[str] = []

    async def draft(customer: str) -> str:
        drafted.append(customer)
        return f"hello {customer}"

    async def ask(state: State) -> dict[str, Any]:
        text = await aonce("draft", draft, state["customer"])
        return {"log": [f"{interrupt(text)}: {text}"]}

    g = StateGraph(State).add_node("ask", ask).add_edge(START, "ask")
    app = g.compile(checkpointer=InMemorySaver())
    with pytest.raises(GraphInterrupt) as info:
        await app.ainvoke({"customer": "Bo"}, config())
    assert info.value.interrupts[0].value == "hello Bo"
    assert await app.ainvoke(Command(resume="ok"), config()) == {
        "customer": "Bo",
        "log": ["ok: hello Bo"],
    }
    assert drafted == ["Bo"]


def test_once_outside_a_node() -> None:
    with pytest.raises(RuntimeError) as info:
        once("x", lambda: 1)
    assert str(info.value) == "once() can only be called inside a graph node while it runs"
