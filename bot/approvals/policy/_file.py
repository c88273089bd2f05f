"""Reading the policy file: the parsed TOML checked, key by key, into the `Policy` values.

Every problem is reported with the file, the line (found by `_locate`) and the key.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, get_args

from ..errors import PolicyError
from ._away_keys import read_away, read_delegation
from ._callbacks import ORIGINS_SHAPE, CallbackOrigin, parse_origin
from ._compare import _kind
from ._locate import Path, _Locator
from ._messages import (
    _AUTO_CRITICAL,
    _NO_APPROVERS,
    _after_cycle,
    _after_cycle_of,
    _after_itself,
    _after_unknown,
    _expiry_approve_refused,
    _free_and_action,
    _got,
    _one_of,
    _secret_editable,
    _service_action_unknown,
)
from .durations import format_duration, parse_duration
from .grants import read_grants
from .model import (
    _SELF_EXPIRY_TIERS,
    NOTIFY_MODES,
    RISK_TIERS,
    ActionPolicy,
    AutoApproveRule,
    AutoBudget,
    Condition,
    Op,
    Policy,
    ServicePolicy,
    WorkflowPolicy,
)
from .schema import FIELD_TYPES, Field, Schema

_OPS: tuple[str, ...] = get_args(Op)
_OP_ALIASES = {
    "lte": "le", "gte": "ge", "<=": "le", ">=": "ge", "<": "lt", ">": "gt", "==": "eq", "=": "eq",
    "!=": "ne", "neq": "ne", "equals": "eq", "is": "eq", "not": "ne", "one_of": "in", "any": "in",
}  # fmt: skip
_ORDER_OPS = frozenset({"lt", "le", "gt", "ge"})

_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)$")


def _syntax_error(message: str, text: str, source: str) -> PolicyError:
    m = _POSITION.search(message)
    line: int | None = None
    if m:
        message = message[: m.start()]
        if m.group(1):
            line = int(m.group(1))
            message += f" (column {m.group(2)})"
    if line is None and message.startswith("Cannot overwrite a value"):
        line = _Locator(text).first_duplicate()
    if line is None and m:  # at end of document
        line = text.count("\n") + 1
    return PolicyError(f"invalid TOML: {message}", source=source, line=line)


_TOP_KEYS = ("actions", "agents", "away", "groups", "services", "workflows")
_AGENT_KEYS = ("free_tools",)
_ACTION_KEYS = (
    "title", "tier", "approvers", "required", "allow_self_approval", "editable", "secret",
    "remind_after", "escalate_after", "escalate_to", "expire_after", "on_expiry", "auto_approve",
    "args", "notify", "after", "grants", "delegation",
)  # fmt: skip
_FIELD_KEYS = (
    "type", "required", "minimum", "maximum", "exclusive_minimum", "exclusive_maximum",
    "min_length", "max_length", "pattern", "enum", "description", "format",
)  # fmt: skip
_RULE_KEYS = ("name", "when", "budget")
_BUDGET_KEYS = ("count", "total", "of", "per", "window")
_WORKFLOW_KEYS = ("starters", "path")
_SERVICE_KEYS = (
    "token_env", "actions", "webhook_secret_env", "channel", "callback_urls", "callback_private",
    "may_act_for", "owners", "check_url",
)  # fmt: skip
_SERVICE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_ACTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


class _Reader:
    """Turns the parsed TOML into a `Policy`, raising the first problem with its line."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self._locator: _Locator | None = None
        self.referenced: set[str] = set()

    def error(self, path: Path, message: str) -> PolicyError:
        if self._locator is None:
            self._locator = _Locator(self.text)
        line = self._locator.line(path)
        return PolicyError(message, source=self.source, line=line, key=_dotted(path))

    # -- structure ------------------------------------------------------------------------

    def table(
        self, path: Path, value: Any, allowed: tuple[str, ...], header: str
    ) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(path, f"must be a table ({header}), got {_got(value)}")
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "allowed: " + ", ".join(allowed)
                raise self.error(path + (key,), f"unknown key; {hint}")
        return value

    def policy(self, data: dict[str, Any]) -> Policy:
        self.table((), data, _TOP_KEYS, "the top level")
        groups = self.groups(data.get("groups", {}))
        workflows = self.workflows(data.get("workflows", {}))
        actions = self.actions(data.get("actions", {}), groups)
        free_tools = self.free_tools(data.get("agents", {}), actions)
        services = self.services(data.get("services", {}), actions)
        return Policy(
            actions=actions,
            groups=groups,
            workflows=workflows,
            source=self.source,
            external_groups=frozenset(self.referenced - set(groups)),
            free_tools=free_tools,
            services=services,
            away_statuses=read_away(self, data.get("away", {})),
        )

    def services(self, value: Any, actions: Mapping[str, ActionPolicy]) -> dict[str, ServicePolicy]:
        """`[services.NAME]`: programs that may ask for approvals over the API."""
        out: dict[str, ServicePolicy] = {}
        token_owner: dict[str, str] = {}
        for name, raw in self.named_tables("services", value).items():
            p: Path = ("services", name)
            if not _SERVICE_NAME.fullmatch(name):
                raise self.error(
                    p,
                    "service names are 1 to 40 lowercase letters, digits, '_' or '-', "
                    "starting with a letter or digit",
                )
            t = self.table(p, raw, _SERVICE_KEYS, f"[services.{name}]")
            if "token_env" not in t:
                raise self.error(
                    p,
                    'needs token_env = "ENV_VAR": the environment variable that holds its '
                    "bearer token (the token itself never goes in the policy file)",
                )
            token_env = self.env_name(p + ("token_env",), t["token_env"])
            if token_env in token_owner:
                raise self.error(
                    p + ("token_env",),
                    f"{token_env} is the token of services.{token_owner[token_env]} already; "
                    "each service needs a token of its own (the token names the service)",
                )
            token_owner[token_env] = name
            secret_env = (
                self.env_name(p + ("webhook_secret_env",), t["webhook_secret_env"])
                if "webhook_secret_env" in t
                else None
            )
            raw_actions = t.get("actions", [])
            if not isinstance(raw_actions, list):
                raise self.error(
                    p + ("actions",), f"must be an array of action names, got {_got(raw_actions)}"
                )
            names: list[str] = []
            for item in raw_actions:
                if not isinstance(item, str) or item not in actions:
                    raise self.error(
                        p + ("actions",),
                        _service_action_unknown(item, actions)
                        if isinstance(item, str)
                        else f"action names must be strings, got {_got(item)}",
                    )
                if item not in names:
                    names.append(item)
            channel = t.get("channel")
            if channel is not None and (
                not isinstance(channel, str) or not channel or _has_space(channel)
            ):
                raise self.error(
                    p + ("channel",), f"must be a channel id like C0123ABCD, got {_got(channel)}"
                )
            svc = ServicePolicy(
                name=name,
                token_env=token_env,
                actions=tuple(names),
                webhook_secret_env=secret_env,
                channel=channel,
                callback_urls=self.callback_urls(
                    p + ("callback_urls",), t.get("callback_urls", [])
                ),
                callback_private=self.boolean(
                    p + ("callback_private",), t.get("callback_private", False)
                ),
                may_act_for=self.entries(
                    p + ("may_act_for",), t.get("may_act_for", []), what="may_act_for"
                ),
                owners=self.entries(p + ("owners",), t.get("owners", []), what="owners"),
                check_url=t.get("check_url"),
            )
            if (problem := svc.check_url_problem()) is not None:
                raise self.error(p + ("check_url",), problem)
            out[name] = svc
        return out

    def callback_urls(self, path: Path, value: Any) -> tuple[CallbackOrigin, ...]:
        """`callback_urls`: the origins a service's webhooks may go to."""
        if not isinstance(value, list):
            raise self.error(path, f"{ORIGINS_SHAPE}, got {_got(value)}")
        found: list[CallbackOrigin] = []
        for item in value:
            origin = parse_origin(item) if isinstance(item, str) else None
            if origin is None:
                raise self.error(path, f"{ORIGINS_SHAPE}, got {_got(item)}")
            found.append(origin)
        return tuple(found)

    def choice(self, path: Path, value: Any, choices: tuple[str, ...]) -> Any:
        if value not in choices:
            raise self.error(path, _one_of(choices, value))
        return value

    def boolean(self, path: Path, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.error(path, f"must be true or false, got {_got(value)}")
        return value

    def env_name(self, path: Path, value: Any) -> str:
        """The name of an environment variable (which holds a secret)."""
        if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
            looks_secret = isinstance(value, str) and len(value) >= 16 and not value.isupper()
            hint = (
                "; it looks like a token itself: put the token in the environment and its "
                "variable's name here"
                if looks_secret
                else ""
            )
            shown = "(hidden)" if looks_secret else _got(value)
            raise self.error(
                path,
                "must be the name of an environment variable, like "
                f'"SIGNOFF_SERVICE_BILLING_TOKEN", got {shown}{hint}',
            )
        return value

    def free_tools(self, value: Any, actions: Mapping[str, ActionPolicy]) -> frozenset[str]:
        """`[agents] free_tools`: tool names that run without approval."""
        t = self.table(("agents",), value, _AGENT_KEYS, "[agents]")
        path: Path = ("agents", "free_tools")
        raw = t.get("free_tools", [])
        if not isinstance(raw, list):
            raise self.error(path, f"must be an array of tool names, got {_got(raw)}")
        out: set[str] = set()
        for item in raw:
            if not isinstance(item, str) or not _ACTION_NAME.fullmatch(item):
                raise self.error(
                    path,
                    "tool names are 1 to 100 letters, digits, '_', '-' or '.', not starting "
                    f"with '-' or '.', got {_got(item)}",
                )
            if item in actions:
                raise self.error(path, _free_and_action(item))
            out.add(item)
        return frozenset(out)

    def named_tables(self, key: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error((key,), f"must be a table ([{key}.NAME]), got {_got(value)}")
        return value

    # -- values ---------------------------------------------------------------------------

    def string(self, path: Path, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.error(path, f"must be a non-empty string, got {_got(value)}")
        return value

    def names(self, path: Path, value: Any) -> tuple[str, ...]:
        """An array of argument names (editable, secret)."""
        if not isinstance(value, list):
            raise self.error(path, f"must be an array of field names, got {_got(value)}")
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise self.error(path, f"field names must be non-empty strings, got {_got(item)}")
            if item not in out:
                out.append(item)
        return tuple(out)

    def entries(self, path: Path, value: Any, *, what: str) -> tuple[str, ...]:
        """An array of user ids and `@group` names."""
        if not isinstance(value, list):
            raise self.error(
                path, f'must be an array of user ids and "@group" names, got {_got(value)}'
            )
        out: list[str] = []
        for item in value:
            if not isinstance(item, str) or not item or item == "@" or _has_space(item):
                raise self.error(
                    path,
                    f'{what} must be user ids or "@group" names without spaces, got {_got(item)}',
                )
            if item.startswith("@"):
                self.referenced.add(item[1:])
            if item not in out:
                out.append(item)
        return tuple(out)

    def duration(self, path: Path, value: Any) -> dt.timedelta:
        if not isinstance(value, str):
            raise self.error(
                path, f'must be a duration string like "4h" or "1h30m", got {_got(value)}'
            )
        try:
            return parse_duration(value)
        except PolicyError as exc:
            raise self.error(path, exc.message) from None

    # -- sections -------------------------------------------------------------------------

    def groups(self, value: Any) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for name, members in self.named_tables("groups", value).items():
            path: Path = ("groups", name)
            if name.startswith("@") or not name or _has_space(name):
                raise self.error(path, 'group names are written without "@" and without spaces')
            if not isinstance(members, list):
                raise self.error(path, f"must be an array of user ids, got {_got(members)}")
            ids: list[str] = []
            for m in members:
                if not isinstance(m, str) or not m or _has_space(m) or m.startswith("@"):
                    raise self.error(
                        path,
                        f"members must be user ids (groups cannot contain groups), got {_got(m)}",
                    )
                if m not in ids:
                    ids.append(m)
            out[name] = tuple(ids)
        return out

    def workflows(self, value: Any) -> dict[str, WorkflowPolicy]:
        out: dict[str, WorkflowPolicy] = {}
        for name, raw in self.named_tables("workflows", value).items():
            path: Path = ("workflows", name)
            table = self.table(path, raw, _WORKFLOW_KEYS, f"[workflows.{name}]")
            starters = self.entries(
                path + ("starters",), table.get("starters", []), what="starters"
            )
            wf_path = table.get("path")
            if wf_path is not None and (
                not isinstance(wf_path, str) or not _PATH.fullmatch(wf_path)
            ):
                raise self.error(
                    path + ("path",),
                    f'must be "module:attribute", like "mypkg.flows:build", got {_got(wf_path)}',
                )
            out[name] = WorkflowPolicy(name=name, starters=starters, path=wf_path)
        return out

    def actions(self, value: Any, groups: Mapping[str, tuple[str, ...]]) -> dict[str, ActionPolicy]:
        out = {
            name: self.action(name, raw, groups)
            for name, raw in self.named_tables("actions", value).items()
        }
        for name, rule in out.items():
            for other in rule.after:
                if other not in out:
                    raise self.error(("actions", name, "after"), _after_unknown(other, out))
        cycle = _after_cycle_of({name: rule.after for name, rule in out.items()})
        if cycle:
            raise self.error(("actions", cycle[0], "after"), _after_cycle(cycle))
        return out

    def after(self, path: Path, name: str, value: Any) -> tuple[str, ...]:
        """`after = ["send_refund"]`: the actions a call of this one waits for in a turn."""
        if not isinstance(value, list) or not all(
            isinstance(v, str) and _ACTION_NAME.fullmatch(v) for v in value
        ):
            raise self.error(path, f"must be an array of action names, got {_got(value)}")
        if name in value:
            raise self.error(path, _after_itself(name))
        return tuple(dict.fromkeys(value))

    def action(self, name: str, raw: Any, groups: Mapping[str, tuple[str, ...]]) -> ActionPolicy:
        p: Path = ("actions", name)
        if not _ACTION_NAME.fullmatch(name):
            raise self.error(
                p,
                "action names are 1 to 100 letters, digits, '_', '-' or '.', "
                "not starting with '-' or '.'",
            )
        t = self.table(p, raw, _ACTION_KEYS, f"[actions.{name}]")

        title = self.string(p + ("title",), t["title"]).strip() if "title" in t else name
        tier = t.get("tier", "high")
        if tier not in RISK_TIERS:
            raise self.error(p + ("tier",), _one_of(RISK_TIERS, tier))

        if "approvers" not in t:
            raise self.error(p, 'needs approvers = [...] (user ids or "@group" names)')
        approvers = self.entries(p + ("approvers",), t["approvers"], what="approvers")
        if not approvers:
            raise self.error(p + ("approvers",), _NO_APPROVERS)

        required = t.get("required", 1)
        if type(required) is not int:
            raise self.error(p + ("required",), f"must be a whole number, got {_got(required)}")
        if required < 1:
            raise self.error(p + ("required",), f"must be at least 1, got {required}")
        pool = _static_pool(approvers, groups)
        if pool is not None and required > len(pool):
            raise self.error(
                p + ("required",),
                f"needs {required} distinct approvers but the approvers hold only {len(pool)} "
                f"({', '.join(sorted(pool))})",
            )

        allow_self = t.get("allow_self_approval", False)
        if not isinstance(allow_self, bool):
            raise self.error(
                p + ("allow_self_approval",), f"must be true or false, got {_got(allow_self)}"
            )

        editable = self.names(p + ("editable",), t.get("editable", []))
        secret = self.names(p + ("secret",), t.get("secret", []))
        for f in secret:
            if f in editable:
                raise self.error(p + ("secret",), _secret_editable(f))

        durations: dict[str, dt.timedelta] = {}
        for key in ("remind_after", "escalate_after", "expire_after"):
            if key in t:
                durations[key] = self.duration(p + (key,), t[key])
        escalate_to: tuple[str, ...] = ()
        if "escalate_to" in t:
            escalate_to = self.entries(p + ("escalate_to",), t["escalate_to"], what="escalate_to")
            if not escalate_to:
                raise self.error(p + ("escalate_to",), 'must name at least one user id or "@group"')
            if "escalate_after" not in durations:
                raise self.error(p + ("escalate_to",), "needs escalate_after (when to escalate)")
        order = [k for k in ("remind_after", "escalate_after", "expire_after") if k in durations]
        for i, later in enumerate(order):
            for earlier in reversed(order[:i]):
                if durations[later] <= durations[earlier]:
                    raise self.error(
                        p + (later,),
                        f"must be later than {earlier} ({format_duration(durations[earlier])}), "
                        f"got {format_duration(durations[later])}",
                    )

        on_expiry = t.get("on_expiry", "reject")
        if on_expiry not in ("reject", "approve"):
            raise self.error(p + ("on_expiry",), _one_of(("reject", "approve"), on_expiry))
        if on_expiry == "approve" and tier not in _SELF_EXPIRY_TIERS:
            raise self.error(p + ("on_expiry",), _expiry_approve_refused(tier))
        if "on_expiry" in t and "expire_after" not in durations:
            raise self.error(
                p + ("on_expiry",), "has no effect without expire_after (when to expire)"
            )

        rules = self.auto_rules(p + ("auto_approve",), t.get("auto_approve", []))
        if rules and tier == "critical":
            raise self.error(p + ("auto_approve",), _AUTO_CRITICAL)

        notify = self.choice(p + ("notify",), t.get("notify", "channel"), NOTIFY_MODES)

        schema = self.schema(p + ("args",), t["args"]) if "args" in t else None
        if schema is not None:
            for f in (*editable, *secret):
                if f not in schema.fields:
                    raise self.error(
                        p + ("args",), f"declares no field {f!r}, which editable or secret names"
                    )
            for r_i, r in enumerate(rules):
                for c in r.conditions:
                    if c.field not in schema.fields:
                        raise self.error(
                            p + ("auto_approve", r_i, "when", c.field),
                            f"{c.field!r} is not an argument of {name} (args declares "
                            f"{', '.join(schema.names)}); the rule would never match",
                        )

        return ActionPolicy(
            action=name,
            title=title,
            tier=tier,
            approvers=approvers,
            required=required,
            allow_self_approval=allow_self,
            editable=editable,
            secret=secret,
            remind_after=durations.get("remind_after"),
            escalate_after=durations.get("escalate_after"),
            escalate_to=escalate_to,
            expire_after=durations.get("expire_after"),
            on_expiry=on_expiry,
            auto_approve=rules,
            args=schema,
            notify=notify,
            after=self.after(p + ("after",), name, t.get("after", [])),
            grants=read_grants(t, p, tier, required, schema, self.error, self.duration),
            delegation=read_delegation(self, p + ("delegation",), t.get("delegation", False)),
        )

    def schema(self, path: Path, value: Any) -> Schema:
        """`[actions.NAME.args]`: a table of fields, each `{ type = "number", ... }`."""
        if not isinstance(value, dict):
            raise self.error(
                path,
                'must be a table of fields, like amount = { type = "number", minimum = 0 }, '
                f"got {_got(value)}",
            )
        fields: dict[str, Field] = {}
        for fname, spec in value.items():
            fp = path + (fname,)
            if isinstance(spec, str):
                spec = {"type": spec}
            t = self.table(fp, spec, _FIELD_KEYS, f"{_dotted(path)}.{fname}")
            kind = t.get("type", "any")
            if kind not in FIELD_TYPES:
                raise self.error(fp + ("type",), _one_of(FIELD_TYPES, kind))
            required = t.get("required", False)
            if not isinstance(required, bool):
                raise self.error(fp + ("required",), f"must be true or false, got {_got(required)}")
            if "enum" in t and not isinstance(t["enum"], list):
                raise self.error(fp + ("enum",), f"must be an array, got {_got(t['enum'])}")
            options = {k: v for k, v in t.items() if k not in ("type", "required")}
            if "enum" in options:
                options["enum"] = tuple(options["enum"])
            try:
                fields[fname] = Field(kind, required=required, **options)
            except (TypeError, ValueError) as exc:
                raise self.error(fp, str(exc)) from None
        return Schema(fields)

    def auto_rules(self, path: Path, value: Any) -> tuple[AutoApproveRule, ...]:
        if not isinstance(value, list):
            raise self.error(
                path, f"must be an array of tables ([[{_dotted(path)}]]), got {_got(value)}"
            )
        rules: list[AutoApproveRule] = []
        for i, raw in enumerate(value):
            rp = path + (i,)
            t = self.table(rp, raw, _RULE_KEYS, f"[[{_dotted(path)}]]")
            if "name" not in t:
                raise self.error(
                    rp, 'needs name = "..." (the audit log names the rule that decided)'
                )
            name = self.string(rp + ("name",), t["name"]).strip()
            if any(r.name == name for r in rules):
                raise self.error(rp + ("name",), f"another rule of this action is named {name!r}")
            if "when" not in t:
                raise self.error(rp, "needs when = { ... } (use when = {} to match every request)")
            rules.append(
                AutoApproveRule(
                    name=name,
                    conditions=self.conditions(rp + ("when",), t["when"]),
                    budget=self.budget(rp + ("budget",), t["budget"]) if "budget" in t else None,
                )
            )
        return tuple(rules)

    def budget(self, path: Path, value: Any) -> AutoBudget:
        """`budget = { count = 5, total = 25, of = "amount", per = ["customer_id"], window =
        "1d" }`: at least one cap, and the window they count over."""
        t = self.table(path, value, _BUDGET_KEYS, _dotted(path))
        if "window" not in t:
            raise self.error(path, 'needs window = "1d" (how long the caps count over)')
        if "count" not in t and "total" not in t:
            raise self.error(path, 'needs count = N, total = N (with of = "field"), or both')
        count = t.get("count")
        if count is not None and (type(count) is not int or count < 0):
            raise self.error(
                path + ("count",), f"must be a whole number, 0 or more, got {_got(count)}"
            )
        total = t.get("total")
        if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float))):
            raise self.error(path + ("total",), f"must be a number, got {_got(total)}")
        of = t.get("of")
        if total is not None and not (isinstance(of, str) and of.strip()):
            raise self.error(path + ("of",), 'total needs of = "field" (the argument it sums)')
        per = t.get("per", [])
        per = [per] if isinstance(per, str) else per
        if not isinstance(per, list) or not all(isinstance(x, str) and x.strip() for x in per):
            raise self.error(
                path + ("per",), f"must be a field name or a list of them, got {_got(t['per'])}"
            )
        return AutoBudget(
            window=self.duration(path + ("window",), t["window"]),
            count=count,
            total=float(total) if total is not None else None,
            of=of if total is not None else None,
            per=tuple(per),
        )

    def conditions(self, path: Path, value: Any) -> tuple[Condition, ...]:
        if not isinstance(value, dict):
            raise self.error(
                path,
                "must be a table of conditions, like { amount = { le = 50 } }, "
                f"got {_got(value)}",
            )
        out: list[Condition] = []
        for fname, spec in value.items():
            fp = path + (fname,)
            if not fname.strip():
                raise self.error(fp, "field names must be non-empty")
            if not isinstance(spec, dict):
                if isinstance(spec, list):
                    raise self.error(fp, "to match one of several values write { in = [...] }")
                out.append(Condition(fname, "eq", self.scalar(fp, spec)))
                continue
            if not spec:
                raise self.error(fp, "needs an operator: " + ", ".join(_OPS))
            for op, operand in spec.items():
                op_path = fp + (op,)
                if op not in _OPS:
                    close = (
                        [_OP_ALIASES[op]]
                        if op in _OP_ALIASES
                        else difflib.get_close_matches(op, _OPS, n=1)
                    )
                    hint = (
                        f"did you mean {close[0]!r}?" if close else "use one of " + ", ".join(_OPS)
                    )
                    raise self.error(op_path, f"unknown operator; {hint}")
                if op == "in":
                    if not isinstance(operand, list) or not operand:
                        raise self.error(op_path, f"must be a non-empty array, got {_got(operand)}")
                    out.append(
                        Condition(fname, "in", tuple(self.scalar(op_path, v) for v in operand))
                    )
                elif op in _ORDER_OPS:
                    if _kind(operand) != "number":
                        raise self.error(op_path, f"must be a number, got {_got(operand)}")
                    out.append(Condition(fname, op, operand))
                else:
                    scalar = self.scalar(op_path, operand)
                    out.append(Condition(fname, op, scalar))
        return tuple(out)

    def scalar(self, path: Path, value: Any) -> str | int | float | bool:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(path, f"must be a finite number, got {value}")
        if not isinstance(value, (str, int, float, bool)):
            raise self.error(path, f"must be a string, number or boolean, got {_got(value)}")
        return value


def _static_pool(entries: Iterable[str], groups: Mapping[str, tuple[str, ...]]) -> set[str] | None:
    """The distinct people `entries` can name, or None when a group is resolved elsewhere."""
    pool: set[str] = set()
    for e in entries:
        if e.startswith("@"):
            if e[1:] not in groups:
                return None
            pool.update(groups[e[1:]])
        else:
            pool.add(e)
    return pool


def _has_space(s: str) -> bool:
    return any(c.isspace() for c in s)


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _dotted(path: Path) -> str:
    """`("actions", "x", "auto_approve", 0, "when")` -> `actions.x.auto_approve[0].when`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if _BARE.fullmatch(part) else json.dumps(part, ensure_ascii=False)
            out += f".{text}" if out else text
    return out
