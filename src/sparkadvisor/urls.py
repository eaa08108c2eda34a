"""Every URL the user gives (options, settings files, the environment), checked in one place.

A URL is accepted when its scheme is http or https, it names a host, and its port is
1-65535; otherwise `UrlError` says, in one sentence, where the URL came from and what
would be valid. Credentials written into a URL (`http://user:secret@host`) still reach
the server, but never a terminal or a file: `redact` and `redact_urls` replace them.
Pure: no network, no heavy imports.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sparkadvisor.core.safetext import safe_text

SCHEMES = ("http", "https")
_HOST = re.compile(r"[A-Za-z0-9._~%-]+|\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9._~-]+)?\]")
"""A registered name or an IPv4 address, or a bracketed IPv6 literal (RFC 3986 host)."""
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")
"""The `user:password@` part of any URL inside free text."""
REDACTED = "***"
EXAMPLE = "such as http://spark1:8000"


class UrlError(ValueError):
    """A URL that cannot be used, as one sentence naming where it came from."""


def check_url(text: str, where: str) -> str:
    """`text` as a URL to connect to (a bare `host:port` gets http://), or a UrlError.

    `where` names the URL's origin in the sentence: "--vllm", "$SPARKADVISOR_VLLM_URL",
    "ANTHROPIC_BASE_URL in ~/.claude/settings.json"."""
    value = text.strip()
    url = value if "://" in value else f"http://{value}"
    start = f"{where} '{safe_text(redact(url))}'"
    if any(not ch.isprintable() or ch.isspace() for ch in url):
        raise UrlError(f"{start} contains spaces or control characters; give a URL {EXAMPLE}")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise UrlError(f"{start} cannot be read as a URL; give one {EXAMPLE}") from None
    if parts.scheme.lower() not in SCHEMES:
        raise UrlError(f"{start} is not an http:// or https:// URL; give one {EXAMPLE}")
    host, port = _host_port(parts.netloc.rpartition("@")[2])
    if not host or not _HOST.fullmatch(host):
        raise UrlError(f"{start} names no valid host; give one {EXAMPLE}")
    if port and not (port.isdecimal() and 1 <= int(port) <= 65535):
        raise UrlError(f"{start} has port {safe_text(port)}, which is not a number from 1 to 65535; "
                       f"give a URL {EXAMPLE}")
    return urlunsplit(parts._replace(scheme=parts.scheme.lower()))


def _host_port(hostport: str) -> tuple[str, str | None]:
    """("host", "port") from "host:port"; an IPv6 literal keeps its brackets; no port is None."""
    if hostport.startswith("["):
        host, _, rest = hostport.partition("]")
        host += "]"
        return (host, rest[1:]) if rest.startswith(":") else (host if not rest else "", None)
    host, colon, port = hostport.rpartition(":")
    return (host, port) if colon else (hostport, None)


def without_credentials(url: str) -> str:
    """`url` with its `user:password@` left out: the address a file may keep."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])) if "@" in parts.netloc else url


def redact(url: str) -> str:
    """`url` with any `user:password@` replaced by `***@`."""
    return redact_urls(url)


def redact_urls(text: str) -> str:
    """`text` with the credentials of every URL in it replaced by `***`."""
    return _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)


def redacted(data: Any) -> Any:
    """`data` (JSON-like) with the credentials of every URL in its strings replaced."""
    if isinstance(data, str):
        return redact_urls(data)
    if isinstance(data, dict):
        return {key: redacted(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [redacted(value) for value in data]
    return data


def url_option(text: str) -> str:
    """An argparse type: a URL checked by `check_url` (argparse names the option)."""
    import argparse

    try:
        return check_url(text, "URL")
    except UrlError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
