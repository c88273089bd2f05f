"""The order a `ToolNode`'s calls run in: a call its hook let through with `RunsAfter` waits for
the calls it names, and runs only if each of them ran without an error; the others run as they
come (one after another under `invoke`, concurrently under `ainvoke`). The outputs keep the
calls' order, as the model made them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage

__all__ = ["run_in_order", "run_in_order_async"]


def _waited(after: Mapping[str, tuple[str, ...]], ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each call's calls to wait for, among the node's own (others are not waited on)."""
    present = set(ids)
    return {i: tuple(d for d in after.get(i, ()) if d in present and d != i) for i in ids}


def _order(ids: Sequence[str], waits: Mapping[str, tuple[str, ...]]) -> tuple[list[str], set[str]]:
    """The calls in an order where each comes after those it waits for (else in the model's
    order), and the calls that wait on each other in a circle (which none can break)."""
    placed: list[str] = []
    done: set[str] = set()
    left = list(ids)
    while left:
        ready = [i for i in left if all(d in done for d in waits[i])]
        if not ready:
            return placed, set(left)
        for i in ready:
            placed.append(i)
            done.add(i)
        left = [i for i in left if i not in done]
    return placed, set()


def _blocked(
    call: ToolCall, waits: tuple[str, ...], outputs: Mapping[str, Any]
) -> ToolMessage | None:
    """The error the model gets instead of running `call`, when a call it waits for did not run
    or failed; None when each of them ran without an error."""
    for dep in waits:
        out = outputs.get(dep)
        if isinstance(out, ToolMessage) and out.status == "error":
            why = out.content if isinstance(out.content, str) else str(out.content)
            return _not_run(
                call,
                f"it runs only after call {dep} ({out.name}), which did not run or failed: {why}",
            )
    return None


def _not_run(call: ToolCall, why: str) -> ToolMessage:
    return ToolMessage(
        content=f"Not run: {why}", name=call["name"], tool_call_id=call["id"], status="error"
    )


def _circle(call: ToolCall) -> ToolMessage:
    return _not_run(call, "it and another call of this turn each run only after the other")


def run_in_order(
    calls: Sequence[ToolCall],
    after: Mapping[str, tuple[str, ...]],
    run: Callable[[int], Any],
) -> list[Any]:
    """Run call `i` by `run(i)`, each after the calls it waits for; the outputs in call order."""
    ids = [str(c["id"]) for c in calls]
    waits = _waited(after, ids)
    order, circled = _order(ids, waits)
    by_id: dict[str, Any] = {}
    at = {i: n for n, i in enumerate(ids)}
    for i in order:
        call = calls[at[i]]
        blocked = _blocked(call, waits[i], by_id)
        by_id[i] = blocked if blocked is not None else run(at[i])
    for i in circled:
        by_id[i] = _circle(calls[at[i]])
    return [by_id[i] for i in ids]


async def run_in_order_async(
    calls: Sequence[ToolCall],
    after: Mapping[str, tuple[str, ...]],
    run: Callable[[int], Awaitable[Any]],
) -> list[Any]:
    """`run_in_order` under `ainvoke`: calls that wait for nothing run concurrently, and each
    other call as soon as the calls it waits for have ended."""
    ids = [str(c["id"]) for c in calls]
    waits = _waited(after, ids)
    _, circled = _order(ids, waits)
    at = {i: n for n, i in enumerate(ids)}
    ends: dict[str, asyncio.Future[Any]] = {}

    async def one(i: str) -> Any:
        call = calls[at[i]]
        if i in circled:
            return _circle(call)
        if waits[i]:
            await asyncio.wait([ends[d] for d in waits[i]])
            outputs = {d: ends[d].result() for d in waits[i] if not ends[d].exception()}
            failed = [d for d in waits[i] if d not in outputs]
            if failed:
                return _not_run(call, f"it runs only after call {failed[0]}, which failed")
            blocked = _blocked(call, waits[i], outputs)
            if blocked is not None:
                return blocked
        return await run(at[i])

    for i in ids:
        ends[i] = asyncio.ensure_future(one(i))
    return list(await asyncio.gather(*(ends[i] for i in ids)))
