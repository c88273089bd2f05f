"""What a compiled graph says of itself, as LangGraph's does: `get_graph()` (its drawing, from
`_draw.py`) and the JSON schemas and pydantic models of its input, output and context (from
`_jsonschema.py`). `Described` is mixed into `CompiledGraph` (`compiled.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._draw import draw
from ._jsonschema import context_jsonschema, input_model, output_model, state_jsonschema
from ._shape import GraphShape
from ._types import RunConfig

if TYPE_CHECKING:
    from langchain_core.runnables.graph import Graph


__all__ = ["Described"]


class Described(GraphShape):
    """Mixed into `CompiledGraph`: what it says of itself, as LangGraph's does: its drawing
    (`get_graph`) and the JSON schemas and pydantic models of its input, output and context."""

    if TYPE_CHECKING:  # what the compiled graph gives it

        def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str: ...

    def get_graph(self, config: RunConfig | None = None, *, xray: bool | int = False) -> Graph:
        """The graph's shape as a langchain_core `Graph`, with the nodes and edges LangGraph
        draws for it: `get_graph().draw_mermaid()` gives LangGraph's mermaid text (START and
        END, conditional edges dashed and labelled); the object's other drawings
        (`draw_ascii()`, `draw_mermaid_png()`) need their own extra packages, as in LangGraph.

        `xray=True` draws each subgraph (a compiled graph added as a node, or one a node's
        function calls) inside its node, and theirs inside theirs; `xray=n` goes n levels deep.
        `config` is accepted for LangGraph's signature and changes nothing."""
        return draw(self, xray)

    def get_input_jsonschema(self, config: RunConfig | None = None) -> dict[str, Any]:
        """The JSON schema of what `invoke` takes (the `input_schema`, else the state's), as
        LangGraph gives it. `config` is accepted for LangGraph's signature."""
        builder = self.builder
        return state_jsonschema(builder, builder.input_schema, self.get_name("Input"))

    def get_output_jsonschema(self, config: RunConfig | None = None) -> dict[str, Any]:
        """The JSON schema of what `invoke` returns (the `output_schema`, else the state's)."""
        builder = self.builder
        return state_jsonschema(builder, builder.output_schema, self.get_name("Output"))

    def get_context_jsonschema(self) -> dict[str, Any] | None:
        """The JSON schema of the `context_schema` (None without one)."""
        return context_jsonschema(self.context_schema)

    @property
    def input_schema(self) -> type:
        """A pydantic model of the input, as LangGraph's: a pydantic `input_schema` itself,
        else a root model (`LangGraphInput`) of it."""
        return input_model(self.builder, self.get_name("Input"))

    @property
    def output_schema(self) -> type:
        """A pydantic model of the output, as LangGraph's: `LangGraphOutput`, each output key
        typed and defaulting to None."""
        return output_model(self.builder, self.get_name("Output"))

    async def aget_graph(
        self, config: RunConfig | None = None, *, xray: bool | int = False
    ) -> Graph:
        """`get_graph`, for async code (drawing does no I/O)."""
        return self.get_graph(config, xray=xray)
