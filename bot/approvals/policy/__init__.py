"""Who may approve what: the policy file, checked at start-up, and the pure decisions made from it.

signoff denies by default. An action the policy does not name is refused, any error while
evaluating policy is a refusal, and an unknown key in the file is an error rather than a
setting quietly ignored, because a typo (`aprovers`, `requierd`) must never weaken policy.

This module does no I/O besides reading the policy file in `load_policy`: no database, no Slack.
Group membership is asked of a `GroupResolver` (a static map here and in the CLI and tests,
Slack user groups in the Slack app).

The file (`signoff.toml`, or the path in `SIGNOFF_POLICY`), complete::

    [groups]                          # static groups: used by the CLI, tests and the demo.
    finance = ["U_ALICE", "U_BOB"]    # In Slack, a name not listed here is resolved as a
    finance-leads = ["U_ERIN"]        # Slack user group (by its handle).

    [workflows.refund]                # who may start the workflow from Slack or the API
    starters = ["@support", "U_CAROL"]    # (the CLI is trusted); default: nobody
    # path = "mypkg.flows:build"      # a workflow of your own, by dotted path (module:attribute)

    [actions.send_refund]             # one table per action a workflow may ask approval for
    title = "Send a refund"           # shown on the card; default: the action name
    tier = "high"                     # low | medium | high | critical; default high
    approvers = ["@finance", "U_DAVE"]    # required: "@name" is a group, anything else a user id
    required = 1                      # M of N distinct people; default 1
    allow_self_approval = false       # may the requester approve their own request; default false
    editable = ["amount", "reason"]   # fields an approver may change when approving; default none
    secret = ["card_number"]          # never shown in clear on cards, logs or the audit log
    remind_after = "4h"               # durations: "30s", "15m", "4h", "2d", "1w", "1h30m"
    escalate_after = "1d"             # then escalate_to join the approvers
    escalate_to = ["@finance-leads"]  # (needs escalate_after)
    expire_after = "3d"               # remind_after < escalate_after < expire_after
    on_expiry = "reject"              # "reject" (default), or "approve" for tiers low and medium
    notify = "channel"                # ping approvers on the channel card, "dm" each, or "both"
    grants = { most = 5, longest = "4h", key = ["customer_id"], vary = ["reason"] }
                                      # "Allow more like this" on the card: up to `most` more
                                      # requests for up to `longest` (at most 100 and 1w); never
                                      # for critical actions nor with required > 1
    delegation = true                 # an away approver's delegate may decide for them; default
                                      # false; "critical": even a critical action (never true)

    [[actions.send_refund.auto_approve]]  # routine cases decided by a rule; never for critical
    name = "small refunds"            # required; the audit log says which rule decided
    when = { amount = { le = 50 } }   # every condition must hold; ops: eq ne lt le gt ge in
    budget = { count = 5, total = 100, of = "amount", per = ["customer_id"], window = "1d" }
                                      # optional: past any cap in the window a person is asked
                                      # (per: arguments, or "requester"; count, total or both)

    [away]                            # who is away besides `/agent away` and do-not-disturb
    statuses = [":palm_tree:", "vacation"]  # a Slack status emoji, or words in its text

    [agents]                          # AI agents' tool calls (`bot.approvals.approval_gate`)
    free_tools = ["lookup_order"]     # tools that run without approval (read-only ones)

    [services.billing]                # a program asking over the approvals API (HTTP, MCP)
    token_env = "SIGNOFF_SERVICE_BILLING_TOKEN"   # the variable holding its bearer token
    actions = ["send_refund"]         # what it may ask for; default nothing
    webhook_secret_env = "BILLING_WEBHOOK_SECRET" # signs its webhooks; default: its token
    channel = "C0123ABCD"             # where its cards go; default the bot's channel
    callback_urls = ["https://hooks.billing.example", "https://*.billing.example:8443"]
                                      # where its callback_url may point (scheme, host, port;
                                      # "*." any subdomain, ":*" any port); default nowhere
    callback_private = false          # may they be private, loopback or link-local addresses
    may_act_for = ["@support"]        # whom it may name as requester; default nobody
    owners = ["U_DAVE"]               # who hold its token: they may not approve what it asks
    check_url = "https://hooks.billing.example/facts"   # answers the facts its requests rest
                                      # on (JSON); read when asked and again once approved;
                                      # held to callback_urls; default no check

A service's token lets it ask for approvals of the actions it lists and read them, never decide
one. A token variable that is not set when signoff starts is warned about, and that service
cannot authenticate until it is. A request names its `requester`: that person is the requester
only when `may_act_for` lists them (a user id, or through an `@group`); anyone else named makes
the request the service's own. The card says "@Carol asks via billing" (or that the service
asks for itself), and neither the requester nor an owner may approve it.

Away: a person is away when they said so (`/agent away [until DATE] [delegate @person]`, until
`/agent back` or Home's "I'm back"), when Slack's do-not-disturb is on for them (`dnd.info`,
kept fresh by `dnd_updated_user`), or when their Slack status is one `[away] statuses` names
(an emoji entry is the status emoji, other text is found in the status text, ignoring case;
until the status expires). Slack's idle presence is not read: "away" there is too common to
mean "on vacation". When every person who could decide a request is away, its escalation
(`escalate_to`) happens at once, not after `escalate_after`, and the card says who is away and
until when. Where an action says `delegation = true`, the delegate an away approver named may
decide for them, recorded as both ("Bob for Alice") on the decision, the audit log and the
card; never the requester, and for a `critical` action only with `delegation = "critical"`.

An agent's tool call is gated by its tool's name: a tool named like an action asks for that
action's approval with the call's arguments; a tool in `free_tools` runs without asking; any
other tool call is denied (the model is told so). A name cannot be both free and an action.

Conditions compare the request's top-level arguments: `{ le = 50 }` (lt, le, gt, ge take a
number), `{ eq = "EUR" }` or the shorthand `currency = "EUR"`, `{ ne = ... }`, and
`{ in = ["EUR", "USD"] }`. A missing argument, or one of another type (a string where a number
is expected; true is not 1), does not match. `when = {}` matches every request of the action.

An action's arguments are declared beside the action, in `[actions.NAME.args]` (the loader
warns, once, naming each action that has none): the policy is what decides on them, so it says
what they may be. For the action above::

    [actions.send_refund.args]
    customer_id = { type = "string", required = true, pattern = "[A-Za-z0-9_-]{1,64}" }
    amount = { type = "number", required = true, exclusive_minimum = 0, maximum = 10000, format = "money" }
    reason = { type = "string", max_length = 500 }
    card_number = { type = "string", pattern = "[0-9]{12,19}" }

Field types are `string`, `number`, `integer`, `boolean` and `any`; the checks `required`, `minimum`, `maximum`,
`exclusive_minimum`, `exclusive_maximum` (numbers), `min_length`, `max_length`, `pattern` (a
whole-value regular expression; strings) and `enum`. A field not declared is refused. A number
field may say how people see it: `format = "money"` shows 42.5 as 42.50 (or a Python format spec,
like `".1f"` or `",.2f"`) on the card, its edit lines ("amount: 42.50 → 40.00"), the Full payload
modal, in titles (a `{amount}` placeholder), Home, `/agent status` and `signoff show`; the value
checked, compared by rules and run is the number itself. The
schema is checked when a request is asked for, before any auto-approval rule (a request that
does not fit is denied: a rule never approves a value its schema refuses), and on every edit
(an approver's form shows the error on the field; form text is parsed by the field's type, in
ASCII digits). A workflow's inputs are declared beside the workflow, in code (its `INPUTS`
schema), and checked at start. See `bot.approvals.policy.schema`.

Grants: an approver may approve a request and allow up to N more like it for T (the card's
"Allow more like this", N and T within `grants`). A later request is approved by the grant,
nobody asked, when it has the same requester (and service), the same `key` arguments, each
number from 0 to the approved value, every other argument equal except those `vary` names, and
no argument the approved call lacked or lacking one it had; anything else is asked as usual.
A grant rests on the action's policy as it was (its grants, approvers, tier, quorum): once that
changes, the grant approves nothing more. Its grantor or any approver of the action may revoke
it on App Home. Every grant, use and revocation is on the audit log
(`bot.approvals.grants`).

Edits and quorum: every person counted toward a decision was shown the values that run. An
approver's edit makes a new revision of the values, shown on the card, the payload modal and
Home; the editor's approval is for it. An edit is refused once anyone has approved, and a vote
for an earlier revision (a stale card or modal) is refused, "the request changed", and never
counted. The audit log's `edited` entry records the change and each `vote` entry the revision
it was for.

Errors name the file, line and key, e.g. with `tier` misspelt in the example above::

    signoff.toml:11: actions.send_refund.teir: unknown key; did you mean 'tier'?
"""

from ._callbacks import CallbackOrigin, address_kind, private_hint
from ._edits import validate_edits
from ._fingerprint import canonical_json, fingerprint, redact
from .decide import (
    RequestVerdict,
    check_service,
    check_voter,
    evaluate_request,
    may_start,
    reach_problem,
)
from .durations import format_duration, parse_duration
from .groups import GroupResolver, StaticGroups, resolve_members, unreachable
from .load import MINIMAL_POLICY, load_policy, parse_policy
from .model import (
    RISK_TIERS,
    ActionPolicy,
    AutoApproveRule,
    AutoBudget,
    Condition,
    ExpiryOutcome,
    Policy,
    RiskTier,
    ServicePolicy,
    WorkflowPolicy,
)
from .schema import Field, Schema, SchemaError, display

__all__ = [
    "MINIMAL_POLICY",
    "RISK_TIERS",
    "ActionPolicy",
    "AutoApproveRule",
    "AutoBudget",
    "CallbackOrigin",
    "Condition",
    "ExpiryOutcome",
    "Field",
    "GroupResolver",
    "Policy",
    "RequestVerdict",
    "RiskTier",
    "Schema",
    "SchemaError",
    "ServicePolicy",
    "StaticGroups",
    "WorkflowPolicy",
    "address_kind",
    "canonical_json",
    "check_service",
    "check_voter",
    "display",
    "evaluate_request",
    "fingerprint",
    "format_duration",
    "load_policy",
    "may_start",
    "parse_duration",
    "parse_policy",
    "private_hint",
    "reach_problem",
    "redact",
    "resolve_members",
    "unreachable",
    "validate_edits",
]
