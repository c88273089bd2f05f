"""The step's pure functions: what a superstep does to a run's state, with no I/O and no run.

They take the parts they read and change (the state's values, the channels' versions, the
channel specs, the step's tasks) and return what they made, so the loop (`_loop.py`) is the I/O
around them and each rule can be read alone: applying a step's writes through the reducers
(`apply_writes`, `apply_marked`, `expire`), the order a step's writes reach them (`write_order`),
whether the next checkpoint is a static pause (`static_pause`), a task's id (`task_id_of`), and
what a task's pending writes say (`waiting`, `task_writes`).
"""

from __future__ import annotations

import hashlib
import operator
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._schema import DELTA, EPHEMERAL, TOPIC, UNTRACKED, Channel
from ._types import OVERWRITE_KEY, Interrupt, Overwrite, Send
from .checkpoint.base import DONE, INTERRUPT, RESUME
from .errors import InvalidUpdateError

if TYPE_CHECKING:
    from ._run import Task
    from .checkpoint.base import PendingWrite

__all__ = [
    "apply_marked",
    "apply_writes",
    "expire",
    "is_overwrite",
    "name_messages",
    "overwrite_value",
    "static_pause",
    "task_id_of",
    "task_writes",
    "waiting",
    "write_order",
]


def apply_writes(
    channels: Mapping[str, Channel],
    values: dict[str, Any],
    versions: dict[str, int],
    writes: list[tuple[str, list[tuple[str, Any]]]],
    *,
    reducers: bool = True,
) -> tuple[dict[str, int], dict[str, int]]:
    """Apply one step's `(node, writes)`, in order, to `values` through the keys' reducers
    (`reducers=False`: each key replaced as given, `update_state`'s seed 000 rule), giving each
    key written a new version in `versions`. Returns (new_versions, appended): the versions
    this step made, and how many items each list key appended (what the saver stores)."""
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for node, node_writes in writes:
        for channel, value in node_writes:
            grouped.setdefault(channel, []).append((node, value))
    new_versions: dict[str, int] = {}
    appended: dict[str, int] = {}
    for channel, items in grouped.items():
        spec = channels[channel]
        if spec.kind is not None and (reducers or spec.kind == UNTRACKED):
            if not apply_marked(spec, values, items, appended):
                continue  # no version: nothing of it is stored
        elif spec.reducer is None or not reducers:
            if len(items) > 1:
                nodes = [n for n, _ in items]
                raise InvalidUpdateError(
                    f"At key {channel!r}: Can receive only one value per step, got "
                    f"{len(items)} (from {nodes}), and the key has no reducer: declare it "
                    f"as Annotated[T, reducer] to merge them"
                )
            value = items[0][1]
            values[channel] = value.value if type(value) is Overwrite else value
        else:
            had = channel in values
            current = values[channel] if had else (spec.initial() if spec.initial else None)
            old_len = len(current) if had and type(current) is list else -1
            overwritten = False
            for node, value in items:
                if type(value) is Overwrite or (
                    type(value) is dict and len(value) == 1 and OVERWRITE_KEY in value
                ):
                    if overwritten:
                        raise InvalidUpdateError(
                            f"At key {channel!r}: Can receive only one Overwrite value per "
                            f"super-step, got a second from {node!r}: only one writer may "
                            "replace the value in a step"
                        )
                    current, had, overwritten = overwrite_value(value), True, True
                    old_len = -1  # a replaced list is stored whole, not as a delta
                    continue
                if overwritten:
                    continue  # as in LangGraph: after an Overwrite, the step's others are dropped
                if current is None and not had:
                    current, had = value, True
                    continue
                try:
                    current = spec.reducer(current, value)
                except Exception as e:
                    raise InvalidUpdateError(
                        f"the reducer of state key {channel!r} failed on the value from "
                        f"{node!r}: {type(e).__name__}: {e}"
                    ) from e
            if old_len >= 0 and (
                (spec.appends and type(current) is list)
                or (spec.maybe_appends and _extends(current, values[channel]))
            ):
                appended[channel] = len(current) - old_len  # type: ignore[arg-type]
            values[channel] = current
        version = versions.get(channel, 0) + 1
        versions[channel] = version
        new_versions[channel] = version
    return new_versions, appended


def apply_marked(
    spec: Channel, values: dict[str, Any], items: list[tuple[str, Any]], appended: dict[str, int]
) -> bool:
    """Apply one step's writes `(node, value)` to a key of a `graphs.channels` marker.
    Returns whether the key gets a new version (an `UntrackedValue` key has none)."""
    channel, kind = spec.name, spec.kind
    if kind == UNTRACKED or kind == EPHEMERAL:
        if len(items) > 1 and spec.guard:
            nodes = [n for n, _ in items]
            cls = "UntrackedValue" if kind == UNTRACKED else "EphemeralValue"
            raise InvalidUpdateError(
                f"state key {channel!r} got {len(items)} values in one step (from {nodes}) "
                f"but is an {cls}, which takes one: {cls}(guard=False) keeps the last"
            )
        value = items[-1][1]
        values[channel] = value.value if type(value) is Overwrite else value
        return kind == EPHEMERAL
    if kind == TOPIC:
        items_of = [x for _, v in items for x in (v if type(v) is list else (v,))]
        old = values.get(channel)
        if spec.accumulate and old is not None:
            if items_of:
                values[channel] = [*old, *items_of]
                appended[channel] = len(items_of)
        elif items_of:
            values[channel] = items_of
        else:
            values.pop(channel, None)  # written only empty lists: an empty topic
        return True
    assert spec.kind == DELTA and spec.reducer is not None
    had = channel in values
    current: Any = values[channel] if had else (spec.initial() if spec.initial else None)
    batch: list[Any] = []
    replaced = False
    for node, value in items:
        if type(value) is Overwrite or (
            type(value) is dict and len(value) == 1 and OVERWRITE_KEY in value
        ):
            if replaced:
                raise InvalidUpdateError(
                    f"state key {channel!r} got two Overwrite values in one step (the "
                    f"second from {node!r}); only one writer may replace it"
                )
            current, replaced = overwrite_value(value), True
            if current is None and spec.initial is not None:
                current = spec.initial()
        elif not replaced:
            batch.append(value)
    if batch and not replaced:  # as in LangGraph: an Overwrite drops the step's other writes
        try:
            current = spec.reducer(current, batch)
        except Exception as e:
            nodes = sorted({n for n, _ in items})
            raise InvalidUpdateError(
                f"the reducer of state key {channel!r} (a DeltaChannel) failed on the "
                f"writes from {nodes}: {type(e).__name__}: {e}"
            ) from e
    old = values.get(channel)
    if had and not replaced and type(old) is list and _extends(current, old):
        appended[channel] = len(current) - len(old)
    values[channel] = current
    return True


def expire(
    fleeting: frozenset[str],
    values: dict[str, Any],
    versions: dict[str, int],
    new_versions: dict[str, int],
) -> None:
    """At the end of a step (not an input): empty the keys that last one step
    (`EphemeralValue`, `Topic` without `accumulate`) that it did not write, giving each a
    new version."""
    for key in fleeting:
        if key in values and key not in new_versions:
            del values[key]
            versions[key] = new_versions[key] = versions.get(key, 0) + 1


def static_pause(
    before: frozenset[str], after: frozenset[str], names: Sequence[str | Send], ran: list[str]
) -> list[str]:
    """The nodes a static pause stops at, once `ran` ran and `names` are next: those of `names`
    in `before` (`interrupt_before`), then those of `ran` in `after`; `[]` for no pause."""
    if not (before or after) or not names:
        return []
    nodes = [n.node if isinstance(n, Send) else n for n in names]
    hit = [n for n in dict.fromkeys(nodes) if n in before]
    hit += [n for n in ran if n in after and n not in hit]
    return hit


def task_id_of(thread_id: str, ns: str, checkpoint_id: str, name: str) -> str:
    """The id of the task that runs `name` (a node, or a `Send`'s key) from checkpoint
    `checkpoint_id` of the thread's namespace `ns`: the same on every process and every retry,
    so pending writes, answers and `once()` results find their task again. Shaped as
    LangGraph's (a UUID's 36 characters), as it shows in a subgraph's namespace `node:<task
    id>`; a checkpoint keeps the ids of its frontier, so ids of an older shape go on as saved."""
    hasher = _TASK_HASH.copy()  # (a copy costs less than a new hash: one a task, each step)
    hasher.update(f"{thread_id}\x00{ns}\x00{checkpoint_id}\x00{name}".encode())
    h = hasher.hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_TASK_HASH = hashlib.blake2b(digest_size=16)
"""The empty hash every task id starts from (`task_id_of`)."""


def write_order(tasks: list[Task]) -> list[Task]:
    """The order a step's writes reach the reducers, LangGraph's (it sorts a step's tasks by
    path): the tasks of the nodes edges, routers or gotos triggered, by node name, then the
    `Send` tasks in the order they were made (the frontier has them last, in that order). Not
    the order the tasks finished in, nor the order the nodes were added."""
    if len(tasks) < 2:
        return tasks
    return sorted(tasks, key=_write_key)


def _write_key(task: Task) -> tuple[bool, str]:
    return (True, "") if task.is_send else (False, task.name)


def waiting(writes: Sequence[tuple[str, Any]]) -> tuple[Interrupt, ...]:
    """The unanswered interrupts among one task's pending writes (none once it is done)."""
    asked: dict[str, Interrupt] = {}
    answered: set[str] = set()
    for channel, value in writes:
        if channel == DONE:
            return ()
        if channel == INTERRUPT:
            asked.setdefault(value.id, value)
        elif channel == RESUME:
            answered.add(value[0])
    return tuple(i for iid, i in asked.items() if iid not in answered)


def task_writes(writes: Sequence[PendingWrite], task_id: str) -> list[tuple[str, Any]]:
    return [(c, v) for t, c, v in writes if t == task_id]


def name_messages(channels: Mapping[str, Any], writes: list[tuple[str, Any]]) -> None:
    """Give each message without an id, written to a key whose reducer names messages
    (`add_messages`), its id now, before the writes are saved as pending writes: the state a
    pause shows, `get_state` and the completed step then hold the same ids."""
    for channel, value in writes:
        spec = channels.get(channel)
        if spec is None or not spec.maybe_appends:
            continue
        for message in value if type(value) is list else (value,):
            if getattr(message, "id", "") is None and hasattr(message, "content"):
                message.id = str(uuid.uuid4())


def _extends(new: Any, old: list[Any]) -> bool:
    """`new` is a list that begins with the very objects of `old` (it only appended to it)."""
    if type(new) is not list or len(new) < len(old):
        return False
    return all(map(operator.is_, old, new))  # one pass in C: a message list at every step


def overwrite_value(value: Any) -> Any:
    """The value an `Overwrite` (or its JSON form) replaces a key with."""
    return value.value if type(value) is Overwrite else value[OVERWRITE_KEY]


def is_overwrite(value: Any) -> bool:
    return type(value) is Overwrite or (
        type(value) is dict and len(value) == 1 and OVERWRITE_KEY in value
    )
