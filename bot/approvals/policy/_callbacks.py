"""Where a service's webhooks may go: the origins of `[services.NAME] callback_urls`, matched
by scheme, host and port, and the addresses refused unless `callback_private = true` (private,
loopback, link-local and other non-public ones). Pure: the request's check, and what an
address a name resolved to is (`address_kind`, for the check at delivery), no I/O."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from dataclasses import dataclass

__all__ = [
    "ORIGINS_SHAPE",
    "CallbackOrigin",
    "address_kind",
    "callback_problem",
    "parse_origin",
    "private_hint",
]

ORIGINS_SHAPE = (
    'must be an array of origins like "https://hooks.example.com", '
    '"https://*.example.com:8443" or "http://127.0.0.1:*" (scheme, host, port; a '
    "path is not part of it)"
)
"""What `callback_urls` must be, said when it is not."""

_ORIGIN = re.compile(
    r"(?P<scheme>https?)://(?P<wild>\*\.)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])"
    r"(?::(?P<port>[0-9]{1,5}|\*))?/?"
)
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class CallbackOrigin:
    """One entry of `callback_urls`: `https://hooks.example.com`, `https://*.example.com:8443`,
    `http://127.0.0.1:*`."""

    scheme: str
    """`http` or `https`."""
    host: str
    """Lowercase; an IPv6 address without its brackets."""
    subdomains: bool = False
    """`*.host`: any name under `host` (not `host` itself)."""
    port: int | None = None
    """The port; None: any port (`:*`). Without one in the entry, the scheme's (80, 443)."""
    text: str = ""
    """As written in the policy."""

    def matches(self, scheme: str, host: str, port: int) -> bool:
        if scheme != self.scheme or (self.port is not None and port != self.port):
            return False
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host


def parse_origin(text: str) -> CallbackOrigin | None:
    """An entry of `callback_urls`, or None when it is not `scheme://host[:port]`."""
    found = _ORIGIN.fullmatch(text.strip())
    if found is None:
        return None
    scheme, port = found["scheme"], found["port"]
    if port is not None and port != "*" and not 0 < int(port) < 65536:
        return None
    return CallbackOrigin(
        scheme=scheme,
        host=found["host"].strip("[]").lower().rstrip("."),
        subdomains=found["wild"] is not None,
        port=None if port == "*" else int(port) if port else _DEFAULT_PORTS[scheme],
        text=text.strip(),
    )


def address_kind(address: str) -> str | None:
    """What kind of address the IP `address` is when a webhook needs `callback_private = true`
    to go there ("a loopback", "a private", "a link-local", "a non-public"); None for a public
    address, or a name (checked once it is resolved)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_global and not ip.is_multicast:
        return None
    if ip.is_loopback:
        return "a loopback"
    if ip.is_link_local:
        return "a link-local"
    return "a private" if ip.is_private else "a non-public"


def private_hint(service: str) -> str:
    """What to configure for a webhook to go to a non-public address."""
    return (
        f"webhooks go to such addresses only when [services.{service}] says callback_private = true"
    )


def callback_problem(
    url: str, origins: tuple[CallbackOrigin, ...], *, allow_private: bool, service: str
) -> str | None:
    """Why `url` may not be `service`'s `callback_url` (None when it may): its scheme, host
    and port match none of `origins`, or its host is an address `address_problem` refuses."""
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return f"has a port that is not a number from 1 to 65535: {parts.netloc!r}"
    if not any(o.matches(parts.scheme, host, port) for o in origins):
        shown = f"{parts.scheme}://{host if ':' not in host else f'[{host}]'}:{port}"
        allowed = ", ".join(o.text for o in origins) or "none"
        return (
            f"{shown} is not allowed for service {service} (allowed: {allowed}); add its "
            f"origin to callback_urls in [services.{service}] of the policy to allow it"
        )
    kind = None if allow_private else address_kind(host)
    return f"{host} is {kind} address; {private_hint(service)}" if kind else None
