"""A sync or async embedding function as a langchain_core `Embeddings` (internal; imported by
`graphs.store.ensure_embeddings` when it is first given a function, so that importing the store
does not load langchain_core)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

__all__ = ["FunctionEmbeddings"]


def _is_async(func: Any) -> bool:
    """An `async def`, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 (a callable object's own __call__)
    )


class FunctionEmbeddings(Embeddings):
    """`Embeddings` over `func(texts) -> vectors`, as LangGraph's `EmbeddingsLambda`: a sync
    function serves both forms (the async ones run it in a thread); an async one serves only the
    async forms (`embed_documents`/`embed_query` then raise ValueError)."""

    def __init__(
        self,
        func: Callable[[Sequence[str]], list[list[float]]]
        | Callable[[Sequence[str]], Awaitable[list[list[float]]]],
    ) -> None:
        self._async = _is_async(func)
        self._func = func

    def __repr__(self) -> str:
        return f"FunctionEmbeddings({self._func!r})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._async:
            raise ValueError(
                f"the store's embed function {self._func!r} is async: use the async methods "
                "(aput, asearch, abatch), or give the index a sync function or an Embeddings"
            )
        return self._func(texts)  # type: ignore[return-value]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        if not self._async:
            return await super().aembed_documents(texts)
        return await self._func(texts)  # type: ignore[no-any-return,misc]

    async def aembed_query(self, text: str) -> list[float]:
        return (await self.aembed_documents([text]))[0]
