"""The end-to-end fixtures (`tests.kit.e2e_fixtures`) and the module's bot, which knows the
services of `tests.client.external_kit.POLICY`."""

from __future__ import annotations

from tests.client.external_kit import bot
from tests.kit.e2e_fixtures import bot_db, e2e, fake_slack, http

__all__ = ["bot", "bot_db", "e2e", "fake_slack", "http"]
