"""How the database's own errors are told and said: a database that cannot be reached
(`DatabaseUnavailable`, with what to check), a pool with no connection free (`DatabaseBusy`),
the database giving up a wait (a timeout, not a failure), and `database_down` for errors that
reached a caller untranslated."""

from __future__ import annotations

import sqlite3

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from .errors import DatabaseBusy, DatabaseUnavailable

__all__ = ["database_down", "pool_busy", "timed_out", "unavailable", "what_to_check"]

PG_TIMED_OUT = ("55P03", "57014")
"""PostgreSQL's lock_not_available (lock_timeout) and query_canceled (statement_timeout)."""


def timed_out(error: BaseException | None) -> bool:
    """True when the driver's `error` is the database giving up waiting, not a failure."""
    if isinstance(error, sqlite3.OperationalError):
        return "locked" in str(error) or "busy" in str(error)
    return getattr(error, "sqlstate", None) in PG_TIMED_OUT


def what_to_check(url: URL) -> str:
    """What to check when the database at `url` cannot be reached or opened."""
    if url.drivername == "sqlite":
        return (
            f"check that the directory of {url.database!r} exists and that this user "
            "may read and write there, and that SIGNOFF_DATABASE_URL names the right file"
        )
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    return (
        f"check that PostgreSQL is running and accepts connections at {where}, that "
        f"database {url.database!r} and user {url.username!r} exist, and that "
        "SIGNOFF_DATABASE_URL is right"
    )


def pool_busy(display_url: str, engine: Engine) -> DatabaseBusy:
    """No connection of this process's pool came free within the pool's timeout: every
    one was in use by other requests (a burst, or slow statements)."""
    pool = engine.pool
    size = getattr(pool, "size", lambda: None)()
    overflow = getattr(pool, "_max_overflow", None)
    count = f"all {size + overflow} " if size is not None and overflow is not None else ""
    waited = getattr(pool, "_timeout", None)
    after = f" for {waited:g} s" if isinstance(waited, int | float) else ""
    return DatabaseBusy(
        f"{display_url} is busy: {count}connections this process may open to it were "
        f"in use{after}; nothing was recorded, try again in a few seconds (if it keeps "
        "happening, look for slow statements on the server, or run fewer requests at once)",
        display_url,
    )


def unavailable(url: URL, error: BaseException) -> DatabaseUnavailable:
    """`error` (a driver's, or what caused it) as `DatabaseUnavailable`, saying what to check."""
    cause = getattr(error, "orig", None) or error
    said = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    verb = "open" if url.drivername == "sqlite" else "reach"
    display_url = url.render_as_string(hide_password=True)
    return DatabaseUnavailable(
        f"cannot {verb} the database {display_url} ({said}); {what_to_check(url)}",
        display_url,
    )


def database_down(error: BaseException) -> bool:
    """True when `error` (or what caused it) is the database going away, not the run failing.

    For errors that reached a caller untranslated, through code that is not this module's (a
    graph run saving its checkpoint): a dropped connection, psycopg's OperationalError, or no
    connection of the pool free within its timeout (the database busy: try again later).
    """
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, DatabaseUnavailable | sa.exc.TimeoutError) or (
            isinstance(e, sa.exc.DBAPIError) and e.connection_invalidated
        ):
            return True
        if type(e).__module__.startswith("psycopg") and any(
            c.__name__ == "OperationalError" for c in type(e).__mro__
        ):
            return True
        e = e.__cause__ or e.__context__
    return False
