"""`signoff new workflow NAME`: a working starting point for a workflow of one's own.

Three files, each small enough to read at once and meant to be changed:

- `NAME.py`: a graph that asks a person to approve one action (`run_NAME`), then does it, or
  says why not. It is found by `path = "NAME:build"`: the current directory is on the path
  for `signoff` and its demo (`bot.cli`), and for pytest beside it.
- `NAME.toml`: a complete policy for it, with the demo people (Carol starts, Alice or Bob of
  finance approve), for `signoff demo --policy NAME.toml`; copy its tables into your own.
- `test_NAME.py`: runs it on a temporary SQLite database, approved and rejected.

Nothing is overwritten: a file that exists already stops the command before anything is written.
"""

from __future__ import annotations

import importlib.util
import keyword
from pathlib import Path

__all__ = ["ScaffoldError", "write_workflow"]

BUNDLED = ("refund", "delete_row", "vendor_payment")
"""The names of the workflows signoff ships with (`bot.workflows.BUILTIN`)."""


class ScaffoldError(ValueError):
    """The name cannot be used or a file is in the way; the message says which."""


_MODULE = '''\
"""{title}: ask a person before the irreversible part, then do it.

Written by `signoff new workflow {name}`. Change the state, the action's arguments and what
`act` does; the policy ({name}.toml) says who may start it and who approves `run_{name}`.
"""

from __future__ import annotations

from typing import Any, TypedDict

from bot.approvals.effects import services
from bot.approvals.policy.schema import Field, Schema
from bot.approvals.request import request_approval
from graphs import END, START, StateGraph, once

INPUTS = Schema(
    {{
        "item": Field("string", required=True, max_length=200),
        "amount": Field("number", required=True, exclusive_minimum=0, format="money"),
    }}
)
"""The run's inputs, in the order `/agent run` and the demo's form ask for them, checked at start
(a bad value is refused field by field, nothing recorded)."""


class State(TypedDict, total=False):
    item: str
    amount: float
    decision: dict[str, Any]
    outcome: str


def ask(state: State) -> dict[str, Any]:
    # The run pauses here, durably, until the approval is decided; on resume this node runs
    # again from its top and `request_approval` returns the decision.
    amount = round(float(state["amount"]), 2)
    decision = request_approval(
        "run_{name}",  # the action, as the policy names it
        {{"item": state["item"], "amount": amount}},
        title=f"{title}: {{state['item']}} for {{amount:.2f}}",
    )
    return {{"decision": {{**decision.to_json(), "args": decision.args}}}}


def act(state: State, config: Any) -> dict[str, Any]:
    decision = state["decision"]
    if not decision["approved"]:
        return {{"outcome": f"not done ({{decision['status']}}): {{decision['note'] or 'no reason'}}"}}
    args = decision["args"]  # with the approver's edits applied
    svc = services(config)
    # The irreversible part goes here. once(): it runs once per thread, even if this node runs
    # again; the idempotency key lets the API you call refuse a duplicate too.
    key = decision["idempotency_key"]
    once(f"{name}:{{key}}", svc.effects.record, "{name}", key, args, thread_id=svc.thread_id)
    return {{"outcome": f"done: {{args['item']}} for {{args['amount']:.2f}}"}}


def build() -> StateGraph:
    """{title}: ask a person before the irreversible part, then do it."""
    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("act", act)
    g.add_edge(START, "ask")
    g.add_edge("ask", "act")
    g.add_edge("act", END)
    return g
'''

_POLICY = """\
# Written by `signoff new workflow {name}`: a complete policy for the workflow in {name}.py, with
# the demo's people. Try it: `signoff demo --policy {name}.toml` (start it as Carol, approve it
# as Alice). For your own deployment copy the tables into your signoff.toml (its [groups] may
# hold these already), with your people's Slack user ids.

[groups]
finance = ["U_ALICE", "U_BOB"]
support = ["U_CAROL"]

# The workflow: `path` is "module:function", the module importable from where signoff runs
# (the current directory, PYTHONPATH or an installed package).
[workflows.{name}]
path = "{name}:build"
starters = ["@support"]

# The action its graph asks about (request_approval("run_{name}", ...)).
[actions.run_{name}]
title = "{title}"
tier = "medium"
approvers = ["@finance"]
required = 1
editable = ["amount"]
expire_after = "1d"

# Its arguments: checked when asked for, on every edit and before any auto-approval rule.
[actions.run_{name}.args]
item = {{ type = "string", required = true, max_length = 200 }}
amount = {{ type = "number", required = true, exclusive_minimum = 0, format = "money" }}
"""

_TEST = '''\
"""{name}: asked, approved or rejected, done once or not at all, on a temporary SQLite database.

Written by `signoff new workflow {name}`; run it with `python test_{name}.py`, or with
`pytest test_{name}.py` where pytest is installed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bot.config import Settings, build_signoff

POLICY = Path(__file__).resolve().with_name("{name}.toml")


def run(db: Path, approve: bool, **edits: Any) -> dict[str, Any]:
    """Start {name} as Carol, decide it as Alice, and return the run as it ended."""

    async def go() -> dict[str, Any]:
        app = build_signoff(Settings(database_url=f"sqlite:///{{db}}", policy_path=POLICY))
        try:
            await app.db.upgrade()
            report = await app.start(
                "{name}", {{"item": "train ticket", "amount": 42.5}}, requester="U_CAROL"
            )
            assert report.status == "paused", report
            (approval_id,) = report.approvals
            note = "" if approve else "not this one"
            await app.decide(approval_id, "U_ALICE", approve, note=note, edits=edits or None)
            await app.run_jobs(("resume",))
            info = await app.run_info(report.thread_id)
            assert info is not None
            return dict(info)
        finally:
            await app.db.aclose()

    return asyncio.run(go())


def test_approved_it_is_done(tmp_path: Path) -> None:
    done = run(tmp_path / "test.db", approve=True)
    assert done["status"] == "completed"
    assert json.loads(done["result"])["outcome"] == "done: train ticket for 42.50"


def test_approved_with_an_edit_it_is_done_with_the_edit(tmp_path: Path) -> None:
    done = run(tmp_path / "test.db", approve=True, amount="40")
    assert json.loads(done["result"])["outcome"] == "done: train ticket for 40.00"


def test_rejected_it_is_not_done(tmp_path: Path) -> None:
    done = run(tmp_path / "test.db", approve=False)
    assert done["status"] == "completed"
    assert json.loads(done["result"])["outcome"] == "not done (rejected): not this one"


if __name__ == "__main__":  # without pytest: each test on a database of its own
    import tempfile

    for test in (
        test_approved_it_is_done,
        test_approved_with_an_edit_it_is_done_with_the_edit,
        test_rejected_it_is_not_done,
    ):
        with tempfile.TemporaryDirectory() as where:
            test(Path(where))
        print(f"passed  {{test.__name__}}")
'''


def _check_name(name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name) or not name.islower():
        raise ScaffoldError(
            f"{name!r} cannot name a workflow module: use lower case letters, digits and _ "
            "(e.g. expense_claim)"
        )
    if name.startswith("test_"):
        raise ScaffoldError(f"{name!r}: a module named test_... would be taken for a test")
    if name in BUNDLED:
        raise ScaffoldError(f"{name!r} is a workflow signoff ships with; pick another name")


def write_workflow(name: str, directory: Path = Path()) -> str:
    """Write `NAME.py`, `NAME.toml` and `test_NAME.py` into `directory`; return what to do next.

    Raises:
        ScaffoldError: the name is not a usable module name, or one of the files exists.
    """
    _check_name(name)
    title = name.replace("_", " ").capitalize()
    files = {
        directory / f"{name}.py": _MODULE.format(name=name, title=title),
        directory / f"{name}.toml": _POLICY.format(name=name, title=title),
        directory / f"test_{name}.py": _TEST.format(name=name),
    }
    if not directory.is_dir():
        raise ScaffoldError(f"{directory} is not a directory")
    there = [str(path) for path in files if path.exists()]
    if there:
        verb = "exists" if len(there) == 1 else "exist"
        raise ScaffoldError(f"{', '.join(there)} {verb} already; nothing was written")
    if importlib.util.find_spec(name) is not None:
        raise ScaffoldError(
            f"{name!r} is the name of a module Python finds already; pick another name"
        )
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    module, policy, test = (str(path) for path in files)
    steps = [
        (f"python {test}", "it asks, Alice approves, it is done (or: pytest)"),
        (f"signoff demo --policy {policy}", "start it as Carol, approve it as Alice"),
    ]
    width = max(len(command) for command, _ in steps)
    example = """'{"item": "train ticket", "amount": 42.5}'"""
    return "\n".join(
        [
            f"wrote {module} (the workflow), {policy} (its policy) and {test} (its test)",
            "next:",
            *(f"  {command.ljust(width)}  # {what}" for command, what in steps),
            f"  SIGNOFF_POLICY={policy} signoff start {name} --as U_CAROL --input {example}",
        ]
    )
