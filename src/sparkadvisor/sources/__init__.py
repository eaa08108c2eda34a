"""I/O at the edges: everything that reaches a network or a file outside the catalog.

Each module turns every failure into one typed error or finding with a sentence a person
can act on; the pure core judges what they fetch.
"""

from __future__ import annotations

import os

DEFAULT_VLLM_URL = "http://127.0.0.1:8000"
"""vLLM's own default address (`vllm serve --port 8000`)."""
VLLM_URL_ENV = "SPARKADVISOR_VLLM_URL"
"""Where the probe and the TUI's status line look for vLLM when no URL is given."""


def default_vllm_url() -> str:
    """$SPARKADVISOR_VLLM_URL, else vLLM's default address, checked; costs no network import.

    Raises `sparkadvisor.urls.UrlError` (one sentence naming the variable) for a URL that
    cannot be used, e.g. a port above 65535."""
    from sparkadvisor.urls import check_url

    value = os.environ.get(VLLM_URL_ENV)
    return check_url(value, f"${VLLM_URL_ENV}") if value else DEFAULT_VLLM_URL
