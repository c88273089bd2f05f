"""The policy file and the pure decisions made from it: each table row is one rule of the file."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.approvals import policy as policy_module
from bot.approvals.errors import (
    InvalidEditError,
    NotAuthorizedError,
    PolicyError,
    SelfApprovalError,
)
from bot.approvals.policy import (
    ActionPolicy,
    AutoApproveRule,
    AutoBudget,
    Condition,
    Policy,
    RequestVerdict,
    StaticGroups,
    WorkflowPolicy,
    canonical_json,
    check_voter,
    evaluate_request,
    fingerprint,
    format_duration,
    load_policy,
    may_start,
    parse_duration,
    parse_policy,
    redact,
    resolve_members,
    validate_edits,
)
from bot.approvals.policy.grants import GrantLimits


def toml(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def policy_error(text: str) -> str:
    with pytest.raises(PolicyError) as info:
        parse_policy(toml(text))
    return str(info.value)


# --- the documented example ----------------------------------------------------------------


def docstring_example() -> str:
    doc = policy_module.__doc__ or ""
    lines = []
    for line in doc.split("complete::\n\n", 1)[1].splitlines():
        if line and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


def test_the_documented_example_is_valid() -> None:
    p = parse_policy(docstring_example())
    rule = p.actions["send_refund"]
    assert rule == ActionPolicy(
        action="send_refund",
        title="Send a refund",
        tier="high",
        approvers=("@finance", "U_DAVE"),
        required=1,
        allow_self_approval=False,
        editable=("amount", "reason"),
        secret=("card_number",),
        remind_after=dt.timedelta(hours=4),
        escalate_after=dt.timedelta(days=1),
        escalate_to=("@finance-leads",),
        expire_after=dt.timedelta(days=3),
        on_expiry="reject",
        auto_approve=(
            AutoApproveRule(
                "small refunds",
                (Condition("amount", "le", 50),),
                AutoBudget(dt.timedelta(days=1), 5, 100.0, "amount", ("customer_id",)),
            ),
        ),
        grants=GrantLimits(5, dt.timedelta(hours=4), ("customer_id",), ("reason",)),
        delegation="allowed",
    )
    assert p.away_statuses == (":palm_tree:", "vacation")
    assert p.groups == {"finance": ("U_ALICE", "U_BOB"), "finance-leads": ("U_ERIN",)}
    assert p.workflows == {"refund": WorkflowPolicy("refund", ("@support", "U_CAROL"), None)}
    assert p.external_groups == frozenset({"support"})
    assert p.source == "signoff.toml"


def test_the_documented_error_is_the_real_one() -> None:
    doc = policy_module.__doc__ or ""
    documented = doc.split("misspelt in the example above::\n\n", 1)[1].strip()
    assert policy_error(docstring_example().replace("tier =", "teir =")) == documented


def test_empty_file_and_empty_policy_deny_everything() -> None:
    assert parse_policy("") == Policy(source="signoff.toml")
    for p in (parse_policy(""), Policy.empty()):
        assert p.actions == {} and p.workflows == {} and p.groups == {}
        assert evaluate_request(p, "send_refund", {}).outcome == "deny"


# --- good snippets -------------------------------------------------------------------------

MINIMAL = '[actions.a]\napprovers = ["U1"]\n'

GOOD: list[tuple[str, str, Any]] = [
    ("defaults", MINIMAL, ActionPolicy("a", "a", "high", ("U1",))),
    ("title stripped", MINIMAL + 'title = " Delete a row "\n', "Delete a row"),
    ("duplicates dropped", '[actions.a]\napprovers = ["U1", "U1", "@g", "@g"]\n', ("U1", "@g")),
    (
        "required within static groups",
        toml("""
        [groups]
        g = ["U1", "U2"]
        [actions.a]
        approvers = ["@g", "U3"]
        required = 3
        """),
        3,
    ),
    (
        "required unbounded with a Slack group",
        toml("""
        [actions.a]
        approvers = ["@slack-group"]
        required = 5
        """),
        5,
    ),
    (
        "on_expiry approve for medium",
        toml("""
        [actions.a]
        tier = "medium"
        approvers = ["U1"]
        expire_after = "2d"
        on_expiry = "approve"
        """),
        "approve",
    ),
    (
        "durations combined",
        MINIMAL + 'remind_after = "1h30m"\nexpire_after = "1w"\n',
        (dt.timedelta(minutes=90), dt.timedelta(weeks=1)),
    ),
    ("dotted keys", 'actions.a.approvers = ["U1"]\nactions.a.tier = "low"\n', "low"),
    (
        "inline action table",
        '[actions]\na = { approvers = ["U1"], tier = "critical" }\n',
        "critical",
    ),
    (
        "scalar shorthand and in",
        toml("""
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { currency = "EUR", country = { in = ["FR", "DE"] }, n = { gt = 1, lt = 5.5 } }
        """),
        (
            Condition("currency", "eq", "EUR"),
            Condition("country", "in", ("FR", "DE")),
            Condition("n", "gt", 1),
            Condition("n", "lt", 5.5),
        ),
    ),
    (
        "huge integers",
        MINIMAL + f"[[actions.a.auto_approve]]\nname = 'r'\nwhen = {{ x = {{ le = {10**30} }} }}\n",
        (Condition("x", "le", 10**30),),
    ),
    ("empty when matches all", MINIMAL + '[[actions.a.auto_approve]]\nname = "a"\nwhen = {}\n', ()),
    ("workflow path", '[workflows.w]\npath = "my_pkg.flows:build"\n', "my_pkg.flows:build"),
]


def _pick(case: str, p: Policy) -> Any:
    a = p.actions.get("a")
    match case:
        case "defaults":
            return a
        case "title stripped":
            return a.title
        case "duplicates dropped":
            return a.approvers
        case "required within static groups" | "required unbounded with a Slack group":
            return a.required
        case "on_expiry approve for medium":
            return a.on_expiry
        case "durations combined":
            return (a.remind_after, a.expire_after)
        case "dotted keys" | "inline action table":
            return a.tier
        case "scalar shorthand and in":
            return a.auto_approve[0].conditions
        case "empty when matches all" | "huge integers":
            return a.auto_approve[0].conditions
        case "workflow path":
            return p.workflows["w"].path
    raise AssertionError(case)


@pytest.mark.parametrize(("case", "text", "expected"), GOOD, ids=[g[0] for g in GOOD])
def test_good_policies(case: str, text: str, expected: Any) -> None:
    assert _pick(case, parse_policy(text)) == expected


# --- bad snippets: the exact message, with file, line and key ---------------------------------

BAD: list[tuple[str, str]] = [
    # delegation and [away]
    (
        """
        [actions.send_refund]
        approvers = ["U1"]
        delegation = "yes"
        """,
        (
            "signoff.toml:3: actions.send_refund.delegation: must be true (a delegate may "
            'decide, except for critical actions), false, or "critical" (a delegate may decide '
            "even a critical action)"
        ),
    ),
    (
        """
        [away]
        statuses = ":palm_tree:"
        """,
        (
            "signoff.toml:2: away.statuses: must be a list of statuses, an emoji or words, "
            'like [":palm_tree:", "vacation"]'
        ),
    ),
    (
        """
        [away]
        status = [":palm_tree:"]
        """,
        "signoff.toml:2: away.status: unknown key; did you mean 'statuses'?",
    ),
    # tier
    (
        """
        [actions.send_refund]
        approvers = ["U1"]
        tier = "hgih"
        """,
        (
            "signoff.toml:3: actions.send_refund.tier: must be one of low, medium, high, critical, "
            "got 'hgih'"
        ),
    ),
    (
        """
        [actions.a]
        tier = 3
        approvers = ["U1"]
        """,
        "signoff.toml:2: actions.a.tier: must be one of low, medium, high, critical, got integer 3",
    ),
    # unknown keys, with and without a suggestion
    (
        """
        [actions.a]
        approvers = ["U1"]
        requierd = 2
        """,
        "signoff.toml:3: actions.a.requierd: unknown key; did you mean 'required'?",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        colour = "red"
        """,
        (
            "signoff.toml:3: actions.a.colour: unknown key; allowed: title, tier, approvers, "
            "required, allow_self_approval, editable, secret, remind_after, escalate_after, "
            "escalate_to, expire_after, on_expiry, auto_approve, args, notify, after, "
            "grants, delegation"
        ),
    ),
    (
        """
        [action.a]
        approvers = ["U1"]
        """,
        "signoff.toml:1: action: unknown key; did you mean 'actions'?",
    ),
    (
        """
        [workflows.w]
        starter = ["U1"]
        """,
        "signoff.toml:2: workflows.w.starter: unknown key; did you mean 'starters'?",
    ),
    (
        'actions.a.approvers = ["U1"]\nactions.a.aprovers = ["U2"]\n',
        "signoff.toml:2: actions.a.aprovers: unknown key; did you mean 'approvers'?",
    ),
    # approvers
    (
        """
        [actions.a]
        tier = "low"
        """,
        'signoff.toml:1: actions.a: needs approvers = [...] (user ids or "@group" names)',
    ),
    (
        """
        [actions.a]
        approvers = []
        """,
        (
            "signoff.toml:2: actions.a.approvers: must name at least one approver (a user id or "
            '"@group")'
        ),
    ),
    (
        """
        [actions.a]
        approvers = "U1"
        """,
        (
            'signoff.toml:2: actions.a.approvers: must be an array of user ids and "@group" names, '
            "got 'U1'"
        ),
    ),
    (
        """
        [actions.a]
        approvers = [
          "U1",
          "U 2",
        ]
        """,
        (
            'signoff.toml:2: actions.a.approvers: approvers must be user ids or "@group" names '
            "without spaces, got 'U 2'"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["@"]
        """,
        (
            'signoff.toml:2: actions.a.approvers: approvers must be user ids or "@group" names '
            "without spaces, got '@'"
        ),
    ),
    # required
    (
        """
        [actions.a]
        approvers = ["U1"]
        required = 0
        """,
        "signoff.toml:3: actions.a.required: must be at least 1, got 0",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        required = true
        """,
        "signoff.toml:3: actions.a.required: must be a whole number, got boolean true",
    ),
    (
        """
        [actions.a]
        approvers = ["U1", "U2"]
        required = 3
        """,
        (
            "signoff.toml:3: actions.a.required: needs 3 distinct approvers but the approvers hold "
            "only 2 (U1, U2)"
        ),
    ),
    (
        """
        [groups]
        g = ["U1", "U2"]

        [actions.a]
        approvers = ["@g", "U2"]
        required = 3
        """,
        (
            "signoff.toml:6: actions.a.required: needs 3 distinct approvers but the approvers hold "
            "only 2 (U1, U2)"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        allow_self_approval = "no"
        """,
        "signoff.toml:3: actions.a.allow_self_approval: must be true or false, got 'no'",
    ),
    # editable and secret
    (
        """
        [actions.a]
        approvers = ["U1"]
        editable = ["amount", "card"]
        secret = ["card"]
        """,
        (
            "signoff.toml:4: actions.a.secret: 'card' is also editable; a secret field cannot be "
            "edited (the form would show it)"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        editable = ["amount", 3]
        """,
        "signoff.toml:3: actions.a.editable: field names must be non-empty strings, got integer 3",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        secret = "card"
        """,
        "signoff.toml:3: actions.a.secret: must be an array of field names, got 'card'",
    ),
    # durations and their order
    (
        """
        [actions.a]
        approvers = ["U1"]
        remind_after = "4 hours"
        """,
        (
            'signoff.toml:3: actions.a.remind_after: durations are written like "30s", "15m", "4h", '
            '"2d", "1w" or "1h30m", got \'4 hours\''
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        expire_after = 3600
        """,
        (
            'signoff.toml:3: actions.a.expire_after: must be a duration string like "4h" or "1h30m", '
            "got integer 3600"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        expire_after = "0m"
        """,
        "signoff.toml:3: actions.a.expire_after: must be longer than zero, got '0m'",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        remind_after = "1d"
        escalate_after = "4h"
        """,
        "signoff.toml:4: actions.a.escalate_after: must be later than remind_after (1d), got 4h",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        remind_after = "1h"
        escalate_after = "1d"
        expire_after = "12h"
        """,
        "signoff.toml:5: actions.a.expire_after: must be later than escalate_after (1d), got 12h",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        remind_after = "2d"
        expire_after = "2d"
        """,
        "signoff.toml:4: actions.a.expire_after: must be later than remind_after (2d), got 2d",
    ),
    # escalation
    (
        """
        [actions.a]
        approvers = ["U1"]
        escalate_to = ["@leads"]
        """,
        "signoff.toml:3: actions.a.escalate_to: needs escalate_after (when to escalate)",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        escalate_after = "1h"
        escalate_to = []
        """,
        'signoff.toml:4: actions.a.escalate_to: must name at least one user id or "@group"',
    ),
    # expiry
    (
        """
        [actions.a]
        approvers = ["U1"]
        expire_after = "1d"
        on_expiry = "approve"
        """,
        (
            'signoff.toml:4: actions.a.on_expiry: "approve" is only allowed for tiers low and medium; '
            "this action is high"
        ),
    ),
    (
        """
        [actions.a]
        tier = "low"
        approvers = ["U1"]
        expire_after = "1d"
        on_expiry = "accept"
        """,
        "signoff.toml:5: actions.a.on_expiry: must be one of reject, approve, got 'accept'",
    ),
    (
        """
        [actions.a]
        tier = "low"
        approvers = ["U1"]
        on_expiry = "approve"
        """,
        "signoff.toml:4: actions.a.on_expiry: has no effect without expire_after (when to expire)",
    ),
    # auto-approval
    (
        """
        [actions.a]
        tier = "critical"
        approvers = ["U1"]

        [[actions.a.auto_approve]]
        name = "never"
        when = { amount = { le = 1 } }
        """,
        (
            "signoff.toml:5: actions.a.auto_approve: not allowed for critical actions: a person must "
            "decide every request"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]

        [[actions.a.auto_approve]]
        name = "one"
        when = {}

        [[actions.a.auto_approve]]
        name = "two"
        when = { amount = { lte = 5 } }
        """,
        (
            "signoff.toml:10: actions.a.auto_approve[1].when.amount.lte: unknown operator; did you "
            "mean 'le'?"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        when = { amount = { le = 5 } }
        """,
        (
            'signoff.toml:3: actions.a.auto_approve[0]: needs name = "..." (the audit log names the '
            "rule that decided)"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "everything"
        """,
        (
            "signoff.toml:3: actions.a.auto_approve[0]: needs when = { ... } (use when = {} to match "
            "every request)"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { amount = { le = "50" } }
        """,
        "signoff.toml:5: actions.a.auto_approve[0].when.amount.le: must be a number, got '50'",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { amount = { le = nan } }
        """,
        "signoff.toml:5: actions.a.auto_approve[0].when.amount.le: must be a number, got float nan",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { amount = { ge = true } }
        """,
        (
            "signoff.toml:5: actions.a.auto_approve[0].when.amount.ge: must be a number, "
            "got boolean true"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { country = ["FR", "DE"] }
        """,
        (
            "signoff.toml:5: actions.a.auto_approve[0].when.country: to match one of several values "
            "write { in = [...] }"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = { country = { in = [] } }
        """,
        (
            "signoff.toml:5: actions.a.auto_approve[0].when.country.in: must be a non-empty array, "
            "got an array"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        [actions.a.auto_approve.when]
        day = { eq = 2024-01-01 }
        """,
        (
            "signoff.toml:6: actions.a.auto_approve[0].when.day.eq: must be a string, number or "
            "boolean, got a date/time"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        [[actions.a.auto_approve]]
        name = "r"
        when = {}
        [[actions.a.auto_approve]]
        name = "r"
        when = {}
        """,
        "signoff.toml:7: actions.a.auto_approve[1].name: another rule of this action is named 'r'",
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        auto_approve = { name = "r" }
        """,
        (
            "signoff.toml:3: actions.a.auto_approve: must be an array of tables "
            "([[actions.a.auto_approve]]), got a table"
        ),
    ),
    # names and shapes
    (
        """
        [actions."send refund"]
        approvers = ["U1"]
        """,
        (
            "signoff.toml:1: actions.\"send refund\": action names are 1 to 100 letters, digits, '_', "
            "'-' or '.', not starting with '-' or '.'"
        ),
    ),
    (
        'actions = ["a"]\n',
        "signoff.toml:1: actions: must be a table ([actions.NAME]), got an array",
    ),
    (
        'actions.a = "U1"\n',
        "signoff.toml:1: actions.a: must be a table ([actions.a]), got 'U1'",
    ),
    (
        """
        [groups]
        finance = ["U1", "@leads"]
        """,
        (
            "signoff.toml:2: groups.finance: members must be user ids (groups cannot contain groups), "
            "got '@leads'"
        ),
    ),
    (
        """
        [groups]
        "@finance" = ["U1"]
        """,
        'signoff.toml:2: groups."@finance": group names are written without "@" and without spaces',
    ),
    (
        """
        [workflows.w]
        path = "mypkg.flows.build"
        """,
        (
            'signoff.toml:2: workflows.w.path: must be "module:attribute", like "mypkg.flows:build", '
            "got 'mypkg.flows.build'"
        ),
    ),
    (
        """
        [actions.a]
        approvers = ["U1"]
        title = ""
        """,
        "signoff.toml:3: actions.a.title: must be a non-empty string, got ''",
    ),
    # the locator: multi-line strings and arrays do not confuse it
    (
        '''
        [actions.a]
        title = """
        tier = "fake"
        """
        approvers = [
          "U1", # tier = "fake"
        ]
        tier = "nope"
        ''',
        "signoff.toml:8: actions.a.tier: must be one of low, medium, high, critical, got 'nope'",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), BAD, ids=[f"{i}-{m.split(': ', 2)[1]}" for i, (_, m) in enumerate(BAD)]
)
def test_bad_policies(text: str, message: str) -> None:
    assert policy_error(text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[actions.a]\napprovers = ["U1"\n', "signoff.toml:3: invalid TOML: Unclosed array"),
        ("a = 1\na = 2\n", "signoff.toml:2: invalid TOML: Cannot overwrite a value (column 6)"),
        ("a = 1\nb = 0\na = 2", "signoff.toml:3: invalid TOML: Cannot overwrite a value"),
        (
            "[actions.a]\n[actions.a]\n",
            "signoff.toml:2: invalid TOML: Cannot declare ('actions', 'a') twice (column 11)",
        ),
        ('x = "abc', "signoff.toml:1: invalid TOML: Unterminated string"),
        ("x = " + "[" * 2000 + "]" * 2000, "signoff.toml: invalid TOML: nested too deeply"),
    ],
)
def test_syntax_errors_keep_their_position(text: str, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(text)
    assert str(info.value) == message
    assert info.value.key == ""


def test_error_attributes() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy('[actions.a]\napprovers = ["U1"]\ntier = "x"\n', source="conf/policy.toml")
    error = info.value
    assert (error.source, error.line, error.key) == ("conf/policy.toml", 3, "actions.a.tier")


# --- load_policy ---------------------------------------------------------------------------


def test_load_policy_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "signoff.toml"
    path.write_bytes(b"\xef\xbb\xbf" + MINIMAL.encode())
    p = load_policy(path)
    assert p.source == str(path) and list(p.actions) == ["a"]


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy(tmp_path / "signoff.toml")
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'signoff.toml'}: no policy file here; signoff denies")
    example = message.split("for example:\n\n", 1)[1]
    assert list(parse_policy(example).actions) == ["send_refund"]


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy file"):
        load_policy(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"[actions.a]\n# caf\xe9\n")
    with pytest.raises(PolicyError) as info:
        load_policy(bad)
    assert str(info.value) == f"{bad}:2: is not UTF-8 text (TOML must be UTF-8)"


# --- ActionPolicy built in code is guarded too ------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, 'actions.a.approvers: must name at least one approver (a user id or "@group")'),
        (
            {"approvers": ("U1",), "tier": "hgih"},
            "actions.a.tier: must be one of low, medium, high, critical, got 'hgih'",
        ),
        ({"approvers": ("U1",), "required": 0}, "actions.a.required: must be at least 1, got 0"),
        (
            {"approvers": ("U1",), "on_expiry": "approve"},
            (
                'actions.a.on_expiry: "approve" is only allowed for tiers low and medium; '
                "this action is high"
            ),
        ),
        (
            {"approvers": ("U1",), "tier": "critical", "auto_approve": (AutoApproveRule("r"),)},
            (
                "actions.a.auto_approve: not allowed for critical actions: a person must decide every "
                "request"
            ),
        ),
        (
            {"approvers": ("U1",), "editable": ("x",), "secret": ("x",)},
            (
                "actions.a.secret: 'x' is also editable; a secret field cannot be edited (the form would "
                "show it)"
            ),
        ),
    ],
)
def test_action_policy_in_code_is_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError) as info:
        ActionPolicy("a", **kwargs)
    assert str(info.value) == message


# --- evaluate_request ----------------------------------------------------------------------

EVAL_POLICY = parse_policy(
    toml("""
    [actions.send_refund]
    title = "Send a refund"
    approvers = ["@finance", "U_DAVE"]
    required = 2

    [[actions.send_refund.auto_approve]]
    name = "small refunds"
    when = { amount = { le = 50 }, currency = { in = ["EUR", "USD"] } }

    [[actions.send_refund.auto_approve]]
    name = "test accounts"
    when = { customer_id = { eq = "test" } }

    [actions.delete_row]
    tier = "critical"
    approvers = ["U_ERIN"]

    [actions.ping]
    tier = "low"
    approvers = ["U_ERIN"]

    [[actions.ping.auto_approve]]
    name = "always"
    when = {}
    """)
)

ASK = "Send a refund: needs 2 approvals from someone in @finance or U_DAVE"
FAILED = "policy evaluation failed, so the request is denied: "
P = EVAL_POLICY


def unlisted(action: str, where: str) -> str:
    return (
        f"action {action!r} is not in the policy{where}; signoff denies actions the policy "
        f"does not name. Add [actions.{action}] to allow it to be asked for."
    )


class Exploding(dict[str, Any]):
    def get(self, key: Any, default: Any = None) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize(
    ("policy", "action", "args", "outcome", "reason", "auto_rule"),
    [
        (
            P,
            "send_refund",
            {"amount": 20, "currency": "EUR"},
            "auto_approve",
            "approved by the rule 'small refunds' of send_refund",
            "small refunds",
        ),
        (
            P,
            "send_refund",
            {"amount": Decimal("50.00"), "currency": "USD"},
            "auto_approve",
            "approved by the rule 'small refunds' of send_refund",
            "small refunds",
        ),
        (P, "send_refund", {"amount": 50.01, "currency": "EUR"}, "ask", ASK, None),
        (P, "send_refund", {"amount": 20, "currency": "GBP"}, "ask", ASK, None),
        (P, "send_refund", {"amount": "20", "currency": "EUR"}, "ask", ASK, None),
        (P, "send_refund", {"currency": "EUR"}, "ask", ASK, None),
        (
            P,
            "send_refund",
            {"amount": 999, "customer_id": "test"},
            "auto_approve",
            "approved by the rule 'test accounts' of send_refund",
            "test accounts",
        ),
        (P, "delete_row", {"t": "users"}, "ask", "delete_row: needs 1 approval from U_ERIN", None),
        (P, "ping", {}, "auto_approve", "approved by the rule 'always' of ping", "always"),
        (P, "drop_database", {}, "deny", unlisted("drop_database", " (signoff.toml)"), None),
        (Policy.empty(), "send_refund", {}, "deny", unlisted("send_refund", ""), None),
        (
            P,
            "send_refund",
            ["amount", 5],
            "deny",
            FAILED + "TypeError: the arguments must be a mapping, got list",
            None,
        ),
        (P, ["unhashable"], {}, "deny", FAILED + "TypeError: unhashable type: 'list'", None),
        (Policy(actions=Exploding()), "x", {}, "deny", FAILED + "RuntimeError: boom", None),
    ],
)
def test_evaluate_request(
    policy: Policy, action: Any, args: Any, outcome: str, reason: str, auto_rule: str | None
) -> None:
    verdict = evaluate_request(policy, action, args)
    assert (verdict.outcome, verdict.reason, verdict.auto_rule) == (outcome, reason, auto_rule)
    if outcome != "deny":
        assert verdict.rule is EVAL_POLICY.actions[action]


def test_critical_never_auto_approves_even_when_built_around_the_check() -> None:
    rule = ActionPolicy("x", approvers=("U1",), tier="low", auto_approve=(AutoApproveRule("all"),))
    object.__setattr__(rule, "tier", "critical")
    verdict = evaluate_request(Policy(actions={"x": rule}), "x", {})
    assert verdict == RequestVerdict("ask", "x: needs 1 approval from U1", rule, None)


# --- auto-approval conditions --------------------------------------------------------------


class Weird:
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no")

    __hash__ = None  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("condition", "args", "expected"),
    [
        (Condition("amount", "le", 50), {"amount": 50}, True),
        (Condition("amount", "le", 50), {"amount": 50.5}, False),
        (Condition("amount", "lt", 50), {"amount": Decimal("49.99")}, True),
        (Condition("amount", "le", 50.1), {"amount": Decimal("50.1")}, True),
        (Condition("amount", "eq", 50.1), {"amount": Decimal("50.1")}, True),
        (Condition("amount", "ge", 1), {"amount": "5"}, False),
        (Condition("amount", "ge", 1), {"amount": True}, False),
        (Condition("amount", "gt", 1), {"amount": float("nan")}, False),
        (Condition("amount", "ne", 1), {"amount": float("nan")}, False),
        (Condition("amount", "ne", 1), {"amount": Decimal("NaN")}, False),
        (Condition("amount", "ne", 1), {}, False),
        (Condition("amount", "ne", 1), {"amount": 2}, True),
        (Condition("amount", "ne", 1), {"amount": None}, False),
        (Condition("flag", "eq", True), {"flag": 1}, False),
        (Condition("flag", "eq", 1), {"flag": True}, False),
        (Condition("flag", "eq", True), {"flag": True}, True),
        (Condition("flag", "lt", True), {"flag": False}, False),
        (Condition("c", "in", ("EUR", "USD")), {"c": "USD"}, True),
        (Condition("c", "in", ("EUR", "USD")), {"c": "usd"}, False),
        (Condition("c", "in", (1, 2)), {"c": [1]}, False),
        (Condition("c", "eq", "x"), {"c": Weird()}, False),
        (Condition("c", "lt", "m"), {"c": "a"}, True),
        (Condition("n", "lt", 10**400), {"n": 5.0}, True),
        (Condition("n", "gt", 10**400), {"n": Decimal("1e500")}, True),
        (Condition("n", "eq", 0.1), {"n": Decimal("0.1")}, True),
    ],
)
def test_conditions(condition: Condition, args: dict[str, Any], expected: bool) -> None:
    assert condition.holds(args) is expected
    assert AutoApproveRule("r", (condition,)).matches(args) is expected


def test_rule_matches_never_raises_on_odd_args() -> None:
    rule = AutoApproveRule("r", (Condition("a", "eq", 1),))
    assert rule.matches(None) is False  # type: ignore[arg-type]
    assert rule.matches(Exploding(a=1)) is True  # `in` and [] work; only .get explodes
    assert AutoApproveRule("all").matches({}) is True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5) | st.decimals(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=80, deadline=None)
@given(args=st.dictionaries(st.sampled_from(["amount", "c", "x"]), json_values, max_size=3))
def test_matching_and_evaluation_never_raise(args: dict[str, Any]) -> None:
    verdict = evaluate_request(EVAL_POLICY, "send_refund", args)
    assert verdict.outcome in ("ask", "auto_approve")


# --- voters, starters and groups -----------------------------------------------------------

REFUND = ActionPolicy("send_refund", "Send a refund", approvers=("@finance", "U_DAVE"))
SELF_OK = ActionPolicy("ping", approvers=("U_DAVE",), allow_self_approval=True)
FINANCE = frozenset({"U_ALICE", "U_BOB", "U_DAVE"})
NOT_APPROVER = (
    "you (%s) are not an approver of Send a refund (send_refund); ask someone in @finance or U_DAVE"
)


@pytest.mark.parametrize(
    ("rule", "requester", "actor", "approvers", "error", "message"),
    [
        (REFUND, "U_CAROL", "U_ALICE", FINANCE, None, None),
        (
            REFUND,
            "U_ALICE",
            "U_ALICE",
            FINANCE,
            SelfApprovalError,
            (
                "you asked for this (Send a refund), and send_refund does not allow approving your own "
                "request; ask someone in @finance or U_DAVE"
            ),
        ),
        (
            REFUND,
            "U_DAVE",
            "U_DAVE",
            FINANCE,
            SelfApprovalError,
            (
                "you asked for this (Send a refund), and send_refund does not allow approving your own "
                "request; ask someone in @finance"
            ),
        ),
        (REFUND, "U_CAROL", "U_MALLORY", FINANCE, NotAuthorizedError, NOT_APPROVER % "U_MALLORY"),
        (REFUND, "U_CAROL", "U_ERIN", FINANCE, NotAuthorizedError, NOT_APPROVER % "U_ERIN"),
        (REFUND, "U_CAROL", "U_ERIN", FINANCE | {"U_ERIN"}, None, None),  # escalated to U_ERIN
        (SELF_OK, "U_DAVE", "U_DAVE", frozenset({"U_DAVE"}), None, None),
        (
            ActionPolicy("solo", approvers=("U_DAVE",)),
            "U_DAVE",
            "U_DAVE",
            frozenset({"U_DAVE"}),
            SelfApprovalError,
            (
                "you asked for this (solo), and solo does not allow approving your own request; "
                "ask another approver"
            ),
        ),
        (REFUND, "U_CAROL", "U_ALICE", frozenset(), NotAuthorizedError, NOT_APPROVER % "U_ALICE"),
    ],
)
def test_check_voter(
    rule: ActionPolicy,
    requester: str,
    actor: str,
    approvers: frozenset[str],
    error: type[Exception] | None,
    message: str | None,
) -> None:
    refused = check_voter(rule, requester=requester, actor=actor, approvers=approvers)
    if error is None:
        assert refused is None
    else:
        assert type(refused) is error and str(refused) == message


def test_approver_entries_add_escalation_targets() -> None:
    rule = ActionPolicy(
        "a", approvers=("U1", "@g"), escalate_after=dt.timedelta(hours=1), escalate_to=("@g", "@x")
    )
    assert rule.approver_entries() == ("U1", "@g")
    assert rule.approver_entries(escalated=True) == ("U1", "@g", "@x")


class SlackGroups:
    async def members(self, group: str) -> frozenset[str]:
        return frozenset({"U_SLACK"}) if group == "support" else frozenset()


async def test_groups_and_starters() -> None:
    groups = StaticGroups({"finance": ["U_ALICE", "U_BOB"]})
    assert await groups.members("finance") == {"U_ALICE", "U_BOB"}
    assert await groups.members("@finance") == {"U_ALICE", "U_BOB"}
    assert await groups.members("unknown") == frozenset()
    chained = StaticGroups({"finance": ["U_ALICE"]}, fallback=SlackGroups())
    assert await resolve_members(["@finance", "@support", "@nobody", "U_DAVE"], chained) == {
        "U_ALICE",
        "U_SLACK",
        "U_DAVE",
    }

    wf = WorkflowPolicy("refund", starters=("@support", "U_CAROL"))
    members = await resolve_members(wf.starters, chained)
    assert may_start(wf, "U_SLACK", members) is True
    assert may_start(wf, "U_CAROL", frozenset()) is True
    assert may_start(wf, "U_MALLORY", members) is False
    assert may_start(wf, "@support", members) is False
    assert may_start(None, "U_CAROL", frozenset({"U_CAROL"})) is False
    assert may_start(WorkflowPolicy("w"), "U_CAROL", frozenset()) is False


# --- fingerprints and redaction ------------------------------------------------------------


def test_canonical_json_and_fingerprint() -> None:
    assert canonical_json({"b": [1, 2.5, None], "a": "é"}) == '{"a":"é","b":[1,2.5,null]}'
    others = {"d": Decimal("1.10"), "t": (1, 2), "s": {3, 1}}
    assert canonical_json(others) == '{"d":"1.10","s":[1,3],"t":[1,2]}'
    assert canonical_json(dt.date(2024, 5, 1)) == '"2024-05-01"'
    expected = hashlib.sha256(b'{"action":"send_refund","args":{"amount":5,"to":"c1"}}').hexdigest()
    assert fingerprint("send_refund", {"to": "c1", "amount": 5}) == expected
    assert fingerprint("send_refund", {"amount": 5, "to": "c1"}) == expected
    assert fingerprint("send_refund", {"amount": 6, "to": "c1"}) != expected
    assert fingerprint("other", {"amount": 5, "to": "c1"}) != expected
    with pytest.raises(ValueError):
        canonical_json(float("nan"))
    with pytest.raises(TypeError, match="cannot fingerprint a value of type object"):
        canonical_json(object())


def test_redact_replaces_secrets_by_their_hash() -> None:
    rule = ActionPolicy("pay", approvers=("U1",), secret=("card", "cvv"))
    args = {"card": "4111 1111 1111 1111", "amount": 5, "nested": {"card": "kept"}}
    out = redact(rule, args)
    digest = hashlib.sha256(json.dumps("4111 1111 1111 1111").encode()).hexdigest()
    hidden = {"redacted": f"sha256:{digest}"}
    assert out == {"card": hidden, "amount": 5, "nested": {"card": "kept"}}
    assert args["card"] == "4111 1111 1111 1111"  # a copy
    assert "4111" not in canonical_json(out)
    keyed = redact(rule, args, key=b"k")["card"]["redacted"]
    assert keyed.startswith("hmac-sha256:") and digest not in keyed
    assert redact(None, args) == args


# --- durations -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("15m", 900),
        ("4h", 14400),
        ("2d", 172800),
        ("1w", 604800),
        ("1h30m", 5400),
        (" 1d12h ", 129600),
        ("1w2d3h4m5s", 788645),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == dt.timedelta(seconds=seconds)
    assert parse_duration(format_duration(parse_duration(text))) == parse_duration(text)


HINT = 'durations are written like "30s", "15m", "4h", "2d", "1w" or "1h30m"'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", f"{HINT}, got ''"),
        ("4", f"{HINT}, got '4'"),
        ("4H", f"{HINT}, got '4H'"),
        ("30m1h", f"{HINT}, got '30m1h'"),
        ("1.5h", f"{HINT}, got '1.5h'"),
        ("-1h", f"{HINT}, got '-1h'"),
        ("0s", "must be longer than zero, got '0s'"),
        ("99999999999999999999w", "must be at most ten years, got '99999999999999999999w'"),
        (3600, f"{HINT}, got integer 3600"),
    ],
)
def test_parse_duration_refuses(text: Any, message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_duration(text)
    assert str(info.value) == message


def test_format_duration() -> None:
    assert format_duration(dt.timedelta(minutes=90)) == "1h30m"
    assert format_duration(dt.timedelta(days=8)) == "1w1d"
    assert format_duration(dt.timedelta(0)) == "0s"


# --- edits ---------------------------------------------------------------------------------

EDITABLE = ActionPolicy(
    "send_refund",
    "Send a refund",
    approvers=("U1",),
    editable=("amount", "reason", "fee", "total", "urgent", "tags", "note"),
)
ARGS = {
    "amount": 50,
    "reason": "late",
    "fee": 1.5,
    "total": Decimal("51.50"),
    "urgent": False,
    "tags": ["a"],
    "customer_id": "c1",
}


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        ({"amount": "40"}, {"amount": 40}),
        ({"amount": " 1_000 "}, {"amount": 1000}),
        ({"amount": 40}, {"amount": 40}),
        ({"amount": 40.0}, {"amount": 40}),
        ({"amount": "50"}, {}),  # unchanged: left out
        ({"reason": "damaged"}, {"reason": "damaged"}),
        ({"fee": "2.25"}, {"fee": 2.25}),
        ({"fee": 2}, {"fee": 2.0}),
        ({"total": "40.10"}, {"total": Decimal("40.10")}),
        ({"total": 40}, {"total": Decimal(40)}),
        ({"urgent": "yes"}, {"urgent": True}),
        ({"urgent": "FALSE"}, {}),
        ({"tags": '["a", "b"]'}, {"tags": ["a", "b"]}),
        ({"note": "added"}, {"note": "added"}),  # editable, absent from args: taken as given
        ({}, {}),
    ],
)
def test_validate_edits(edits: dict[str, Any], expected: dict[str, Any]) -> None:
    result = validate_edits(EDITABLE, edits, ARGS)
    assert result == expected
    assert all(type(result[k]) is type(v) for k, v in expected.items())


@pytest.mark.parametrize(
    ("rule", "edits", "message"),
    [
        (
            EDITABLE,
            {"customer_id": "c2"},
            (
                "'customer_id' cannot be edited in Send a refund (send_refund); "
                "editable: amount, reason, fee, total, urgent, tags, note"
            ),
        ),
        (
            REFUND,
            {"amount": "1"},
            "nothing in Send a refund (send_refund) can be edited; approve or reject it as it is",
        ),
        (EDITABLE, {"amount": "forty"}, "amount must be a whole number, got 'forty'"),
        (EDITABLE, {"amount": "40.5"}, "amount must be a whole number, got '40.5'"),
        (EDITABLE, {"amount": True}, "amount must be a whole number, got True"),
        (EDITABLE, {"fee": "inf"}, "fee must be a number, got 'inf'"),
        (EDITABLE, {"fee": ""}, "fee must be a number, got ''"),
        (EDITABLE, {"fee": 10**400}, f"fee must be a number, got {10**400!r}"),
        (EDITABLE, {"total": "12,50"}, "total must be a number, like 12.50, got '12,50'"),
        (EDITABLE, {"total": "NaN"}, "total must be a number, like 12.50, got 'NaN'"),
        (EDITABLE, {"urgent": "maybe"}, "urgent must be true or false, got 'maybe'"),
        (EDITABLE, {"reason": 5}, "reason must be text, got 5"),
        (EDITABLE, {"tags": "a, b"}, "tags must be JSON (a JSON array), got 'a, b'"),
        (EDITABLE, {"tags": '{"a": 1}'}, "tags must be a JSON array, got '{\"a\": 1}'"),
    ],
)
def test_validate_edits_refuses(rule: ActionPolicy, edits: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidEditError) as info:
        validate_edits(rule, edits, ARGS)
    assert str(info.value) == message
    assert info.value.code == "invalid_edit"


# --- parse_policy raises PolicyError and nothing else ------------------------------------------


def _check_only_policy_errors(text: str) -> None:
    try:
        parse_policy(text)
    except PolicyError as exc:
        if exc.line is not None:
            assert 1 <= exc.line <= text.count("\n") + 1, (exc, text)
        if exc.key:
            assert exc.line is not None, (exc, text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_raises_only_policy_error(text: str) -> None:
    _check_only_policy_errors(text)


BAD_VALUES = [
    "1",
    "-3",
    "2.5",
    "nan",
    "true",
    '"x y"',
    "[]",
    "[1, 2]",
    "{}",
    "1979-05-27",
    '"""\nx = 1\n"""',
]
GOOD_VALUES = {
    "approvers": ['["U1"]', '["@g", "U2"]', '["@slack", "U3", "U4"]', '["@"]'],
    "tier": ['"low"', '"medium"', '"high"', '"critical"', '"hgih"'],
    "required": ["1", "2", "3", "0"],
    "allow_self_approval": ["true", "false"],
    "editable": ['["amount"]', '["amount", "card"]'],
    "secret": ['["card"]', '["cvv"]'],
    "remind_after": ['"1h"', '"4h"', '"2x"'],
    "escalate_after": ['"1d"', '"2h"'],
    "escalate_to": ['["@leads"]', "[]"],
    "expire_after": ['"3d"', '"30m"', '"0s"'],
    "on_expiry": ['"approve"', '"reject"', '"later"'],
    "title": ['"Send"', '""'],
    "name": ['"r"', '"s"'],
    "when": [
        "{}",
        "{ amount = { le = 50 } }",
        '{ c = { in = ["a", 1] } }',
        "{ x = { bogus = 1 } }",
        "{ x = 1 }",
        "{ x = [1] }",
        '{ x = { gt = "5" } }',
    ],
    "starters": ['["@support", "U1"]', '["U 1"]'],
    "path": ['"m.n:f"', '"m:f.g"', '"m"'],
}
ACTION_KEYS = [
    "tier",
    "required",
    "allow_self_approval",
    "editable",
    "secret",
    "remind_after",
    "escalate_after",
    "escalate_to",
    "expire_after",
    "on_expiry",
    "title",
]


def table(header: str, keys: list[str]) -> st.SearchStrategy[str]:
    def value(key: str) -> st.SearchStrategy[str]:
        good, bad = st.sampled_from(GOOD_VALUES[key]), st.sampled_from(BAD_VALUES)
        return st.integers(0, 9).flatmap(lambda n: bad if n == 0 else good)

    pairs = st.lists(st.sampled_from(keys), unique=True, max_size=6).flatmap(
        lambda ks: st.tuples(*[st.tuples(st.just(k), value(k)) for k in ks])
    )
    return pairs.map(lambda kv: "\n".join([header] + [f"{k} = {v}" for k, v in kv]))


def action(name: str) -> st.SearchStrategy[str]:
    head = st.sampled_from(
        [f"[actions.{name}]\napprovers = " + v for v in GOOD_VALUES["approvers"]]
        + [f"[actions.{name}]"]
    )
    rules = st.lists(table(f"[[actions.{name}.auto_approve]]", ["name", "when"]), max_size=2)
    return st.tuples(head, table("", ACTION_KEYS), rules).map(
        lambda t: t[0] + t[1] + "\n" + "\n".join(t[2])
    )


documents = st.tuples(
    st.sampled_from(["", '[groups]\ng = ["U1", "U2"]', '[groups]\nleads = ["U9"]']),
    st.lists(st.sampled_from(["a", "b"]), unique=True, max_size=2).flatmap(
        lambda names: st.tuples(*[action(n) for n in names])
    ),
    st.sampled_from(["", "[workflows.w]"]).flatmap(
        lambda h: table(h, ["starters", "path"]) if h else st.just("")
    ),
).map(lambda t: "\n".join([t[0], *t[1], t[2]]) + "\n")


@settings(max_examples=100, deadline=None)
@given(documents)
def test_policy_shaped_text_raises_only_policy_error(doc: str) -> None:
    _check_only_policy_errors(doc)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*EDITABLE.editable, "customer_id"]),
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.decimals(),
            st.text(max_size=8),
            st.lists(st.integers(), max_size=2),
        ),
        max_size=3,
    )
)
def test_edits_raise_only_invalid_edit_error(edits: dict[str, Any]) -> None:
    try:
        result = validate_edits(EDITABLE, edits, ARGS)
    except InvalidEditError:
        return
    assert set(result) <= set(EDITABLE.editable)
