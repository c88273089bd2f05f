"""Stored rows back into values: decoding, rebuilding appended lists, assembling checkpoints.

A list channel that grew by concatenation is stored as a chain: each row after the first holds
only the items appended and names the version it extends (`prev_version`), back to a row that
holds the whole list (`full_version`). A row after an update by id holds an edit instead (an
object, `_delta.edit_json`: the indexes dropped and replaced, the items added). `_channel_value`
joins a chain back into the list.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...errors import CheckpointFormatError
from .. import _delta, serde
from ..base import (
    CheckpointRecord,
    CheckpointTuple,
    PendingWrite,
    checkpoint_config,
    checkpoint_from_record,
)


def _now() -> float:
    return time.time()


def _ts(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else bytes(value)


def _format_error(thread_id: str, channel: str | None, what: str) -> CheckpointFormatError:
    where = f"thread {thread_id!r}" + (f", channel {channel!r}" if channel else "")
    return CheckpointFormatError(f"{where}: {what}", thread_id=thread_id, channel=channel)


def _decode(thread_id: str, channel: str | None, data: Any) -> Any:
    try:
        return serde.loads(_bytes(data))
    except CheckpointFormatError as e:
        raise _format_error(thread_id, channel, str(e)) from e


# (channel, version) -> (prev_version, total, value)
_BlobRows = dict[tuple[str, int], tuple[int | None, int | None, bytes | None]]


def _channel_value(thread_id: str, channel: str, version: int, rows: _BlobRows) -> Any:
    """The value of `channel` at `version`, or `_MISSING` when it has none."""
    row = rows.get((channel, version))
    if row is None or row[2] is None:
        return _MISSING
    prev, total, value = row
    if prev is None:
        return _decode(thread_id, channel, value)
    parts = [_bytes(value)]
    at: int | None = prev
    while at is not None:
        link = rows.get((channel, at))
        if link is None or link[2] is None:
            raise _format_error(
                thread_id,
                channel,
                f"the list stored at version {version} extends version {at}, which is missing",
            )
        parts.append(_bytes(link[2]))
        at = link[0]
    parts.reverse()
    if any(part[:1] == b"{" for part in parts):
        out = _rebuilt(thread_id, channel, version, parts)
    else:
        items = []
        for part in parts:
            if part[:1] != b"[" or part[-1:] != b"]":
                raise _format_error(
                    thread_id, channel, f"version {version} extends a value that is not a list"
                )
            if len(part) > 2:
                items.append(part[1:-1])
        out = _decode(thread_id, channel, b"[" + b",".join(items) + b"]")
    if len(out) != total:
        raise _format_error(
            thread_id,
            channel,
            f"the list at version {version} has {len(out)} items where {total} were stored",
        )
    return out


def _rebuilt(thread_id: str, channel: str, version: int, parts: list[bytes]) -> list[Any]:
    """A chain that holds edits (`_delta`), oldest part first: each part decoded and applied."""
    out = _decode(thread_id, channel, parts[0])
    for part in parts[1:]:
        if type(out) is not list:
            break
        data = _decode(thread_id, channel, part)
        if type(data) is list:
            out.extend(data)
            continue
        try:
            out = _delta.apply(out, _delta.edit_from_json(data, len(out)))
        except CheckpointFormatError as e:
            raise _format_error(thread_id, channel, f"version {version}: {e}") from e
    if type(out) is not list:
        raise _format_error(
            thread_id, channel, f"version {version} extends a value that is not a list"
        )
    return out


_MISSING = object()


def _record(thread_id: str, row: tuple[Any, ...]) -> CheckpointRecord:
    """The stored checkpoint record of a checkpoint row, checked."""
    try:
        record: CheckpointRecord = serde.loads_record(_bytes(row[4]))
        if not isinstance(record.get("channel_versions"), dict):
            raise KeyError("channel_versions")
        return record
    except (CheckpointFormatError, KeyError, TypeError, AttributeError) as e:
        raise _format_error(thread_id, None, f"checkpoint {row[2]!r}: {e}") from e


def _assemble(
    thread_id: str,
    ns: str,
    row: tuple[Any, ...],
    record: CheckpointRecord,
    blob_rows: _BlobRows,
    writes: Sequence[tuple[str, str, Any]],
) -> CheckpointTuple:
    """A `CheckpointTuple` from a checkpoint row, its record, the blob rows and its writes."""
    checkpoint_id, parent_id = row[2], row[3]
    values = {}
    for channel, version in record["channel_versions"].items():
        value = _channel_value(thread_id, channel, version, blob_rows)
        if value is not _MISSING:
            values[channel] = value
    return CheckpointTuple(
        config=checkpoint_config(thread_id, ns, checkpoint_id),
        checkpoint=checkpoint_from_record(checkpoint_id, record, values),
        metadata=_decode(thread_id, None, row[5]),
        parent_config=checkpoint_config(thread_id, ns, parent_id) if parent_id else None,
        pending_writes=[
            PendingWrite(task_id, channel, _decode(thread_id, channel, value))
            for task_id, channel, value in writes
        ],
    )
