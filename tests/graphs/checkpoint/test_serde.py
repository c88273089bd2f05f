"""The checkpoint format: tagged JSON with an allow-list and a format version.

`golden/checkpoint_v1.json` is a paused thread's checkpoint as format version 1 stored it. It
must load and resume with today's code for as long as version 1 is supported. When the format
changes, bump `FORMAT_VERSION`, add `checkpoint_v<N>.json` beside it (write it with
`python tests/graphs/checkpoint/test_serde.py`), and keep the old files.
"""

import datetime as dt
import decimal
import json
import math
import operator
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphs import (
    START,
    CheckpointFormatError,
    Command,
    GraphInterrupt,
    InMemorySaver,
    Interrupt,
    Send,
    SerializationError,
    StateGraph,
    interrupt,
    once,
)
from graphs.checkpoint import serde

GOLDEN = Path(__file__).parent / "golden"

EVERY_TYPE: dict[str, Any] = {
    "none": None,
    "bool": True,
    "int": -(2**70),
    "float": 0.1,
    "inf": float("inf"),
    "minus_inf": float("-inf"),
    "str": 'héllo \u2603 "quoted" \\ back',
    "list": [1, [2, [3]]],
    "tuple": (1, "a", (2,)),
    "set": {3, 1, 2},
    "frozenset": frozenset({"x", "y"}),
    "bytes": b"\x00\xffbinary",
    "datetime": dt.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    "naive_datetime": dt.datetime(2026, 3, 4, 5, 6, 7),
    "date": dt.date(2026, 3, 4),
    "time": dt.time(23, 59, 58, 1),
    "timedelta": dt.timedelta(days=-2, seconds=3, microseconds=4),
    "decimal": decimal.Decimal("42.50"),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "int_keys": {1: "one", (2, 3): "tuple key", None: "none key"},
    "tag_lookalike": {"$t": ["set", [1, 2]]},
    "nested_lookalike": [{"$t": None, "other": 1}],
    "interrupt": Interrupt({"q": "ok?"}, "0123", "ask", 1, True),
}


# ---- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EVERY_TYPE))
def test_every_allowed_type_round_trips_with_its_type(name: str) -> None:
    value = EVERY_TYPE[name]
    back = serde.loads(serde.dumps(value))
    assert back == value
    assert type(back) is type(value)


def test_a_command_keeps_whether_it_resumes() -> None:
    # A Command in state (a Send's arg, a node's list of them) reads back as the same order:
    # an answer of None still answers; a goto alone answers nothing.
    answer = serde.loads(serde.dumps(Command(resume=None, graph=Command.PARENT)))
    assert answer.has_resume and answer.resume is None and answer.graph == Command.PARENT
    goto = Command(update={"k": [1]}, goto=("a", Send("b", {"n": 2})))
    back = serde.loads(serde.dumps(goto))
    assert back == goto and type(back.goto) is tuple and not back.has_resume


def test_nan_round_trips() -> None:
    assert math.isnan(serde.loads(serde.dumps(float("nan"))))


def test_the_stored_text_is_json_and_names_its_types() -> None:
    assert json.loads(serde.dumps({"when": dt.date(2026, 1, 2), "tags": ("a",)})) == {
        "when": {"$t": ["date", "2026-01-02"]},
        "tags": {"$t": ["tuple", ["a"]]},
    }
    assert serde.dumps({"plain": [1, "two", None, True, 1.5]}) == (
        '{"plain":[1,"two",null,true,1.5]}'
    )


def test_a_dict_with_the_tag_key_is_escaped_not_decoded() -> None:
    lookalike = {"$t": ["set", [1, 2]]}
    assert json.loads(serde.dumps(lookalike)) == {"$t": ["dict", {"$t": ["set", [1, 2]]}]}
    assert serde.loads(serde.dumps(lookalike)) == lookalike
    # A two-key object is never a tag, whatever one key is called.
    assert serde.loads('{"$t": ["set", [1]], "x": 1}') == {"$t": ["set", [1]], "x": 1}


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(max_size=20)
    | st.decimals(allow_nan=False)
    | st.datetimes()
    | st.dates()
    | st.times()
    | st.timedeltas()
    | st.uuids(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
        | st.dictionaries(st.integers() | st.sampled_from(["$t", "$t2"]), children, max_size=3)
        | st.frozensets(st.integers() | st.text(max_size=3), max_size=4)
        | st.sets(st.tuples(st.integers(), st.text(max_size=2)), max_size=3)
    ),
    max_leaves=12,
)


@given(json_like)
def test_round_trip_property(value: Any) -> None:
    assert serde.loads(serde.dumps(value)) == value
    assert serde.loads_record(serde.dumps_record(value)) == value


plain_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@given(plain_json)
def test_compact_json_writes_what_the_json_encoder_it_stands_for_writes(value: Any) -> None:
    # `compact_json` builds json's C encoder once instead of at every call: byte for byte the
    # text json.JSONEncoder with its options writes, keys in order or sorted.
    options = {"separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}
    assert serde.compact_json(value) == json.JSONEncoder(**options).encode(value)
    assert serde.compact_json(value, sort_keys=True) == json.JSONEncoder(
        **options, sort_keys=True
    ).encode(value)


@pytest.mark.parametrize(
    "value, error, message",
    [
        ([1.0, math.inf], ValueError, "Out of range float values are not JSON compliant"),
        ({"a": {1, 2}}, TypeError, "Object of type set is not JSON serializable"),
        ({"a": object()}, TypeError, "Object of type object is not JSON serializable"),
    ],
)
def test_compact_json_refuses_what_is_not_plain_json(value: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        serde.compact_json(value)


# ---- refusals ---------------------------------------------------------------------------------


class Custom:
    pass


def allowed(name: str) -> str:
    return (
        "state must be JSON-like (dict, list, str, int, float, bool, None), a type on the "
        "allow-list (tuple, set, bytes, datetime, date, time, timedelta, Decimal, UUID, "
        "langchain_core messages), or a dataclass, pydantic model, enum or named tuple that a "
        "compiled graph's state, input, output or node schema names; register "
        f"{name} with graphs.checkpoint.serde.register_type, or name it in the schema"
    )


@pytest.mark.parametrize(
    "value, type_name",
    [
        (Custom(), "test_serde.Custom"),
        ({"deep": [1, {"er": Custom()}]}, "test_serde.Custom"),
        (lambda: 1, "builtins.function"),
    ],
)
def test_an_unknown_type_is_refused(value: Any, type_name: str) -> None:
    with pytest.raises(SerializationError) as info:
        serde.dumps(value)
    name = type_name.rsplit(".", 1)[1]
    assert str(info.value) == (
        f"cannot store a value of type {type_name} in a checkpoint: {allowed(name)}"
    )


def test_an_unknown_type_in_state_fails_the_step_that_produced_it() -> None:
    class State(TypedDict):
        thing: object

    g = StateGraph(State).add_node("make", lambda s: {"thing": Custom()}).add_edge(START, "make")
    app = g.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(SerializationError) as info:
        app.invoke({"thing": 1}, config)
    assert "test_serde.Custom" in str(info.value)
    assert app.get_state(config).values == {"thing": 1}


def test_a_registered_type_round_trips() -> None:
    class Money:
        def __init__(self, cents: int, currency: str) -> None:
            self.cents, self.currency = cents, currency

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Money) and vars(self) == vars(other)

    serde.register_type(
        Money, "test.money", lambda m: [m.cents, m.currency], lambda d: Money(*d), replace=True
    )
    assert serde.loads(serde.dumps({"price": Money(4250, "EUR")})) == {"price": Money(4250, "EUR")}
    with pytest.raises(ValueError) as info:
        serde.register_type(Money, "test.money", str, str)
    assert str(info.value) == (
        "type tag 'test.money' or class "
        "test_a_registered_type_round_trips.<locals>.Money is already registered"
    )


def test_an_unknown_tag_is_refused_on_load() -> None:
    with pytest.raises(CheckpointFormatError) as info:
        serde.loads('{"$t": ["os.system", "rm -rf /"]}')
    assert str(info.value) == (
        "unknown type tag 'os.system': the value was stored by code that registered a type, "
        "or compiled a graph whose schema names a class, that this process has not; compile "
        "that graph (import its module) before reading, or register the type "
        "(graphs.checkpoint.serde.register_type). Nothing named in stored data is imported"
    )


def test_text_that_is_not_tagged_json_is_refused() -> None:
    with pytest.raises(CheckpointFormatError) as info:
        serde.loads("{not json")
    assert str(info.value).startswith("stored value is not valid tagged JSON: ")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '{"v": 2, "d": {}}',
            (
                "stored record has format version 2; this code reads version 1. Upgrade "
                "signoff to read it."
            ),
        ),
        ('{"d": {}}', "stored record has no format version ('v')"),
        ("[1, 2]", "stored record has no format version ('v')"),
    ],
)
def test_a_record_of_another_format_version_is_refused(text: str, message: str) -> None:
    with pytest.raises(CheckpointFormatError) as info:
        serde.loads_record(text)
    assert str(info.value) == message


def test_records_carry_the_format_version() -> None:
    assert serde.FORMAT_VERSION == 1
    assert json.loads(serde.dumps_record({"a": (1,)})) == {
        "v": 1,
        "d": {"a": {"$t": ["tuple", [1]]}},
    }


# ---- the golden checkpoint of format version 1 ------------------------------------------------


class State(TypedDict):
    log: Annotated[list, operator.add]
    everything: dict
    amount: decimal.Decimal


def golden_graph(run: dict[str, Any]) -> StateGraph:
    """The graph that wrote the golden checkpoint. `run` holds the functions its nodes call."""

    def prepare(state: State) -> dict[str, Any]:
        ticket = once("ticket", run["ticket"])
        return {"everything": EVERY_TYPE, "amount": decimal.Decimal("42.50"), "log": [ticket]}

    def ask(state: State) -> dict[str, Any]:
        quote = once("quote", run["quote"], state["amount"])
        answer = interrupt({"quote": quote, "asked": dt.date(2026, 3, 4)})
        return {"log": [f"ask:{answer['approved']}"]}

    def audit(state: State) -> dict[str, Any]:
        return {"log": [run["audit"]()]}

    def finish(state: State) -> dict[str, Any]:
        return {"log": ["finished"]}

    g = StateGraph(State)
    g.add_node("prepare", prepare).add_node("ask", ask).add_node("audit", audit)
    g.add_node("finish", finish)
    g.add_edge(START, "prepare").add_edge("prepare", "ask").add_edge("prepare", "audit")
    g.add_edge(["ask", "audit"], "finish")
    return g


def write_golden() -> Path:
    """Run the golden graph to its pause and store the head checkpoint (run by hand, once)."""
    saver = InMemorySaver()
    run = {
        "ticket": lambda: "T-1",
        "quote": lambda amount: f"{amount} EUR",
        "audit": lambda: "audited",
    }
    app = golden_graph(run).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "golden"}}
    with pytest.raises(GraphInterrupt):
        app.invoke({"log": [], "everything": {}}, config)
    head = saver.get_tuple(config)
    assert head is not None
    stored = {
        "config": head.config,
        "checkpoint": head.checkpoint,
        "metadata": head.metadata,
        "parent_config": head.parent_config,
        "pending_writes": [list(w) for w in head.pending_writes],
    }
    path = GOLDEN / f"checkpoint_v{serde.FORMAT_VERSION}.json"
    text = json.dumps(json.loads(serde.dumps_record(stored)), indent=1, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def load_golden(version: int) -> dict[str, Any]:
    return serde.loads_record((GOLDEN / f"checkpoint_v{version}.json").read_text("utf-8"))


def test_golden_v1_loads() -> None:
    stored = load_golden(1)
    checkpoint = stored["checkpoint"]
    assert checkpoint["v"] == 1
    assert checkpoint["channel_values"]["everything"] == EVERY_TYPE
    assert checkpoint["channel_values"]["amount"] == decimal.Decimal("42.50")
    assert checkpoint["channel_values"]["log"] == ["T-1"]
    assert [name for name, _task in checkpoint["next_tasks"]] == ["ask", "audit"]
    assert stored["metadata"] == {"source": "loop", "step": 1}
    interrupts = [v for _t, c, v in stored["pending_writes"] if c == "__interrupt__"]
    assert [(i.node, i.value) for i in interrupts] == [
        ("ask", {"quote": "42.50 EUR", "asked": dt.date(2026, 3, 4)})
    ]


def test_golden_v1_resumes_with_todays_code() -> None:
    stored = load_golden(1)
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "golden", "checkpoint_ns": ""}}
    checkpoint = stored["checkpoint"]
    head = saver.put(config, checkpoint, stored["metadata"], dict(checkpoint["channel_versions"]))
    for task_id, channel, value in stored["pending_writes"]:
        saver.put_writes(head, [(channel, value)], task_id)

    def must_not_run(*args: Any) -> Any:
        raise AssertionError("work recorded in the golden checkpoint ran again")

    run = {"ticket": must_not_run, "quote": must_not_run, "audit": must_not_run}
    app = golden_graph(run).compile(checkpointer=saver)
    [pending] = app.get_state(config).interrupts
    assert pending.value == {"quote": "42.50 EUR", "asked": dt.date(2026, 3, 4)}

    final = app.invoke(Command(resume={"approved": True}), config)

    assert final["log"] == ["T-1", "ask:True", "audited", "finished"]
    assert final["everything"] == EVERY_TYPE


if __name__ == "__main__":
    sys.exit(print(f"wrote {write_golden()}"))
