"""The modals' submissions: reject with a reason, edit and approve, approve with a grant.

A mistake in the form is shown under its input (`payloads.FormErrors`); a refusal is shown as
the form's error, and nothing changes. The resume runs in the background (the job worker,
kicked).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from ..approvals.errors import ApprovalError, InvalidEditError
from ..approvals.service import Signoff
from . import messages, payloads
from ._listener import Listener, click_wait
from .home import Home

__all__ = ["Views"]


class Views(Listener):
    """`view_submission` of the reject and edit modals."""

    def __init__(
        self,
        signoff: Signoff,
        client: AsyncWebClient,
        kick: Callable[[], None],
        home: Home,
        *,
        serving: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        super().__init__(signoff, client, kick, serving=serving)
        self.home = home
        """Refreshed after its user decided something."""

    async def on_reject_submit(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        view: dict[str, Any],
        context: dict[str, Any] | None = None,
    ) -> None:
        with self.serving():  # the jobs wait: the person waits for this
            await self._on_reject_submit(ack, body, view, context)

    async def _on_reject_submit(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        view: dict[str, Any],
        context: dict[str, Any] | None,
    ) -> None:
        user = (body.get("user") or {}).get("id", "")
        try:
            shown = payloads.action_value_from_view(view)
            reason = payloads.reason_from_view_state(view.get("state") or {})
            await self.signoff.vote(
                shown.approval_id,
                user,
                False,
                note=reason,
                wait=click_wait(context),
                revision=shown.revision,
            )
            self.home.refresh_home_soon(user)
        except payloads.FormErrors as e:
            await ack(**e.response())
            return
        except (payloads.BadPayload, ApprovalError) as e:
            text = messages.refusal_text(e, form=True)
            await ack(response_action="errors", errors={payloads.REASON_BLOCK: text})
            return
        await ack()
        self.kick()

    async def on_edit_submit(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        view: dict[str, Any],
        context: dict[str, Any] | None = None,
    ) -> None:
        with self.serving():  # the jobs wait: the person waits for this
            await self._on_edit_submit(ack, body, view, context)

    async def _on_edit_submit(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        view: dict[str, Any],
        context: dict[str, Any] | None,
    ) -> None:
        user = (body.get("user") or {}).get("id", "")
        first_block = payloads.NOTE_BLOCK
        editable: dict[str, Any] = {}
        try:
            shown = payloads.action_value_from_view(view)
            approval_id = shown.approval_id
            a = await self.signoff.get(approval_id)
            rule = self.signoff.policy.actions.get(a.action)
            editable = {f: a.current.get(f) for f in (rule.editable if rule else ())}
            if editable:
                first_block = payloads.edit_block_id(next(iter(editable)))
            edits = payloads.edits_from_view_state(view.get("state") or {}, editable)
            note = payloads.note_from_view_state(view.get("state") or {})
            await self.signoff.vote(
                approval_id,
                user,
                True,
                note=note,
                edits=edits,
                wait=click_wait(context),
                revision=shown.revision,
            )
            self.home.refresh_home_soon(user)
        except payloads.FormErrors as e:
            await ack(**e.response())
            return
        except (payloads.BadPayload, ApprovalError) as e:
            text = messages.refusal_text(e, form=True)
            # A value the action's schema refuses is shown under its own field.
            field = e.field if isinstance(e, InvalidEditError) else ""
            block = payloads.edit_block_id(field) if field in editable else first_block
            await ack(response_action="errors", errors={block: text})
            return
        await ack()
        self.kick()

    async def on_grant_submit(
        self,
        ack: AsyncAck,
        body: dict[str, Any],
        view: dict[str, Any],
        context: dict[str, Any] | None = None,
    ) -> None:
        """Approve, and allow up to N more like this for T: one vote, whose grant the
        governance core checks against the policy (a refusal is the form's error)."""
        with self.serving():
            user = (body.get("user") or {}).get("id", "")
            try:
                shown = payloads.action_value_from_view(view)
                grant = payloads.grant_from_view_state(view.get("state") or {})
                await self.signoff.vote(
                    shown.approval_id,
                    user,
                    True,
                    wait=click_wait(context),
                    revision=shown.revision,
                    grant=grant,
                )
                self.home.refresh_home_soon(user)
            except payloads.FormErrors as e:
                await ack(**e.response())
                return
            except (payloads.BadPayload, ApprovalError) as e:
                text = messages.refusal_text(e, form=True)
                await ack(response_action="errors", errors={payloads.GRANT_USES_BLOCK: text})
                return
            await ack()
            self.kick()
