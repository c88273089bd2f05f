"""`graphs.constants`: LangGraph's `langgraph.constants`, the names ported code imports from it.

`START` and `END` are the graph's virtual first and last nodes (`graphs.START`, `graphs.END`);
`TAG_NOSTREAM` is the tag that keeps a chat model's tokens out of the `messages` stream, and
`TAG_HIDDEN` LangSmith's tag that hides a run from tracing, as LangGraph names them.
"""

from ._stream import NOSTREAM_TAG as TAG_NOSTREAM
from ._types import END, START

__all__ = ["END", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]

TAG_HIDDEN = "langsmith:hidden"
"""LangSmith's tag that hides a run (a node, a model call) from tracing views."""
