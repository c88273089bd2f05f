"""Reading the policy file (`load_policy`) or text (`parse_policy`) into a checked `Policy`."""

from __future__ import annotations

import logging
import os
import tomllib

from ..errors import PolicyError
from ._file import _Reader, _syntax_error
from .model import Policy

__all__ = ["MINIMAL_POLICY", "load_policy", "parse_policy"]

log = logging.getLogger("signoff.policy")
# Shown where the process configures logging (`signoff run`, the demo); a one-shot CLI command
# does not repeat it on stderr before its one line.
log.addHandler(logging.NullHandler())
_warned: set[tuple[str, str]] = set()

MINIMAL_POLICY = """\
[actions.send_refund]
tier = "high"
approvers = ["U_ALICE"]
"""
"""The smallest useful policy, shown when the file is missing."""


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read and validate the policy file at `path`.

    Raises:
        PolicyError: the file is missing, unreadable or invalid (with file, line and key).
    """
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise PolicyError(
            "no policy file here; signoff denies every action until one names it. Create it "
            "(or point SIGNOFF_POLICY at yours), for example:\n\n" + MINIMAL_POLICY,
            source=source,
        ) from None
    except OSError as exc:
        raise PolicyError(
            f"cannot read the policy file: {exc.strerror or exc}", source=source
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise PolicyError(
            "is not UTF-8 text (TOML must be UTF-8)", source=source, line=line
        ) from None
    return parse_policy(text.removeprefix("\ufeff"), source)


def parse_policy(text: str, source: str = "signoff.toml") -> Policy:
    """Parse and validate policy text.

    Raises:
        PolicyError: never anything else; the message starts with `source:line:` and the key.
    """
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PolicyError("invalid TOML: nested too deeply", source=source) from None
    except ValueError as exc:  # TOMLDecodeError, and int() refusing thousands of digits
        raise _syntax_error(str(exc), text, source) from None
    policy = _Reader(text, source).policy(data)
    for name, rule in policy.actions.items():
        if rule.args is None and (source, name) not in _warned:
            _warned.add((source, name))
            log.warning(
                "%s: action %s declares no argument schema ([actions.%s.args]): its arguments "
                "and approvers' edits are not checked, and its auto-approval rules see them as "
                "they come",
                source,
                name,
                name,
            )
    return policy
