"""The PostgreSQL server of the tests, a fresh schema per test, and the one "in CI" rule.

PostgreSQL is `postgresql://postgres@127.0.0.1:5432/test` unless `SIGNOFF_TEST_PG_URL` says
otherwise. A test gets a schema of its own, selected with `search_path` in the URL it is given
(`?options=-csearch_path=...`), and dropped afterwards.

The rule: under `CI=true` a PostgreSQL test never skips; an unreachable server fails it loudly
(`require_server`), and the root conftest turns any other skip of a `postgres` test into a
failure. Locally it skips, saying why.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
from collections.abc import Callable

import psycopg
import pytest
from sqlalchemy.engine import make_url

__all__ = [
    "IN_CI",
    "PG_URL",
    "address",
    "admin_conninfo",
    "drop_schema",
    "new_schema",
    "require_server",
    "schema_with_drop",
    "url_on",
]

PG_URL = os.environ.get("SIGNOFF_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
"""The test server (`SIGNOFF_TEST_PG_URL`)."""
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
"""`CI` is set to anything but empty, 0, false or no: PostgreSQL tests must run, never skip."""

_session_tag = f"{os.getpid()}_{secrets.token_hex(3)}"
_schema_numbers = itertools.count(1)


def admin_conninfo() -> str:
    """`PG_URL` as psycopg takes it (no SQLAlchemy driver name), on the default schema."""
    return make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)


def require_server() -> str:
    """`PG_URL` once the server answered; skip when it does not (fail under CI)."""
    try:
        with psycopg.connect(admin_conninfo(), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as e:
        message = f"PostgreSQL at {make_url(PG_URL).render_as_string()} is unreachable: {e}"
        if IN_CI:
            pytest.fail(f"{message} (CI=true: PostgreSQL tests must run, not skip)", pytrace=False)
        pytest.skip(f"{message}; set SIGNOFF_TEST_PG_URL to run these tests")
    return PG_URL


def new_schema(prefix: str = "signoff") -> str:
    """A new, empty schema named `{prefix}_{pid}_{random}_{n}` (lower case, `[a-z0-9_]`)."""
    name = f"{prefix}_{_session_tag}_{next(_schema_numbers)}"
    schema = re.sub(r"[^a-z0-9_]", "_", name.lower())
    with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema


def drop_schema(schema: str) -> None:
    """Drop `schema` and everything in it (nothing happens when it is gone already)."""
    with psycopg.connect(admin_conninfo(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def url_on(schema: str, *, port: int | None = None) -> str:
    """`PG_URL` on `schema` (first on `search_path`), through a local `port` if given."""
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    if port is not None:
        url = url.set(host="127.0.0.1", port=port)
    return url.render_as_string(hide_password=False)


def address() -> tuple[str, int]:
    """The server's host and port."""
    url = make_url(PG_URL)
    return url.host or "127.0.0.1", url.port or 5432


def schema_with_drop(prefix: str) -> tuple[str, Callable[[], None]]:
    """`new_schema(prefix)`, and a function that drops it."""
    schema = new_schema(prefix)
    return schema, lambda: drop_schema(schema)
