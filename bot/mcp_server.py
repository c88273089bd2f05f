"""signoff as an MCP server: an agent that speaks the Model Context Protocol asks a person
before it acts, with the policy, cards, quorum, expiry and audit of any other approval.

Tools (each answers in the approvals API's wire shape, `ExternalApproval.to_json()`):
- `request_approval(action, args, title?, wait_seconds?)`: ask, then wait up to `wait_seconds`
  for the decision; still undecided then: `{"status": "pending", "approval_id", ...}`.
- `get_approval(approval_id, wait_seconds?)`: where an approval stands, waiting as above.
- `list_my_pending()`: this service's approvals nobody has decided yet.

Who asks is a service of the policy (`[services.NAME]`): `signoff mcp --service NAME` on stdio
(a local agent, trusted like the CLI: it has the database), or the service whose bearer token
came with the request on `/mcp` in `signoff run` (`bot.http.mcp`). A service may ask only for
the actions its section lists; anything else is refused as a tool error and nothing is
recorded. While a tool waits it sends MCP progress notifications when the client asked for
them (a progress token), so a client that resets its timeout on progress can wait long.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from .approvals.errors import ApprovalError

if TYPE_CHECKING:
    from .approvals.external import ExternalApproval
    from .approvals.service import Signoff

__all__ = [
    "DEFAULT_WAIT",
    "LOCAL_SERVICE",
    "MAX_WAIT",
    "SERVICE_ENV",
    "build_mcp_server",
    "serve_stdio",
]

LOCAL_SERVICE = "local"
"""The service `signoff mcp` asks as when neither `--service` nor `SIGNOFF_MCP_SERVICE` names
one. The policy must still have a `[services.local]` section listing its actions: deny by
default."""
SERVICE_ENV = "SIGNOFF_MCP_SERVICE"
"""The environment variable naming the service of `signoff mcp` (the flag wins)."""
DEFAULT_WAIT = 50.0
"""Seconds a tool waits for a decision when the caller gives no `wait_seconds`: under the
60 s many MCP clients allow a tool call that sends no progress."""
MAX_WAIT = 600.0
"""The longest wait one tool call may ask for; past it, call `get_approval` again."""
POLL = 10.0
"""Seconds of each long poll inside a wait: a progress notification goes out after each."""

ServiceOf = Callable[[Context[Any, Any]], str]
"""How a tool call finds the service it asks for: a fixed name on stdio, the request's bearer
token over HTTP. Raises `ToolError` when the call carries no identity."""

_ABOUT = (
    "An approval is a person's decision, made in Slack under signoff's policy (who may "
    "approve, how many must, what may be edited), on whether an irreversible action may run "
    "with exactly these arguments. Run the action only when the result has approved=true, "
    "and then with decision.args (an approver may have edited them). A rejection (or an "
    "expiry) is final for those arguments: do not ask again with the same ones; ask again "
    "only with different arguments, and say why in the title. "
)

REQUEST_APPROVAL = (
    _ABOUT + "This asks for one: it posts a card to the approvers and waits up to "
    "wait_seconds for their decision. If nobody has decided by then, the result is "
    '{"status": "pending", "approval_id": ...}: the request stays open; call get_approval '
    "with that approval_id to keep waiting (asking again would open a second request). "
    "Errors (an action the policy does not know or this service may not ask for, arguments "
    "the action's schema refuses) come back as a tool error and nothing is recorded."
)
GET_APPROVAL = (
    _ABOUT + "This tells where an approval this service asked for stands, waiting up to "
    "wait_seconds for a decision when it is still pending (0: answer at once)."
)
LIST_MY_PENDING = (
    "The approvals this service asked for that nobody has decided yet, oldest first, each with "
    "its approval_id, action, args and card_url. Use get_approval to wait for one."
)

_Wait = Annotated[
    float,
    Field(
        ge=0,
        le=MAX_WAIT,
        description=f"Seconds to wait for the decision (0 to {MAX_WAIT:g}; default "
        f"{DEFAULT_WAIT:g}). Past it, the result is pending and the request stays open.",
    ),
]


def _refused(error: ApprovalError) -> ToolError:
    """A governance refusal, as the tool error the model reads (nothing was recorded)."""
    return ToolError(error.message)


def build_mcp_server(signoff: Signoff, service_of: ServiceOf) -> MCPServer:
    """The MCP server of `signoff`, its tools asking as the service `service_of` finds."""
    server: MCPServer = MCPServer(
        name="signoff",
        title="signoff: human approval for agent actions",
        instructions="Ask a person before an irreversible action (a refund, a deletion, an "
        "email to a customer): call request_approval with the action and its arguments, run "
        "the action only if approved, with the decision's args.",
        log_level="WARNING",
    )

    async def settle(ctx: Context[Any, Any], approval: ExternalApproval, wait: float) -> Any:
        """Long-poll `approval` until it is settled or `wait` seconds have passed, with a
        progress notification after each poll; its wire shape."""
        service = approval.service
        started = time.monotonic()
        while approval.status == "pending":
            left = wait - (time.monotonic() - started)
            if left <= 0:
                break
            poll, polled = min(left, POLL), time.monotonic()
            try:
                approval = await signoff.external.get(
                    approval.approval_id, service=service, wait=poll
                )
            except ApprovalError as e:
                raise _refused(e) from e
            if approval.status == "pending" and time.monotonic() - polled < poll / 2:
                break  # answered early and still pending: the process is stopping
            if approval.status == "pending":
                waited = min(wait, time.monotonic() - started)
                await ctx.report_progress(
                    waited,
                    wait,
                    f"approval {approval.approval_id} ({approval.action}) is waiting for a "
                    f"decision: {waited:.0f} of {wait:g} s",
                )
        result: dict[str, Any] = approval.to_json()
        if approval.status == "pending":
            result["next"] = (
                f"nobody has decided yet; call get_approval with approval_id "
                f"{approval.approval_id!r} to keep waiting"
            )
        return result

    @server.tool(
        description=REQUEST_APPROVAL,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False
        ),
    )
    async def request_approval(
        action: Annotated[
            str, Field(description="The policy's name of the action, e.g. send_refund.")
        ],
        args: Annotated[
            dict[str, Any],
            Field(description="The action's arguments, exactly as it would run with them."),
        ],
        ctx: Context[Any, Any],
        title: Annotated[
            str | None,
            Field(
                description="A note for the approvers, shown labelled as yours (the card's "
                "header is the policy's title, filled with the arguments); {field} "
                "placeholders must name arguments."
            ),
        ] = None,
        wait_seconds: _Wait = DEFAULT_WAIT,
    ) -> dict[str, Any]:
        service = service_of(ctx)
        try:
            approval = await signoff.external.request(
                service=service, action=action, args=args, requester=service, title=title
            )
        except ApprovalError as e:
            raise _refused(e) from e
        result: dict[str, Any] = await settle(ctx, approval, wait_seconds)
        return result

    @server.tool(description=GET_APPROVAL, annotations=ToolAnnotations(read_only_hint=True))
    async def get_approval(
        approval_id: Annotated[str, Field(description="As request_approval returned it.")],
        ctx: Context[Any, Any],
        wait_seconds: _Wait = 0.0,
    ) -> dict[str, Any]:
        service = service_of(ctx)
        try:
            approval = await signoff.external.get(approval_id, service=service)
        except ApprovalError as e:
            raise _refused(e) from e
        result: dict[str, Any] = await settle(ctx, approval, wait_seconds)
        return result

    @server.tool(description=LIST_MY_PENDING, annotations=ToolAnnotations(read_only_hint=True))
    async def list_my_pending(ctx: Context[Any, Any]) -> dict[str, Any]:
        service = service_of(ctx)
        try:
            approvals = await signoff.external.pending(service=service)
        except ApprovalError as e:
            raise _refused(e) from e
        return {"approvals": [a.to_json() for a in approvals]}

    return server


def local_service(signoff: Signoff, name: str) -> ServiceOf:
    """The identity of `signoff mcp`: the service `name`, which the policy must have."""
    services = signoff.policy.services
    if name not in services:
        known = ", ".join(sorted(services)) or "none"
        raise ApprovalError(
            f"the policy has no [services.{name}] section, so `signoff mcp --service {name}` "
            f"may ask for nothing (deny by default); its services: {known}. Add "
            f'[services.{name}] with actions = ["..."] (and token_env) to the policy, or '
            "pass --service with one of its services"
        )
    return lambda ctx: name


async def serve_stdio(signoff: Signoff, service: str) -> None:
    """`signoff mcp`: the MCP server on standard input and output until the client hangs up."""
    server = build_mcp_server(signoff, local_service(signoff, service))
    await server.run_stdio_async()
