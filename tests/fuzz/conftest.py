"""Fixtures of the hostile-input tests: the end-to-end fixtures of `tests/slack` (one fake Slack
process per session, the module's bot's database, `e2e`), reused as they are
(`tests.kit.e2e_fixtures`).

Each end-to-end module here defines a module-scoped `bot` fixture (a `BotProcess`), as in
`tests/slack`.
"""

from __future__ import annotations

from tests.kit.e2e_fixtures import bot_db, e2e, fake_slack, http

__all__ = ["bot_db", "e2e", "fake_slack", "http"]
