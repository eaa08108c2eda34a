"""What a server says before it is asked anything: how a probe tells "hung" from "not HTTP".

An HTTP server waits for the request; SSH, SMTP, FTP and many databases greet first.
When an HTTP request gets no answer, a greeting on the same port means the URL points at
another kind of service, which deserves its own sentence. An HTML page or a redirect where
an API should answer means a web UI, a login page or a proxy holds the port: its own sentence too.
"""

from __future__ import annotations

import asyncio
import re
from urllib.parse import urlsplit

from sparkadvisor.core.safetext import safe_text


def listen_while_waiting(url: str, timeout_s: float) -> asyncio.Task[bytes | None]:
    """A task that, once half of a request's `timeout_s` has passed without an answer, opens a
    second connection and listens for a greeting until the timeout; cancel it when the answer comes.
    The request keeps its whole time budget and a fast answer costs no second connection."""
    return asyncio.ensure_future(greeting(url, timeout_s / 2, after_s=timeout_s / 2))


async def greeting(url: str, wait_s: float, after_s: float = 0.0) -> bytes | None:
    """The first bytes the server at `url`'s host and port sends unasked within `wait_s`
    (starting `after_s` from now), or None (silence, refusal, or a URL without a host)."""
    await asyncio.sleep(after_s)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        async with asyncio.timeout(wait_s):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                return await reader.read(256) or None
            finally:
                writer.close()
    except (OSError, ValueError, TimeoutError, OverflowError):
        return None


def not_http_sentence(url: str, first_bytes: bytes) -> str:
    """"{url} is not an HTTP server: it greets with 'SSH-2.0-OpenSSH_9.6' (an SSH server)..."."""
    line = first_bytes.decode("utf-8", "replace").splitlines()[0] if first_bytes.strip() else repr(first_bytes)
    kind = " (an SSH server)" if first_bytes.startswith(b"SSH-") else ""
    return (f"{url} is not an HTTP server: it greets with '{safe_text(line[:60])}'{kind}; check the host and port "
            "vLLM listens on")


_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


def web_page(status: int | None, content_type: str, location: str, text: str) -> str | None:
    """What answered, when it is a web page or a redirect to one rather than an API (vLLM and the
    gateways answer JSON or plain text and never redirect): "an HTML page titled 'Sign in'
    (HTTP 200)", "a redirect to /login (HTTP 302)"; None for anything else."""
    if status is not None and 300 <= status < 400:
        where = f" to {safe_text(location[:80])}" if location else ""
        return f"a redirect{where} (HTTP {status})"
    head = text.lstrip()[:15].lower()
    if "html" not in content_type.lower() and not head.startswith(("<!doctype html", "<html")):
        return None
    found = _TITLE.search(text[:8192])
    title = " ".join(found.group(1).split())[:60] if found else ""
    named = f" titled '{safe_text(title)}'" if title else ""
    return f"an HTML page{named} (HTTP {status})"
