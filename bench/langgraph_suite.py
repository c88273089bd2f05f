"""LangGraph's own StateGraph tests, run against `graphs` with only the imports changed.

Issue 14's acceptance measure. Given a LangGraph checkout (or a bare clone: `--rev` picks the
commit), this script:

1. reads `libs/langgraph/tests/` there and picks the StateGraph tests: every top-level `test_*`
   function of the chosen files (default `test_pregel.py` and `test_pregel_async.py`) whose body
   names `StateGraph`;
2. copies those files and the helper modules beside them into a temporary directory (never into
   this repository), rewriting every `langgraph` import to `graphs` and nothing else;
3. writes a conftest of its own there: the fixtures LangGraph's conftest offers, on our savers
   (`sync_checkpointer` / `async_checkpointer`: `InMemorySaver` and `SQLSaver` on a SQLite file;
   `durability`: sync, async, exit), and, for a `graphs` module or name that does not exist, a
   stand-in that imports but fails as soon as a test uses it ("missing: langgraph.x.Name"), so
   that a missing feature fails the tests that use it, not the whole file; and, with
   `--interrupt-mode return` (the default: the issue's porting rule, "where the code reads
   `__interrupt__`, the interrupt mode"), `interrupt_mode="return"` as `StateGraph.compile`'s
   default, so a pause returns `__interrupt__` as in LangGraph (`raise`: graphs' own default);
4. runs pytest there with this interpreter and prints passed / failed / errors, and a histogram
   of the failures by cause (the exception type and the first line of its message, with quoted
   names, lists and numbers blanked; every failed assertion is one cause, "results differ").

    .venv/bin/python bench/langgraph_suite.py --langgraph PATH [--rev 1.2.11] [-k EXPR]
        [--files test_pregel.py test_pregel_async.py] [--keep] [--show N] [--list-failures]
        [--interrupt-mode return|raise]

LangGraph's tests import pytest-mock and syrupy: `.venv/bin/pip install pytest-mock syrupy` first
(they are not the project's dependencies). The measurement in docs/langgraph.md was made at
LangGraph's tag 1.2.11.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

DEFAULT_FILES = ("test_pregel.py", "test_pregel_async.py")
IMPORT_RE = re.compile(r"^(\s*)(from|import)(\s+)langgraph(?=[.\s])", re.MULTILINE)

CONFTEST = '''\
"""Written by bench/langgraph_suite.py: LangGraph's fixtures on graphs' savers."""

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import pkgutil
import sys
import types
import uuid
from unittest import mock

import pytest

import graphs


class MissingFeature(Exception):
    """A LangGraph name graphs does not have, used by a test."""


class _Missing:
    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def _fail(self, *a, **k):
        raise MissingFeature("missing: " + self._name)

    __call__ = _fail
    __iter__ = _fail
    __enter__ = _fail
    __aenter__ = _fail
    __bool__ = _fail
    __eq__ = _fail
    __hash__ = object.__hash__
    __mro_entries__ = lambda self, bases: (_MissingBase,)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(self._name + "." + attr)

    def __getitem__(self, item):
        return self

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __repr__(self):
        return "<missing " + self._name + ">"


class _MissingBase:
    def __init__(self, *a, **k):
        raise MissingFeature("missing: a base class graphs does not have")


def _fallback(modname, previous):
    def __getattr__(name):
        if previous is not None:
            try:
                return previous(name)
            except AttributeError:
                pass
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(modname.replace("graphs", "langgraph", 1) + "." + name)

    return __getattr__


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """graphs.x that does not exist imports as a module of stand-ins."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("graphs."):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        mod = types.ModuleType(spec.name)
        mod.__path__ = []
        return mod

    def exec_module(self, module):
        module.__getattr__ = _fallback(module.__name__, None)


sys.meta_path.append(_StubFinder())

INTERRUPT_MODE = INTERRUPT_MODE_VALUE
if INTERRUPT_MODE != "raise":
    # The issue's porting rule: where code reads `__interrupt__`, compile with the interrupt
    # mode that returns it. Only compile's default changes; a test's own argument wins.
    _compile = graphs.StateGraph.compile

    def _compile_returning(self, *args, **kwargs):
        kwargs.setdefault("interrupt_mode", INTERRUPT_MODE)
        return _compile(self, *args, **kwargs)

    graphs.StateGraph.compile = _compile_returning

for _info in pkgutil.walk_packages(graphs.__path__, "graphs."):
    try:
        importlib.import_module(_info.name)
    except Exception:
        pass
for _name, _mod in list(sys.modules.items()):
    if _name == "graphs" or _name.startswith("graphs."):
        _mod.__getattr__ = _fallback(_name, _mod.__dict__.get("__getattr__"))
        if not hasattr(_mod, "__path__"):
            _mod.__path__ = []  # so that graphs.x.missing imports as stand-ins too


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture()
def deterministic_uuids():
    ids = (uuid.UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    with mock.patch("uuid.uuid4", side_effect=ids) as m:
        yield m


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request):
    return request.param


def _saver(kind, tmp_path):
    if kind == "memory":
        return graphs.checkpoint.memory.InMemorySaver()
    saver = graphs.checkpoint.sql.SQLSaver("sqlite:///" + str(tmp_path / "lg.db"))
    saver.setup()
    return saver


@pytest.fixture(params=SAVERS)
def sync_checkpointer(request, tmp_path):
    yield _saver(request.param, tmp_path)


@pytest.fixture(params=SAVERS)
async def async_checkpointer(request, tmp_path):
    yield _saver(request.param, tmp_path)


@pytest.fixture
def cache():
    from graphs.cache.memory import InMemoryCache

    return InMemoryCache()


def _store():
    from graphs.store.memory import InMemoryStore

    return InMemoryStore()


@pytest.fixture
def sync_store():
    return _store()


@pytest.fixture
def async_store():
    return _store()


try:
    import pytest_mock  # noqa: F401
except ImportError:

    @pytest.fixture
    def mocker():
        raise MissingFeature("missing: pytest-mock (mocker)")


try:
    import syrupy  # noqa: F401
except ImportError:

    @pytest.fixture
    def snapshot():
        raise MissingFeature("missing: syrupy (snapshot)")
'''

PYTEST_INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
timeout = 30
addopts = -p no:cacheprovider
filterwarnings = ignore
"""


def read_tests_dir(src: Path, rev: str) -> dict[str, str]:
    """The files of libs/langgraph/tests (top level) as text, from a checkout or a bare clone."""
    tests = src / "libs" / "langgraph" / "tests"
    if tests.is_dir():
        return {p.name: p.read_text() for p in tests.iterdir() if p.is_file()}
    git = ["git", "--git-dir", str(src)]
    names = subprocess.run(
        [*git, "ls-tree", "--name-only", rev, "libs/langgraph/tests/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    out = {}
    for name in names:
        blob = subprocess.run(
            [*git, "show", f"{rev}:{name}"], capture_output=True, text=True, check=False
        )
        if blob.returncode == 0:
            out[Path(name).name] = blob.stdout
    return out


def snapshots(src: Path, rev: str) -> dict[str, str]:
    """LangGraph's syrupy snapshot files (only read when syrupy is installed)."""
    tests = src / "libs" / "langgraph" / "tests" / "__snapshots__"
    if tests.is_dir():
        return {p.name: p.read_text() for p in tests.iterdir()}
    git = ["git", "--git-dir", str(src)]
    res = subprocess.run(
        [*git, "ls-tree", "--name-only", rev, "libs/langgraph/tests/__snapshots__/"],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        Path(n).name: subprocess.run(
            [*git, "show", f"{rev}:{n}"], capture_output=True, text=True, check=False
        ).stdout
        for n in res.stdout.split()
    }


def state_graph_tests(text: str) -> list[str]:
    """Names of top-level test functions whose body names StateGraph."""
    tree = ast.parse(text)
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
        and "StateGraph" in ast.unparse(node)
    ]


def rewrite(text: str) -> str:
    """Only the imports change: `langgraph` becomes `graphs` in import statements."""
    return IMPORT_RE.sub(lambda m: f"{m[1]}{m[2]}{m[3]}graphs", text)


QUOTED = re.compile(r"'[^']*'")
LISTED = re.compile(r"\[[^\]]*\]")
CAUSE_NUMBERS = re.compile(r"0x[0-9a-f]+|\b[0-9a-f]{8}-[0-9a-f-]{27}\b|\d+")


def cause_of(message: str, text: str) -> str:
    """One line naming why a test failed: the exception and its message's first line."""
    for line in text.splitlines():
        if "MissingFeature: missing:" in line:
            return line.split("MissingFeature: ", 1)[1].strip()[:110]
    first = (message or text or "?").strip().splitlines()[0] if (message or text) else "?"
    if first.startswith(("AssertionError", "assert ")):
        return "assertion: results differ from LangGraph's"
    if first.startswith("graphs.errors.GraphInterrupt:"):
        return "graphs.errors.GraphInterrupt raised (a pause; LangGraph returns __interrupt__)"
    if first.startswith("graphs.errors."):  # our messages name the test's nodes and keys
        first = QUOTED.sub("'X'", LISTED.sub("[..]", first))
    return CAUSE_NUMBERS.sub("N", first)[:110]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--langgraph", required=True, type=Path, help="a checkout or a bare clone")
    ap.add_argument("--rev", default="HEAD", help="the commit or tag, for a bare clone")
    ap.add_argument("--files", nargs="+", default=list(DEFAULT_FILES))
    ap.add_argument("--savers", nargs="+", default=["memory"], choices=["memory", "sqlite"])
    ap.add_argument(
        "--interrupt-mode",
        default="return",
        choices=["return", "raise"],
        help="compile's default interrupt_mode in their tests (return: the porting rule's)",
    )
    ap.add_argument("-k", default=None, help="pytest -k expression, to run a subset")
    ap.add_argument("--show", type=int, default=40, help="histogram rows to print")
    ap.add_argument("--list-failures", action="store_true", help="print each failing test id")
    ap.add_argument("--keep", action="store_true", help="keep (and print) the temporary dir")
    args = ap.parse_args()

    files = read_tests_dir(args.langgraph, args.rev)
    tmp = Path(tempfile.mkdtemp(prefix="lgsuite-"))
    pkg = tmp / "tests"
    pkg.mkdir()
    ids: list[str] = []
    for name, text in files.items():
        if not name.endswith(".py") or name.startswith("conftest"):
            continue
        if name.startswith("test_") and name not in args.files:
            continue
        (pkg / name).write_text(rewrite(text))
        if name in args.files:
            ids += [f"tests/{name}::{t}" for t in state_graph_tests(text)]
    conftest = CONFTEST.replace("SAVERS", repr(args.savers))
    conftest = conftest.replace("INTERRUPT_MODE_VALUE", repr(args.interrupt_mode))
    (pkg / "conftest.py").write_text(conftest)
    snaps = pkg / "__snapshots__"
    snaps.mkdir()
    try:
        import syrupy  # noqa: F401

        for name, text in snapshots(args.langgraph, args.rev).items():
            (snaps / name).write_text(text)
    except ImportError:
        pass
    (tmp / "pytest.ini").write_text(PYTEST_INI)
    report = tmp / "report.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}"]
    if args.k:
        cmd += ["-k", args.k]
    # This checkout's `graphs` (its root after the shim), not the one the environment's
    # site-packages point at (an editable install of another checkout).
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp), str(root)]), "NO_DOCKER": "true"}
    print(f"{len(ids)} StateGraph test functions in {', '.join(args.files)}", flush=True)
    print(f"compile(interrupt_mode={args.interrupt_mode!r}) by default", flush=True)
    subprocess.run([*cmd, *ids], cwd=tmp, env=env, stdout=subprocess.DEVNULL, check=False)

    passed = failed = errors = skipped = 0
    causes: collections.Counter[str] = collections.Counter()
    failing: list[tuple[str, str]] = []
    for case in ET.parse(report).iter("testcase"):
        tid = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
            if bad is not None:
                errors += 1
        else:
            failed += 1
        if bad is None:
            if case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
            continue
        cause = cause_of(bad.get("message", ""), bad.text or "")
        causes[cause] += 1
        failing.append((tid, cause))
    total = passed + failed + errors + skipped
    print(f"{total} tests: {passed} passed, {failed} failed, {errors} errors, {skipped} skipped")
    print("failures by cause:")
    for cause, n in causes.most_common(args.show):
        print(f"{n:5d}  {cause}")
    if len(causes) > args.show:
        rest = sum(n for _, n in causes.most_common()[args.show :])
        print(f"{rest:5d}  ({len(causes) - args.show} other causes)")
    if args.list_failures:
        for tid, cause in failing:
            print(f"FAIL {tid}  [{cause}]")
    if args.keep:
        print(f"kept: {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
