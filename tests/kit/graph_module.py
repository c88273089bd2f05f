"""A graph written as a module of its own, for the tests where one process runs it (and may die
in it) and the next one picks the thread up: `run()` runs the module as a script in a fresh
Python, `load()` imports it here to build the same graph on a new saver."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).parents[2]
"""This checkout: first on the child's PYTHONPATH, so a git worktree sharing a venv runs its own
`graphs`, not the one the venv's editable install points at."""


@dataclass(frozen=True)
class GraphModule:
    path: Path

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        """The module run as `__main__` with `args`, and `env` added to this process's
        environment; its exit code and output, for the test to judge."""
        return subprocess.run(
            [sys.executable, str(self.path), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, **env, "PYTHONPATH": str(ROOT)},
        )

    def load(self) -> ModuleType:
        """The module imported in this process (not as `__main__`, so its script part does not
        run), under its file's name; in `sys.modules`, where type hints are resolved."""
        spec = importlib.util.spec_from_file_location(self.path.stem, self.path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.path.stem] = module
        spec.loader.exec_module(module)
        return module


def graph_module(folder: Path, name: str, source: str) -> GraphModule:
    """`source` (dedented) written to `folder/name.py`."""
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return GraphModule(path)
