"""The OpenAPI 3.1 description of signoff's HTTP API (`GET /api/openapi.json`).

Written by hand, beside the handlers in `bot.http.api`; `tests/api/test_openapi.py` checks that
every `/api/` route is described and validates real responses against these schemas.
"""

from __future__ import annotations

from typing import Any

from ._limits import MAX_BODY_BYTES, MAX_JSON_DEPTH, MAX_NUMBER_CHARS

__all__ = ["document"]

_STATUSES = ["pending", "approved", "rejected", "expired", "cancelled"]
_DECISION_STATUSES = ["approved", "rejected", "denied", "expired", "cancelled"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


_NULLABLE_STRING = {"type": ["string", "null"]}

_SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["ok", "error"],
        "properties": {
            "ok": {"const": False},
            "error": {"type": "string", "description": "What was wrong and what to do."},
        },
    },
    "Problems": {
        "type": "object",
        "required": ["ok", "error", "problems"],
        "properties": {
            "ok": {"const": False},
            "error": {"type": "string"},
            "problems": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["field", "message"],
                    "additionalProperties": False,
                    "properties": {
                        "field": {
                            "type": "string",
                            "description": "`requester`, `callback_url`, `args.amount`, ...",
                        },
                        "message": {"type": "string"},
                    },
                },
            },
        },
    },
    "ApprovalRequest": {
        "type": "object",
        "required": ["action", "requester"],
        "additionalProperties": False,
        "properties": {
            "action": {
                "type": "string",
                "description": "The policy's name of the action ([actions.NAME]); one the "
                "service's [services.NAME] actions lists.",
            },
            "args": {
                "type": "object",
                "description": "The action's arguments, checked against its schema "
                "([actions.NAME.args]); each string at most 4,000 characters, all of them "
                "at most 32 KiB as JSON (else 422, naming the field).",
            },
            "requester": {
                "type": "string",
                "description": "Who asks (a Slack user id). They may not approve their own "
                "request. Someone the service's [services.NAME] may_act_for does not list "
                "makes the request the service's own: the answer's requester is then the "
                "service.",
            },
            "title": {
                "type": "string",
                "description": "Your words for the request, shown on the card labelled as "
                "your note (never as its header, which is the action's title filled with the "
                "arguments). `{field}` placeholders name arguments (format specs up to width "
                "40 and precision 20); 422 otherwise.",
            },
            "dedupe_key": {
                "type": "string",
                "description": "Names the entity acted on: a pending request of this service "
                "with the same key and arguments is joined (never another service's or a "
                "workflow's).",
            },
            "callback_url": {
                "type": "string",
                "format": "uri",
                "description": "http(s) URL POSTed the signed `approval.settled` webhook. Its "
                "scheme, host and port must match the service's callback_urls in the policy; a "
                "private, loopback or link-local address needs callback_private = true there "
                "(else 422, naming callback_url).",
            },
        },
    },
    "Decision": {
        "type": "object",
        "required": ["approved", "status", "approval_id", "action", "by", "at", "note"],
        "additionalProperties": False,
        "properties": {
            "approved": {"type": "boolean", "description": "True only when the action may run."},
            "status": {"enum": _DECISION_STATUSES},
            "approval_id": {"type": "string", "description": "signoff's own approval id."},
            "action": {"type": "string"},
            "fingerprint": {"type": "string"},
            "args": {"type": "object", "description": "The arguments with the edits applied."},
            "edits": {"type": "object", "description": "Only the fields an approver changed."},
            "by": {"type": "array", "items": {"type": "string"}},
            "at": {"type": "string", "description": "ISO-8601 UTC."},
            "note": {"type": "string"},
            "idempotency_key": {
                "type": "string",
                "description": "Stable for this approved action: pass it downstream.",
            },
        },
    },
    "Approval": {
        "type": "object",
        "required": [
            *("approval_id", "status", "approved", "action", "args", "title", "service"),
            *("note", "requester", "created_at", "card_url", "decision", "checked"),
            "rechecking",
        ],
        "additionalProperties": False,
        "properties": {
            "approval_id": {"type": "string"},
            "status": {"enum": _STATUSES},
            "approved": {"type": "boolean"},
            "action": {"type": "string"},
            "args": {"type": "object", "description": "As requested; secret fields hidden."},
            "title": {
                "type": "string",
                "description": "The action's title from the policy, filled with the arguments.",
            },
            "note": {
                **_NULLABLE_STRING,
                "description": "The request's own `title`, shown on the card as its note.",
            },
            "service": {"type": "string"},
            "requester": {"type": "string"},
            "created_at": {"type": "string", "description": "ISO-8601 UTC."},
            "card_url": _NULLABLE_STRING,
            "decision": {"oneOf": [{"type": "null"}, _ref("Decision")]},
            "checked": {
                "oneOf": [{"type": "null"}, {"type": "object"}],
                "description": "What the service's check_url answered when it was asked: "
                "`at` (epoch seconds) and `facts`, or `error`; `changed` ({name: [old, new]}) "
                "and `after` when asked again because facts changed after an approval.",
            },
            "rechecking": {
                "type": "boolean",
                "description": "Approved, its facts being read again: status stays pending "
                "until they are found unchanged.",
            },
        },
    },
    "ApprovalList": {
        "type": "object",
        "required": ["approvals"],
        "additionalProperties": False,
        "properties": {"approvals": {"type": "array", "items": _ref("Approval")}},
    },
    "Webhook": {
        "type": "object",
        "required": ["delivery_id", "event", "approval"],
        "additionalProperties": False,
        "properties": {
            "delivery_id": {"type": "string", "description": "The same on every retry."},
            "event": {"const": "approval.settled"},
            "approval": _ref("Approval"),
        },
    },
    "RunRequest": {
        "type": "object",
        "required": ["workflow", "requester"],
        "properties": {
            "workflow": {"type": "string"},
            "input": {
                "type": "object",
                "description": "The workflow's inputs; each string at most 4,000 "
                "characters, all of them at most 32 KiB as JSON.",
            },
            "requester": {"type": "string"},
            "channel": {"type": "string"},
            "thread_id": {"type": "string"},
        },
    },
    "RunStarted": {
        "type": "object",
        "required": ["ok", "thread_id", "status", "approvals", "error"],
        "properties": {
            "ok": {"const": True},
            "thread_id": {"type": "string"},
            "status": {"type": "string"},
            "approvals": {"type": "array", "items": {"type": "string"}},
            "error": _NULLABLE_STRING,
        },
    },
    "OpenAPI": {"type": "object", "required": ["openapi", "paths"]},
}

_SERVICE: list[dict[str, list[str]]] = [{"serviceToken": []}]
_401 = _error("Missing or wrong bearer token (recorded on the audit log).")
_503 = {
    **_error(
        "The database is busy (every connection this process may open to it was in use) or "
        "cannot be reached. Nothing was recorded: make the same request again after "
        "`Retry-After` seconds. `error` says which and what to check."
    ),
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before asking again (2 when busy, 10 when the "
            "database cannot be reached).",
            "required": True,
            "schema": {"type": "integer", "minimum": 1},
        }
    },
}


_BODY_LIMITS = (
    f"UTF-8; each key once in an object; objects and arrays nested at most {MAX_JSON_DEPTH} "
    f"deep; numbers finite and written with at most {MAX_NUMBER_CHARS} characters, no NaN or "
    "Infinity; no lone surrogate escapes"
)
"""What every request body must be, beyond its size (`bot.http._limits`)."""
_TOO_LARGE = _error(f"The body is larger than {MAX_BODY_BYTES:,} bytes (1 MiB).")


def _approval_paths() -> dict[str, Any]:
    """The approvals API's paths: ask for an approval, list the pending ones, read one."""
    approval = _json(_ref("Approval"), "The approval.")
    return {
        "/api/approvals": {
            "post": {
                "operationId": "requestApproval",
                "summary": "Ask for an approval",
                "security": _SERVICE,
                "parameters": [
                    {
                        "name": "Idempotency-Key",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string", "maxLength": 200},
                        "description": "The same key again returns the same approval.",
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("ApprovalRequest")}},
                },
                "responses": {
                    "202": _json(_ref("Approval"), "Asked; the card is on its way."),
                    "200": _json(_ref("Approval"), "This Idempotency-Key asked already."),
                    "400": _error(
                        "The body is not a JSON object of the request's fields, or not strict "
                        "JSON within the limits (" + _BODY_LIMITS + "); or the request could "
                        "reach no one: no channel for its card, or fewer people who may "
                        "approve it than it needs (`error` says which and what to configure)."
                    ),
                    "401": _401,
                    "403": _error(
                        "The policy does not name the action, or the service may not ask "
                        "for it (deny by default)."
                    ),
                    "413": _TOO_LARGE,
                    "422": _json(
                        _ref("Problems"),
                        "Arguments or fields that do not fit, named one by one; or an "
                        "Idempotency-Key used for a different request.",
                    ),
                    "503": _503,
                },
            },
            "get": {
                "operationId": "listPendingApprovals",
                "summary": "The service's pending approvals",
                "security": _SERVICE,
                "parameters": [
                    {
                        "name": "status",
                        "in": "query",
                        "required": False,
                        "schema": {"const": "pending"},
                    }
                ],
                "responses": {
                    "200": _json(_ref("ApprovalList"), "Oldest first, at most 200."),
                    "400": _error("A status other than pending."),
                    "401": _401,
                    "503": _503,
                },
            },
        },
        "/api/approvals/{approval_id}": {
            "get": {
                "operationId": "getApproval",
                "summary": "An approval, waiting up to `wait` seconds for its decision",
                "security": _SERVICE,
                "parameters": [
                    {
                        "name": "approval_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    {
                        "name": "wait",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "number", "minimum": 0},
                        "description": "Long-poll up to this many seconds (at most 60; "
                        "longer is cut to 60) until it is settled.",
                    },
                ],
                "responses": {
                    "200": approval,
                    "400": _error("wait is not a number of seconds."),
                    "401": _401,
                    "404": _error("No approval of this service has this id."),
                    "503": _503,
                },
            }
        },
    }


def _run_paths() -> dict[str, Any]:
    """The runs API's path, and this document's."""
    return {
        "/api/runs": {
            "post": {
                "operationId": "startRun",
                "summary": "Start a workflow run",
                "security": [{"runsToken": []}],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("RunRequest")}},
                },
                "responses": {
                    "201": _json(
                        _ref("RunStarted"),
                        "Started, and run until it paused (`approvals` it waits on) or "
                        "ended (`completed`, or `failed` with `error`).",
                    ),
                    "202": _json(
                        _ref("RunStarted"),
                        "Started (`status` running), but the database was busy or "
                        "unreachable while it ran: it was not failed for that, and goes "
                        "on in the background from where it stopped once the database "
                        "has room (`error` says so). Do not start it again.",
                    ),
                    "400": _error(
                        "Malformed (not a JSON object of the request's fields, or not strict "
                        "JSON within the limits: " + _BODY_LIMITS + "), or inputs the "
                        "workflow refuses; or no channel for the run's cards (neither "
                        "`channel` nor SIGNOFF_DEFAULT_CHANNEL)."
                    ),
                    "401": _error("Missing or wrong SIGNOFF_API_TOKEN."),
                    "413": _TOO_LARGE,
                    "403": _error("The requester may not start the workflow."),
                    "404": _error("No such workflow, or the runs API is off."),
                    "503": _503,
                },
            }
        },
        "/api/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "responses": {"200": _json(_ref("OpenAPI"), "OpenAPI 3.1.")},
            }
        },
    }


def document() -> dict[str, Any]:
    """The OpenAPI document, as JSON values."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "signoff",
            "version": "1",
            "description": "Ask people in Slack to approve an action, from any language. A "
            "service's token may request and read approvals, never decide one.",
        },
        "components": {
            "schemas": _SCHEMAS,
            "securitySchemes": {
                "serviceToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A service's token ([services.NAME] token_env).",
                },
                "runsToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "SIGNOFF_API_TOKEN.",
                },
            },
        },
        "paths": {**_approval_paths(), **_run_paths()},
        "webhooks": {
            "approval.settled": {
                "post": {
                    "summary": "An approval the service asked for with a callback_url is settled",
                    "description": "Signed: `Signoff-Signature: t=<unix seconds>,v1=<hex "
                    'HMAC-SHA256 of "<t>.<raw body>">` with the service\'s webhook secret '
                    "([services.NAME] webhook_secret_env, or its token). Retried until a 2xx "
                    "answer: each try waits SIGNOFF_WEBHOOK_TIMEOUT (10 s) for it, redirects are "
                    "not followed, the next try comes 2, 4, 8 s ... later (doubling, at most an "
                    "hour) and after 30 tries (about 19 hours) it is given up; `signoff show` "
                    "tells where it stands. The delivery_id is the same on every try.",
                    "requestBody": {
                        "content": {"application/json": {"schema": _ref("Webhook")}},
                    },
                    "responses": {"200": {"description": "Received (any 2xx)."}},
                }
            }
        },
    }
