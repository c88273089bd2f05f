"""The JSON schemas of a compiled graph's input, output and context, and its `input_schema` /
`output_schema` models, compared with what LangGraph (installed for the tests) gives for the
same graph; and a `typing.TypedDict` state, which LangGraph cannot describe before Python 3.12,
described as its `typing_extensions` twin is."""

import dataclasses
import json
import operator
import typing
from typing import Annotated, Any

import langgraph.graph
import pydantic
import pytest
import typing_extensions as te

import graphs


class TEState(te.TypedDict):
    """What the agent knows."""

    log: Annotated[list[str], operator.add]
    topic: str
    score: te.NotRequired[int]


class Model(pydantic.BaseModel):
    log: list[str] = []
    topic: str | None = None


@dataclasses.dataclass
class DC:
    log: Annotated[list[str], operator.add] = dataclasses.field(default_factory=list)
    topic: str = "none"
    score: int | None = None


class Ctx(te.TypedDict):
    user: str


@dataclasses.dataclass
class DCtx:
    user: str = "anyone"


def build(lib: Any, state: Any, **kwargs: Any) -> Any:
    g = lib.StateGraph(state, **kwargs)
    g.add_node("a", lambda s: {})
    g.add_edge(lib.START, "a")
    return g.compile()


def described(app: Any) -> dict[str, Any]:
    return {
        "input": app.get_input_jsonschema(),
        "output": app.get_output_jsonschema(),
        "context": app.get_context_jsonschema(),
        "input_schema": (app.input_schema.__name__, app.input_schema.model_json_schema()),
        "output_schema": (app.output_schema.__name__, app.output_schema.model_json_schema()),
    }


CASES = {
    "TypedDict": (TEState, {"context_schema": Ctx}),
    "pydantic": (Model, {"context_schema": DCtx}),
    "dataclass": (DC, {}),
    "input and output schemas": (TEState, {"input_schema": Model, "output_schema": DC}),
    "root channel": (Annotated[list, operator.add], {}),
}


@pytest.mark.parametrize(("state", "kwargs"), list(CASES.values()), ids=list(CASES))
def test_the_schemas_are_langgraphs(state: Any, kwargs: dict[str, Any]) -> None:
    ours = described(build(graphs, state, **kwargs))
    assert ours == described(build(langgraph.graph, state, **kwargs))


def test_a_pydantic_input_schema_is_its_own_model_and_titles_follow_the_name() -> None:
    app = build(graphs, TEState, input_schema=Model)
    assert app.input_schema is Model
    renamed = app.copy(update={"name": "agent"})
    assert renamed.get_output_jsonschema()["title"] == "TEState"  # a TypedDict keeps its own
    assert renamed.output_schema.__name__ == "agent_output"
    assert build(graphs, DC).copy(update={"name": "Agent"}).get_input_jsonschema()["title"] == (
        "AgentInput"
    )


class Inner(typing.TypedDict):
    name: str


class Loose(typing.TypedDict, total=False):
    """Keys a run may fill in."""

    items: Annotated[list[Inner], operator.add]
    note: str | None
    first: Inner


class InnerTE(te.TypedDict):
    name: str


class LooseTE(te.TypedDict, total=False):
    """Keys a run may fill in."""

    items: Annotated[list[InnerTE], operator.add]
    note: str | None
    first: InnerTE


def renamed_defs(schema: dict[str, Any] | None) -> Any:
    """The twin's schema with its class names as the original's."""
    return json.loads(json.dumps(schema).replace("InnerTE", "Inner").replace("LooseTE", "Loose"))


def test_a_typing_typeddict_state_is_described_as_its_typing_extensions_twin() -> None:
    ours = build(graphs, Loose, context_schema=Inner)
    twin = build(langgraph.graph, LooseTE, context_schema=InnerTE)
    assert ours.get_input_jsonschema() == renamed_defs(twin.get_input_jsonschema())
    assert ours.get_output_jsonschema() == renamed_defs(twin.get_output_jsonschema())
    assert ours.get_context_jsonschema() == renamed_defs(twin.get_context_jsonschema())
    assert ours.get_input_jsonschema()["description"] == "Keys a run may fill in."
    assert "required" not in ours.get_input_jsonschema()  # total=False
    assert ours.input_schema.model_json_schema()["$ref"] == "#/$defs/Loose"


def test_no_context_schema_gives_none_and_an_unusable_one_says_what_to_use() -> None:
    assert build(graphs, TEState).get_context_jsonschema() is None
    with pytest.raises(ValueError, match="make it a pydantic model, a TypedDict or a dataclass"):
        build(graphs, TEState, context_schema=int).get_context_jsonschema()
