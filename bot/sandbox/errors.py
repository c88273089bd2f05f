"""The one error the stand-in raises internally: a Slack API error, answered as Slack would."""

from __future__ import annotations

from typing import Any

__all__ = ["SlackApiFailure"]


class SlackApiFailure(Exception):
    """A Web API call refused the way Slack refuses it: HTTP 200 with `{"ok": false, ...}`.

    Args:
        error: Slack's error code, e.g. `channel_not_found`, `invalid_blocks`.
        messages: Slack's `response_metadata.messages` lines, e.g.
            `"[ERROR] must be less than 25 characters [json-pointer:/view/title/text]"`.
        fields: more top-level fields of the answer, e.g. `missing_scope`'s `needed` and
            `provided`.
    """

    def __init__(self, error: str, messages: list[str] | None = None, **extra: str) -> None:
        super().__init__(error if not messages else f"{error}: {'; '.join(messages)}")
        self.error = error
        """Slack's error code."""
        self.messages = list(messages or [])
        """Slack's explanatory lines, empty when Slack gives none."""
        self.extra = extra
        """Other fields of the answer (`missing_scope`'s `needed` and `provided`)."""

    def to_response(self) -> dict[str, Any]:
        """The JSON body Slack answers with."""
        body: dict[str, Any] = {"ok": False, "error": self.error, **self.extra}
        if self.messages:
            body["errors"] = [m.removeprefix("[ERROR] ") for m in self.messages]
            body["response_metadata"] = {"messages": self.messages}
        return body
