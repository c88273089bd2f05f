"""Checks: the facts a decision rests on ("balance 120.00", "refunded before: no"), read when an
approval is asked (shown on its card) and read again right before the approved action runs.

A check is a function of the proposal's arguments that returns a small mapping of named facts
(a workflow's, passed to `request_approval(..., check=fn)`), or a service's `check_url` that
answers them as JSON (`bot.approvals.external`). What it read is a record, stored with the
approval and in the run's checkpoint:

    {"at": 1765029720.0, "facts": {"balance": "120.00", "refunded_before": "no"}}
    {"at": 1765029720.0, "error": "the check raised KeyError: 'acct-9'"}

A check that raises, answers something that is not facts, or does not answer within its timeout
is a refusal to run, never a pass: its record holds `error` and no `facts`. When the facts read
again differ from those the approver saw, the record also says what `changed` (`{name: [old,
new]}`), and a new approval is asked showing it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

__all__ = [
    "CHECK_TIMEOUT",
    "MAX_FACTS",
    "Check",
    "changed_facts",
    "changes_text",
    "checked",
    "facts_problem",
    "facts_text",
    "read_facts",
    "recheck",
]

CHECK_TIMEOUT = 10.0
"""How long a check may take, in seconds, before it counts as failed (`check_timeout=`)."""
MAX_FACTS = 20
"""The most facts a check may answer."""
MAX_FACT_CHARS = 200
"""The longest a fact's name or text value may be."""

Check = Callable[[dict[str, Any]], Mapping[str, Any]]
"""`check(args) -> {"balance": "120.00", ...}`: reads the world, changes nothing."""


def facts_problem(found: Any) -> str | None:
    """Why what a check answered is not facts (a mapping of at most `MAX_FACTS` names, each a
    short text, to short texts, numbers, booleans or null), or None when it is."""
    if not isinstance(found, Mapping):
        return f"it answered {type(found).__name__}, not a mapping of named facts"
    if len(found) > MAX_FACTS:
        return f"it answered {len(found)} facts; at most {MAX_FACTS}"
    for name, value in found.items():
        if not isinstance(name, str) or not name or len(name) > MAX_FACT_CHARS:
            return f"the fact name {name!r} is not a text of 1 to {MAX_FACT_CHARS} characters"
        if value is not None and not isinstance(value, (str, int, float, bool)):
            return f"fact {name!r} is {type(value).__name__}; a fact is a text, number or boolean"
        if isinstance(value, str) and len(value) > MAX_FACT_CHARS:
            return f"fact {name!r} is longer than {MAX_FACT_CHARS} characters"
    return None


def checked(found: Any, *, at: float | None = None) -> dict[str, Any]:
    """The record of what a check answered (`found`): its facts, or the error that they are
    not facts."""
    at = time.time() if at is None else at
    problem = facts_problem(found)
    if problem is not None:
        return {"at": at, "error": f"the check's answer was refused: {problem}"}
    return {"at": at, "facts": dict(found)}


def read_facts(check: Check, args: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Run `check(args)` in a thread of its own, at most `timeout` seconds, and return its
    record. Never raises: a check that raises or runs out of time gives a record with
    `error`. A check still running past its timeout is left to finish in its thread (Python
    cannot stop a thread); what it returns then is not used."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="signoff-check")
    try:
        found = pool.submit(check, dict(args)).result(timeout=timeout)
    except FutureTimeout:
        return {"at": time.time(), "error": f"the check did not answer within {timeout:g}s"}
    except Exception as e:  # noqa: BLE001 - a failing check is a refusal, recorded, never a pass
        return {"at": time.time(), "error": f"the check raised {type(e).__name__}: {e}"[:500]}
    finally:
        pool.shutdown(wait=False)
    return checked(found)


def changed_facts(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, list[Any]]:
    """`{name: [old, new]}` for each fact that differs (one that appeared or went is None on
    its missing side); empty when nothing changed."""
    out: dict[str, list[Any]] = {}
    for name in [*old, *(n for n in new if n not in old)]:
        before, after = old.get(name), new.get(name)
        if before != after or type(before) is not type(after):
            out[name] = [before, after]
    return out


def recheck(shown: Any, now: Mapping[str, Any]) -> dict[str, Any] | None:
    """Whether the facts read now (`now`, a record) let the approved action run: None when
    they are those the approver saw (`shown`, the facts stored with the approval), else what
    goes into the next request: `now` with its `changed` facts (or its `error`)."""
    if "error" in now:
        return dict(now)
    facts = dict(now.get("facts") or {})
    before = dict(shown) if isinstance(shown, Mapping) else {}
    changed = changed_facts(before, facts)
    if not changed and isinstance(shown, Mapping):
        return None
    if not changed:  # nothing stored to compare with: never a pass
        changed = {name: [None, value] for name, value in facts.items()}
    return {**now, "changed": changed}


def facts_text(facts: Mapping[str, Any]) -> str:
    """The facts in words, for a card or a reason: `balance 120.00, refunded_before no`."""
    return ", ".join(f"{name} {_word(value)}" for name, value in facts.items()) or "no facts"


def _word(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def changes_text(changed: Mapping[str, Any]) -> str:
    """What changed in words: `balance 120.00 → 80.00`."""
    parts = []
    for name, pair in changed.items():
        old, new = (pair[0], pair[1]) if isinstance(pair, list) and len(pair) == 2 else (None, pair)
        parts.append(f"{name} {_word(old)} → {_word(new)}")
    return ", ".join(parts)
