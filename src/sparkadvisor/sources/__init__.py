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
    """$SPARKADVISOR_VLLM_URL, else vLLM's default address; costs no network import."""
    return os.environ.get(VLLM_URL_ENV) or DEFAULT_VLLM_URL
