"""The client waits as long as signoff's `Retry-After` asks before trying again (a 503: the
database busy, 2 s; unreachable, 10 s), never less than its own backoff, at most 30 s."""

from __future__ import annotations

from bot.client import MAX_RETRY_AFTER, _backoff


def test_retry_after_lengthens_the_wait_and_never_shortens_it() -> None:
    assert [_backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert _backoff(0, "2") == 2.0  # busy: 2 s, not 0.5
    assert _backoff(0, "10") == 10.0  # unreachable
    assert _backoff(3, "1") == 4.0  # the backoff when it is longer
    assert _backoff(0, "3600") == MAX_RETRY_AFTER == 30.0
    for odd in ("", "soon", "-1", "1.5", "Wed, 21 Oct 2026 07:28:00 GMT", "２"):
        assert _backoff(1, odd) == 1.0, odd
