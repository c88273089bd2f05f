"""The classes a graph's schemas name are stored and restored as themselves, with no
`register_type`: dataclasses, pydantic models, enums and named tuples, found through the
state, input, output and node schemas, recursively. Anything else still needs registering, and
a tag read back is never imported.

(The same through LangGraph's SQLite and PostgreSQL savers, in a second process, compared with
LangGraph's own: `test_langgraph_savers.py`.)
"""

import dataclasses
import enum
import operator
import sys
import types
from typing import Annotated, Any, Literal, NamedTuple, Optional, Union

import pytest
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

import graphs
from graphs import CheckpointFormatError, GraphSetupError, SerializationError
from graphs.checkpoint import serde
from graphs.checkpoint.memory import InMemorySaver
from graphs.graph import END, START, StateGraph


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    S = 1
    L = 3


class Point(NamedTuple):
    x: int
    y: int


@dataclasses.dataclass
class Item:
    name: str
    color: Color
    where: Point | None = None
    seen: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass(frozen=True)
class Tag:
    label: str


class Note(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str
    tags: dict[str, Tag] = {}


class Basket(BaseModel):
    items: list[Item]


class Nested(TypedDict):
    note: Note


class State(TypedDict):
    items: Annotated[list[Item], operator.add]
    by_name: dict[str, Union[Note, Basket, int]]  # noqa: UP007 (typing.Union, walked as such)
    nested: Optional[Nested]  # noqa: UP045 (typing.Optional)
    size: Literal[Size.S, Size.L] | None


def make(state: State) -> dict[str, Any]:
    item = Item("lamp", Color.RED, Point(1, 2))
    item.seen = 5  # a field the constructor does not take
    note = Note(text="hi", tags={"a": Tag("x")}, mood="calm")  # an extra field
    return {
        "items": [item],
        "by_name": {"note": note, "basket": Basket(items=[item]), "count": 3},
        "nested": {"note": Note(text="inner")},
        "size": Size.L,
    }


def compiled(saver: Any, builder_cls: Any = StateGraph) -> Any:
    g = builder_cls(State)
    g.add_node("make", make)
    g.add_edge(START, "make")
    g.add_edge("make", END)
    return g.compile(checkpointer=saver)


@pytest.mark.parametrize("builder_cls", [StateGraph, graphs.StateGraph], ids=["langgraph", "seed"])
def test_the_state_schemas_classes_come_back_as_themselves(builder_cls: Any) -> None:
    saver = InMemorySaver()
    app = compiled(saver, builder_cls)
    config = {"configurable": {"thread_id": "t"}}
    out = app.invoke({"items": []}, config)
    values = app.get_state(config).values
    assert values == {k: v for k, v in out.items() if k != "__interrupt__"}
    item = values["items"][0]
    assert type(item) is Item and type(item.color) is Color and type(item.where) is Point
    assert item.seen == 5
    note = values["by_name"]["note"]
    assert type(note) is Note and note.model_extra == {"mood": "calm"}
    assert type(note.tags["a"]) is Tag
    assert note.model_fields_set == {"text", "tags", "mood"}
    basket = values["by_name"]["basket"]
    assert type(basket) is Basket and type(basket.items[0]) is Item and basket.items[0].seen == 5
    assert values["nested"]["note"].model_fields_set == {"text"}  # the defaults were not given
    assert values["size"] is Size.L
    assert values["by_name"]["count"] == 3


def test_a_graph_compiles_while_another_thread_is_importing_pydantic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bot loads langchain_core (and so pydantic) on a thread as it starts, while the first
    # requests compile their graphs: compile reads a class's own bases, not the half-imported
    # module, whose `BaseModel` may not be there yet.
    half_imported = types.ModuleType("pydantic")
    monkeypatch.setitem(sys.modules, "pydantic", half_imported)
    app = compiled(InMemorySaver())
    monkeypatch.undo()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"items": []}, config)
    assert type(app.get_state(config).values["by_name"]["note"]) is Note


def test_the_stored_form_names_the_class_by_module() -> None:
    compiled(InMemorySaver())
    text = serde.dumps(Item("lamp", Color.BLUE))
    assert text == (
        '{"$t":["test_schema_types.Item",{"name":"lamp","color":'
        '{"$t":["test_schema_types.Color","blue"]},"where":null,"seen":0}]}'
    )


class Unnamed:
    pass


@dataclasses.dataclass
class NotInAnySchema:
    n: int


def test_a_class_no_schema_names_still_fails_and_says_to_register_it() -> None:
    saver = InMemorySaver()

    class Loose(TypedDict):
        thing: object

    g = StateGraph(Loose)
    g.add_node("make", lambda s: {"thing": NotInAnySchema(1)})
    g.add_edge(START, "make")
    app = g.compile(checkpointer=saver)
    with pytest.raises(SerializationError) as info:
        app.invoke({"thing": 1}, {"configurable": {"thread_id": "t"}})
    message = str(info.value)
    assert "test_schema_types.NotInAnySchema" in message
    assert "register NotInAnySchema with graphs.checkpoint.serde.register_type" in message
    with pytest.raises(SerializationError):
        serde.dumps(Unnamed())


def test_a_tag_read_back_is_never_imported() -> None:
    stored = '{"$t":["email.mime.text.MIMEText",{"_text":"x"}]}'
    sys.modules.pop("email.mime.text", None)
    with pytest.raises(CheckpointFormatError) as info:
        serde.loads(stored)
    assert "unknown type tag 'email.mime.text.MIMEText'" in str(info.value)
    assert "email.mime.text" not in sys.modules


class Private(TypedDict):
    draft: Tag


class Input(TypedDict):
    items: Annotated[list[Item], operator.add]
    ask: Point


class Output(TypedDict):
    items: Annotated[list[Item], operator.add]
    verdict: Size


class NodeIn(TypedDict):
    memo: Note


class Keyed(NamedTuple):
    key: str


class Memo(TypedDict):
    memo: Note
    keyed: Keyed


class WithPrivate(TypedDict):
    items: Annotated[list[Item], operator.add]


def test_input_output_and_node_schemas_name_classes_too() -> None:
    assert Keyed not in serde._BY_TYPE  # only the node's schema names it

    def first(state: WithPrivate) -> dict[str, Any]:
        return {"memo": Note(text="m"), "keyed": Keyed("k"), "draft": Tag("d"), "verdict": Size.S}

    def second(state: Memo) -> dict[str, Any]:
        return {"items": [Item(state["memo"].text, Color.RED)]}

    g = StateGraph(WithPrivate, input_schema=Input, output_schema=Output)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_node("third", lambda s: {}, input_schema=Private)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", "third")
    saver = InMemorySaver()
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"items": [], "ask": Point(0, 0)}, config)
    values = app.get_state(config).values
    assert values["keyed"] == Keyed("k") and type(values["keyed"]) is Keyed
    assert values["draft"] == Tag("d") and values["ask"] == Point(0, 0)
    assert values["verdict"] is Size.S


def test_register_type_keeps_working_and_wins() -> None:
    @dataclasses.dataclass
    class Money:
        cents: int

    serde.register_type(Money, "test.money_cents", lambda m: m.cents, Money, replace=True)

    class Priced(TypedDict):
        price: Money

    g = StateGraph(Priced)
    g.add_node("n", lambda s: {})
    g.add_edge(START, "n")
    g.compile()
    assert serde.dumps(Money(5)) == '{"$t":["test.money_cents",5]}'


def test_register_type_after_a_schema_named_the_class_reads_both_tags() -> None:
    @dataclasses.dataclass
    class Coupon:
        code: str

    class Sale(TypedDict):
        coupon: Coupon

    g = StateGraph(Sale)
    g.add_node("n", lambda s: {})
    g.add_edge(START, "n")
    g.compile()
    old = serde.dumps(Coupon("A"))
    assert '"test_schema_types.test_register_type_after_a_schema_named_the_class_' in old
    serde.register_type(Coupon, "test.coupon", lambda c: c.code, Coupon)
    assert serde.dumps(Coupon("A")) == '{"$t":["test.coupon","A"]}'
    assert serde.loads(old) == Coupon("A")


def _declare() -> tuple[type, Any]:
    @dataclasses.dataclass
    class Again:
        n: int

    class S(TypedDict):
        again: Again

    g = StateGraph(S)
    g.add_node("n", lambda s: {})
    g.add_edge(START, "n")
    g.compile()
    return Again, Again(1)


def test_a_class_declared_again_under_its_name_reads_as_the_newest() -> None:
    first_cls, first = _declare()
    stored = serde.dumps(first)
    second_cls, _ = _declare()
    assert first_cls is not second_cls
    assert type(serde.loads(stored)) is second_cls


def test_a_tag_register_type_gave_another_class_stops_compile() -> None:
    @dataclasses.dataclass
    class Clash:
        n: int

    class Other:
        pass

    tag = serde.schema_tag(Clash)
    serde.register_type(Other, tag, lambda o: 0, lambda d: Other(), replace=True)

    class S(TypedDict):
        clash: Clash

    g = StateGraph(S)
    g.add_node("n", lambda s: {})
    g.add_edge(START, "n")
    with pytest.raises(GraphSetupError) as info:
        g.compile()
    assert f"register_type gave to {Other.__module__}.{Other.__qualname__}" in str(info.value)


def test_the_sql_saver_restores_them_too(saver: Any) -> None:
    app = compiled(saver)
    config = {"configurable": {"thread_id": "t"}}
    app.invoke({"items": [Item("first", Color.BLUE)]}, config)
    values = app.get_state(config).values
    assert [type(i) for i in values["items"]] == [Item, Item]
    assert values["items"][0] == Item("first", Color.BLUE)
    assert values["items"][1].seen == 5 and values["items"][1].where == Point(1, 2)
    assert values["by_name"]["note"].model_extra == {"mood": "calm"}
    assert values["nested"]["note"] == Note(text="inner")
    assert values["size"] is Size.L


def test_an_agents_response_format_is_stored_as_itself(tmp_path: Any) -> None:
    from langchain_core.messages import HumanMessage

    from graphs.checkpoint.sqlite import SqliteSaver
    from graphs.prebuilt import create_react_agent
    from tests.graphs.test_prebuilt_agent import Weather, _weather_model, search

    with SqliteSaver.from_conn_string(str(tmp_path / "agent.sqlite")) as saver:
        agent = create_react_agent(
            _weather_model(), [search], response_format=Weather, checkpointer=saver
        )
        config = {"configurable": {"thread_id": "t"}}
        agent.invoke({"messages": [HumanMessage("weather in Oslo?")]}, config)
        stored = agent.get_state(config).values["structured_response"]
    assert stored == Weather(city="Oslo", degrees=3) and type(stored) is Weather
