"""The Bolt listeners, bound together. Thin: read the payload (`payloads`), call the governance
core, answer with what the renderers and `messages` make. Nothing here decides who may do what.

One module per kind of request: `actions` (the card's buttons), `views` (the modals'
submissions), `commands` (`/agent`) and `home` (the App Home tab). `Handlers` builds them on one
`Signoff`, Web API client and job runner; `app.build_bolt_app` registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.service import Signoff
from .actions import Actions
from .commands import Commands
from .home import Home
from .views import Views

__all__ = ["Handlers"]


class Handlers:
    """Every listener, bound to one `Signoff`, Web API client and job runner."""

    def __init__(
        self,
        signoff: Signoff,
        client: AsyncWebClient,
        kick: Callable[[], None],
        *,
        default_channel: str | None = None,
        serving: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        self.home = Home(signoff, client, kick)
        """`app_home_opened`, and each decider's Home refreshed after a decision."""
        self.actions = Actions(signoff, client, kick, self.home, serving=serving)
        """The card's buttons (each click `serving()` until its ack)."""
        self.views = Views(signoff, client, kick, self.home, serving=serving)
        """The reject and edit modals' submissions."""
        self.commands = Commands(signoff, client, kick, default_channel=default_channel)
        self.commands.home = self.home
        """`/agent`; a run it starts posts its card in the command's channel, or this one."""
