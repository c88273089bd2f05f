"""A workflow whose `build()` returns the wrong thing, or raises, stops the command at load with
the workflow's name, its path and what came back: no traceback at its first run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = """\
from typing import TypedDict

from graphs import END, START, StateGraph


class S(TypedDict, total=False):
    x: int


def graph() -> StateGraph:
    g = StateGraph(S)
    g.add_node("a", lambda s: {})
    g.add_edge(START, "a")
    g.add_edge("a", END)
    return g


def compiled():
    return graph().compile()


def forgot_return():
    graph()


def a_dict():
    return {"nodes": []}


def raises():
    raise KeyError("SIGNOFF_LLM_MODEL")
"""


@pytest.mark.parametrize(
    ("function", "said"),
    [
        (
            "compiled",
            (
                "returned a graphs.compiled.CompiledGraph, not a StateGraph; return the "
                "StateGraph itself, not compiled: signoff compiles it with its own checkpointer"
            ),
        ),
        (
            "forgot_return",
            (
                "returned None, not a StateGraph; it must return a graphs.StateGraph (is "
                "`return g` missing?)"
            ),
        ),
        (
            "a_dict",
            "returned a dict, not a StateGraph; it must return a graphs.StateGraph (not compiled)",
        ),
        ("raises", "raised KeyError: 'SIGNOFF_LLM_MODEL'"),
    ],
)
def test_a_build_that_returns_the_wrong_thing_is_named_at_load(
    tmp_path: Path, function: str, said: str
) -> None:
    (tmp_path / "mywf.py").write_text(MODULE)
    (tmp_path / "signoff.toml").write_text(
        f'[workflows.mine]\npath = "mywf:{function}"\n\n'
        '[actions.x]\ntier = "low"\napprovers = ["U_A"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "SIGNOFF_"))}
    signoff = str(Path(sys.executable).with_name("signoff"))
    done = subprocess.run(
        [signoff, "start", "mine", "--input", "{}"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"signoff: workflow 'mine': mywf:{function}() {said}\n"


def test_a_good_build_loads() -> None:
    from bot.workflows import load_workflows

    flows = load_workflows({"ask": "tests.kit.flows:build_ask"})
    assert flows["ask"].build().__class__.__name__ == "StateGraph"
