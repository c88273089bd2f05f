"""Fixtures of the hostile-input tests: the end-to-end fixtures of `tests/slack` (one fake Slack
process per session, the module's bot's database, `e2e`), reused as they are, and the kits of
`tests/slack` and `tests/approvals` made importable (`_e2e_kit`, `_signoff_kit`).

Each end-to-end module here defines a module-scoped `bot` fixture (a `BotProcess`), as in
`tests/slack`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parent.parent
for _folder in ("slack", "approvals"):
    if str(_TESTS / _folder) not in sys.path:
        sys.path.append(str(_TESTS / _folder))


def _load(name: str, path: Path) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_slack = _load("_slack_e2e_fixtures", _TESTS / "slack" / "conftest.py")

fake_slack = _slack.fake_slack  # type: ignore[attr-defined]
http = _slack.http  # type: ignore[attr-defined]
bot_db = _slack.bot_db  # type: ignore[attr-defined]
e2e = _slack.e2e  # type: ignore[attr-defined]
