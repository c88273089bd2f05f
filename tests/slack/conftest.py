"""Fixtures of the end-to-end tests (`tests.kit.e2e` has the pieces, `tests.kit.e2e_fixtures`
the fixtures): one fake Slack process per session, the module's bot's database, and `e2e`, a
test's hands on both processes.

Each end-to-end module defines a module-scoped `bot` fixture (a `BotProcess`).
"""

from __future__ import annotations

from tests.kit.e2e_fixtures import bot_db, e2e, fake_slack, http, over, socket_bot_db

__all__ = ["bot_db", "e2e", "fake_slack", "http", "over", "socket_bot_db"]
