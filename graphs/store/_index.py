"""Semantic search for the stores (LangGraph's `index=`): `IndexConfig`, the field paths
(`tokenize_path`, `get_text_at_path`), `ensure_embeddings`, and what `InMemoryStore` and
`SQLStore` share: the texts of an item to embed, their vectors, and the ranking of a query.

langchain_core is imported only when an index is made (`ensure_embeddings`), so importing the
store does not load it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

__all__ = [
    "AEmbeddingsFunc",
    "EmbeddingsFunc",
    "IndexConfig",
    "ensure_embeddings",
    "get_text_at_path",
    "tokenize_path",
]

EmbeddingsFunc = Callable[[Sequence[str]], list[list[float]]]
"""A sync embedding function: one vector per text, all of the same length."""

AEmbeddingsFunc = Callable[[Sequence[str]], Awaitable[list[list[float]]]]
"""An async embedding function (used by the async methods only)."""


class IndexConfig(TypedDict, total=False):
    """A store's semantic index (LangGraph's `IndexConfig`), given as `index=` when it is made."""

    dims: int
    """The length of every vector; a vector of another length is refused (ValueError). Not
    given: not checked."""
    embed: Embeddings | EmbeddingsFunc | AEmbeddingsFunc | str
    """A langchain_core `Embeddings`, a sync or async function `texts -> vectors`, or a
    `"provider:model"` string (needs the `langchain` package and the provider's; refused with
    ValueError otherwise)."""
    fields: list[str] | None
    """The paths embedded of each value (default `["$"]`: the whole value as JSON): `"a.b"`,
    `"a[0]"`, `"a[-1]"`, `"a[*].b"` (one vector per element), `"*"`, `"{a,b.c}"`; a path that
    finds nothing is skipped. `put(..., index=[...])` gives other paths for one item."""


_KNOWN = {"dims", "embed", "fields", "distance_type"}


# ---- field paths --------------------------------------------------------------------------


def tokenize_path(path: str) -> list[str]:
    """`path` as its tokens, as LangGraph's: names split at ".", each `[...]` and `{...}` (with
    what nests in it) a token of its own. `"a[*].b"` -> `["a", "[*]", "b"]`."""
    tokens: list[str] = []
    name: list[str] = []
    i = 0
    while i < len(path):
        char = path[i]
        if char in "[{":
            if name:
                tokens.append("".join(name))
                name = []
            close = "]" if char == "[" else "}"
            depth, j = 0, i
            while j < len(path):
                depth += path[j] == char
                depth -= path[j] == close
                j += 1
                if depth == 0:
                    break
            tokens.append(path[i:j])
            i = j
            continue
        if char == ".":
            if name:
                tokens.append("".join(name))
                name = []
        else:
            name.append(char)
        i += 1
    if name:
        tokens.append("".join(name))
    return tokens


def _dumps(obj: Any) -> str:
    # LangGraph's text of a dict or list; default=str for what JSON cannot hold (a datetime in
    # a value), where LangGraph's json.dumps would raise
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)


def _leaf(obj: Any) -> list[str]:
    if isinstance(obj, str | int | float | bool):
        return [str(obj)]
    if isinstance(obj, list | dict):
        return [_dumps(obj)]
    return []  # None, and what is not JSON


def get_text_at_path(obj: Any, path: str | list[str]) -> list[str]:
    """The texts found at `path` in `obj` (a path string or its tokens), as LangGraph's: `"$"`
    (or an empty path) is all of `obj` as JSON; a string, number or bool is its `str`, a dict
    or list its JSON, a None nothing; `[*]` and `*` give one text per element."""
    if not path or path == "$" or path == ["$"]:
        return [_dumps(obj)]
    tokens = tokenize_path(path) if isinstance(path, str) else path
    return _walk(obj, tokens, 0)


def _walk(obj: Any, tokens: list[str], pos: int) -> list[str]:
    if pos == len(tokens):
        return _leaf(obj)
    token = tokens[pos]
    out: list[str] = []
    if token.startswith("[") and token.endswith("]"):
        if not isinstance(obj, list):
            return []
        inside = token[1:-1]
        if inside == "*":
            for element in obj:
                out.extend(_walk(element, tokens, pos + 1))
            return out
        try:
            at = int(inside)
        except ValueError:
            return []
        at = at + len(obj) if at < 0 else at
        return _walk(obj[at], tokens, pos + 1) if 0 <= at < len(obj) else []
    if token.startswith("{") and token.endswith("}"):
        # LangGraph's multi-field selection: each field's value (dict keys only); what follows
        # the braces in the path is not read
        if not isinstance(obj, dict):
            return []
        for field in (f.strip() for f in token[1:-1].split(",")):
            parts = tokenize_path(field)
            if not parts:
                continue
            found: Any = obj
            for part in parts:
                if not isinstance(found, dict) or part not in found:
                    found = None
                    break
                found = found[part]
            if found is not None:
                out.extend(_leaf(found))
        return out
    if token == "*":
        children = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ()
        for child in children:
            out.extend(_walk(child, tokens, pos + 1))
        return out
    if isinstance(obj, dict) and token in obj:
        return _walk(obj[token], tokens, pos + 1)
    return []


# ---- embeddings ---------------------------------------------------------------------------


def ensure_embeddings(embed: Any) -> Embeddings:
    """`embed` as a langchain_core `Embeddings` (LangGraph's `ensure_embeddings`): an
    `Embeddings` as it is, a sync or async function wrapped (an async one serves only the async
    methods), a `"provider:model"` string through `langchain`'s `init_embeddings`.

    Raises:
        ValueError: `embed` is None, or a string that cannot be loaded here (no `langchain`
            package, or not the provider's); the message says what to give instead.
        TypeError: `embed` is none of those.
    """
    if embed is None:
        raise ValueError(
            "index: 'embed' must be given: an Embeddings, or a function texts -> vectors"
        )
    if isinstance(embed, str):
        return _from_provider(embed)
    # lazy: langchain_core is loaded only by a store with an index, not by `import graphs`
    from langchain_core.embeddings import Embeddings

    if isinstance(embed, Embeddings):
        return embed
    if not callable(embed):
        raise TypeError(
            "index: 'embed' is a langchain_core Embeddings, a function texts -> vectors (sync "
            f"or async) or a 'provider:model' string, got {embed!r}"
        )
    from ._embed import FunctionEmbeddings  # lazy: it subclasses langchain_core's Embeddings

    return FunctionEmbeddings(embed)


_INSTEAD = (
    "give 'embed' a langchain_core Embeddings object (such as the provider package's "
    "OpenAIEmbeddings(model=...)) or a function texts -> vectors (sync or async) instead"
)


def _from_provider(spec: str) -> Embeddings:
    try:  # lazy: langchain (not langchain_core) is optional, needed only for a 'provider:model'
        from langchain.embeddings import init_embeddings
    except ImportError:
        raise ValueError(
            f"index: cannot load embeddings from the string {spec!r}: a 'provider:model' string "
            "needs the 'langchain' package (its init_embeddings) and the provider's package, "
            f"and 'langchain' is not installed; {_INSTEAD}"
        ) from None
    try:
        return init_embeddings(spec)
    except (ImportError, ValueError) as e:
        raise ValueError(
            f"index: cannot load embeddings from the string {spec!r} ({e}); {_INSTEAD}"
        ) from e


# ---- what the stores share ----------------------------------------------------------------

Vector = list[float]
FieldVector = tuple[str, str, Vector]
"""One vector of an item: the field (path, with `.i` for the i-th of several texts), the
sha256 of the text embedded, the vector."""


class _Index:
    """A store's `IndexConfig`, read and checked once."""

    def __init__(self, index: IndexConfig | Mapping[str, Any]) -> None:
        config: Mapping[str, Any] = index
        if not isinstance(config, Mapping) or set(config) - _KNOWN:
            raise ValueError(
                f"index: an IndexConfig takes {sorted(_KNOWN - {'distance_type'})}, got {config!r}"
            )
        if config.get("distance_type", "cosine") != "cosine":
            raise ValueError(
                f"index: graphs' stores score by cosine similarity only, got distance_type="
                f"{config['distance_type']!r}"
            )
        dims = config.get("dims")
        if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
            raise ValueError(f"index: 'dims' is a positive int, got {dims!r}")
        fields = config.get("fields") or ["$"]
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise ValueError(f"index: 'fields' is a list of paths such as ['text'], got {fields!r}")
        self.config: IndexConfig = {**config, "fields": list(fields)}  # type: ignore[typeddict-item]
        self.dims: int | None = dims
        self.embeddings: Embeddings = ensure_embeddings(config.get("embed"))
        self._fields = [(f, _tokens(f)) for f in fields]

    def texts(self, value: Mapping[str, Any], index: Any, where: str) -> list[tuple[str, str]]:
        """(field, text) of each text `put(..., index=index)` embeds of `value`."""
        if index is False:
            return []
        if index is None:
            fields = self._fields
        elif isinstance(index, list | tuple) and all(isinstance(f, str) for f in index):
            fields = [(f, _tokens(f)) for f in index]
        else:
            raise ValueError(
                f"{where}: index is False, None (the store's fields) or a list of paths, "
                f"got {index!r}"
            )
        out: list[tuple[str, str]] = []
        for field, tokens in fields:
            found = get_text_at_path(value, tokens)
            out.extend(
                (f"{field}.{i}" if len(found) > 1 else field, t) for i, t in enumerate(found)
            )
        return out

    def _check(self, vectors: Any, n: int, what: str) -> list[Vector]:
        if not isinstance(vectors, list | tuple) or len(vectors) != n:
            got = len(vectors) if isinstance(vectors, list | tuple) else repr(vectors)
            raise ValueError(f"the store's embed gave {got} vectors for {n} {what}")
        out = []
        for v in vectors:
            vector = [float(x) for x in v]
            if self.dims is not None and len(vector) != self.dims:
                raise ValueError(
                    f"the store's embed gave a vector of {len(vector)} dimensions where the "
                    f"index has dims={self.dims}"
                )
            out.append(vector)
        return out

    def vectors(self, texts: list[tuple[str, str]]) -> list[FieldVector]:
        """Each text embedded (one call for the distinct texts)."""
        if not texts:
            return []
        distinct = list(dict.fromkeys(t for _, t in texts))
        got = self._check(self.embeddings.embed_documents(distinct), len(distinct), "texts")
        return _paired(texts, dict(zip(distinct, got, strict=True)))

    async def avectors(self, texts: list[tuple[str, str]]) -> list[FieldVector]:
        if not texts:
            return []
        distinct = list(dict.fromkeys(t for _, t in texts))
        got = await self.embeddings.aembed_documents(distinct)
        vectors = self._check(got, len(distinct), "texts")
        return _paired(texts, dict(zip(distinct, vectors, strict=True)))

    def query(self, query: str) -> Vector:
        return self._check([self.embeddings.embed_query(query)], 1, "query")[0]

    async def aquery(self, query: str) -> Vector:
        return self._check([await self.embeddings.aembed_query(query)], 1, "query")[0]


def _tokens(field: str) -> list[str]:
    return ["$"] if field == "$" else tokenize_path(field)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _paired(texts: list[tuple[str, str]], by_text: dict[str, Vector]) -> list[FieldVector]:
    return [(field, _sha(text), by_text[text]) for field, text in texts]


def cosine(x: Sequence[float], y: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is all zeros (as LangGraph's)."""
    nx = math.sqrt(sum(a * a for a in x))
    ny = math.sqrt(sum(b * b for b in y))
    if nx == 0 or ny == 0:
        return 0.0
    return sum(a * b for a, b in zip(x, y, strict=False)) / (nx * ny)


T = TypeVar("T")


def rank(
    candidates: Sequence[tuple[T, Sequence[Sequence[float]]]],
    query: Sequence[float],
    limit: int,
    offset: int,
) -> list[tuple[T, float | None]]:
    """A query's page of `candidates` (in their order, each with its vectors): those with
    vectors by their best score (LangGraph's max pooling over an item's fields), highest first,
    ties in candidate order; then those without vectors, unscored, in candidate order."""
    scored = [(max(cosine(query, v) for v in vs), c) for c, vs in candidates if vs]
    scored.sort(key=lambda s: s[0], reverse=True)  # stable: ties keep candidate order
    ordered: list[tuple[T, float | None]] = [(c, s) for s, c in scored]
    ordered.extend((c, None) for c, vs in candidates if not vs)
    return ordered[offset : offset + limit]
