"""Addresses an export writes: the head and workers, the ConnectX-7 netdev, the gateway URL.

Each check returns the value or raises ValueError with one sentence a person can act on;
the CLI and the TUI's export dialog use the same checks.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
NETDEV = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}")
"""Linux interface names: at most 15 characters (IFNAMSIZ 16 with the NUL), no '/', ':' or spaces."""


def address(text: str) -> str:
    """A cluster node's IPv4 or IPv6 address, or its host name (RFC 1123 labels): one the other nodes reach, so
    not a loopback address, localhost or the unspecified 0.0.0.0 (which would also open llama.cpp's
    unauthenticated RPC port to every network)."""
    value = text.strip()
    try:
        ip = ipaddress.ip_address(value.strip("[]"))
    except ValueError:
        ip = None
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 is 127.0.0.1
    if mapped is not None:
        ip = mapped
    if ip is not None and (ip.is_loopback or ip.is_unspecified):
        raise ValueError(f"{text!r} is {'a loopback' if ip.is_loopback else 'the unspecified'} address, which the "
                         "other nodes cannot reach; give the node's address on the link between them (e.g. "
                         "192.168.100.10)")
    if ip is not None:
        return str(ip)
    if value.rstrip(".").lower() == "localhost":
        raise ValueError(f"{text!r} names this machine only, which the other nodes cannot reach; give the node's "
                         "address on the link between them (e.g. 192.168.100.10)")
    labels = value.rstrip(".").split(".")
    if value and len(value) <= 253 and all(HOST_LABEL.fullmatch(label) for label in labels) \
            and not labels[-1].isdigit():
        return value
    raise ValueError(f"{text!r} is not an IP address or host name (e.g. 192.168.100.10 or spark-1)")


def addresses(text: str) -> tuple[str, ...]:
    """A comma-separated list of addresses (the workers, rank 1 first)."""
    parts = [p for p in (part.strip() for part in text.split(",")) if p]
    if not parts:
        raise ValueError(f"{text!r} names no address; give the workers' addresses separated by commas")
    return tuple(address(part) for part in parts)


def netdev(text: str) -> str:
    """A network interface name such as enp1s0f1np1."""
    if not NETDEV.fullmatch(text):
        raise ValueError(f"{text!r} is not a network interface name (up to 15 letters, digits, '.', '_' or '-', "
                         "e.g. enp1s0f1np1 from ibdev2netdev)")
    return text


def gateway_url(text: str, where: str = "the gateway URL") -> str:
    """An http:// or https:// URL (checked by `sparkadvisor.urls`, the one URL check) that an export can
    write: no credentials (tokens go in environment variables) and no query, since Claude Code appends
    /v1/messages to it."""
    from sparkadvisor.urls import check_url

    url = check_url(text, where)
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{where} carries credentials, which an export would write into a file; give the URL "
                         "without them and put the token in an environment variable")
    if parts.query or parts.fragment:
        raise ValueError(f"{where} {parts.scheme}://{parts.netloc}{parts.path} must not carry a query or "
                         "fragment: Claude Code appends /v1/messages to it")
    return url.rstrip("/")
