"""Local stand-ins for vLLM and a gateway: stdlib HTTP servers on 127.0.0.1 in a thread.

The vLLM fake serves the real endpoints (/health, /version, /v1/models, /metrics,
/v1/messages) and vLLM v1's Prometheus metric names; its counters move on every scrape,
so a rate over the probe's interval differs from the lifetime ratio.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TTFT_BOUNDS = (0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
ITL_BOUNDS = (0.01, 0.025, 0.05, 0.075, 0.1)


@dataclass
class VllmState:
    """What the fake vLLM serves; tests change fields to make it misbehave."""

    served: str = "RedHatAI/GLM-5.3-Flash-NVFP4"
    root: str = "RedHatAI/GLM-5.3-Flash-NVFP4"
    max_model_len: int = 262144
    mode: str = "ok"
    """ok, stall, error (500 everywhere), garbage (nginx's HTML welcome everywhere), web-ui (a sign-in page
    titled 'Open WebUI' everywhere), login (a 302 to /login everywhere), other-json (200 with a JSON object that
    is not vLLM's everywhere), dead-engine (/health 503)."""
    api_key: str | None = None
    hits: float = 100.0
    queries: float = 1000.0
    hits_per_scrape: float = 950.0
    queries_per_scrape: float = 1000.0
    running: int = 1
    generation_per_scrape: float = 10.0
    generation_tok_s: float | None = None
    """When set, vllm:generation_tokens_total grows with the clock at this rate, as a real vLLM's does,
    instead of by `generation_per_scrape` on each scrape: a probe whose interval runs long on a loaded
    machine then still measures this rate."""
    started: float = field(default_factory=time.monotonic)
    ttft_per_scrape: tuple[float, ...] = (0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    """New TTFT observations per bucket (len(TTFT_BOUNDS) + 1, the last is +Inf) on each scrape."""
    spec: bool = True
    spec_positions: int = 0
    """Tokens proposed per pass, exposed as vLLM's per-position acceptance counters (0: none exposed)."""
    cache_config: dict[str, str] | None = None
    """Labels of vllm:cache_config_info (CacheConfig.metrics_info(): str() of each field), when exposed."""
    scrapes: int = 0
    seen_auth: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def metrics_text(self) -> str:
        """Prometheus text as vLLM writes it, with counters advanced once."""
        self.scrapes += 1
        n = self.scrapes
        hits, queries = self.hits + n * self.hits_per_scrape, self.queries + n * self.queries_per_scrape
        label = f'engine="0",model_name="{self.served}"'
        lines = [
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.",
            "# TYPE vllm:prefix_cache_queries_total counter",
            f"vllm:prefix_cache_queries_total{{{label}}} {queries}",
            "# TYPE vllm:prefix_cache_hits_total counter",
            f"vllm:prefix_cache_hits_total{{{label}}} {hits}",
            "# TYPE vllm:kv_cache_usage_perc gauge",
            f"vllm:kv_cache_usage_perc{{{label}}} 0.31",
            f"vllm:num_requests_running{{{label}}} {self.running}",
            f"vllm:num_requests_waiting{{{label}}} 0.0",
            f"vllm:generation_tokens_total{{{label}}} {500 + self._generated(n)}",
            f"vllm:prompt_tokens_total{{{label}}} {queries}",
        ]
        lines += _histogram("vllm:time_to_first_token_seconds", TTFT_BOUNDS,
                            [5 + n * c for c in self.ttft_per_scrape], label)
        lines += _histogram("vllm:inter_token_latency_seconds", ITL_BOUNDS, [0, 0, 40 * n, 10 * n, 0, 0], label)
        if self.spec:
            lines += [f"vllm:spec_decode_num_draft_tokens_total{{{label}}} {70 * n}",
                      f"vllm:spec_decode_num_accepted_tokens_total{{{label}}} {52 * n}"]
            lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{label},position="{i}"}} {5 * n}'
                      for i in range(self.spec_positions)]
        if self.cache_config is not None:
            info = ",".join(f'{k}="{v}"' for k, v in self.cache_config.items())
            lines += ["# TYPE vllm:cache_config_info gauge", f"vllm:cache_config_info{{{info}}} 1.0"]
        return "\n".join(lines) + "\n"

    def _generated(self, scrapes: int) -> float:
        if self.generation_tok_s is None:
            return scrapes * self.generation_per_scrape
        return self.generation_tok_s * (time.monotonic() - self.started)


def _histogram(name: str, bounds: tuple[float, ...], per_bucket: list[float], label: str) -> list[str]:
    lines, total = [f"# TYPE {name} histogram"], 0.0
    for bound, count in zip((*bounds, "+Inf"), per_bucket, strict=True):
        total += count
        lines.append(f'{name}_bucket{{{label},le="{bound}"}} {total}')
    lines += [f"{name}_count{{{label}}} {total}", f"{name}_sum{{{label}}} {total * 3.0}"]
    return lines


class _Handler(BaseHTTPRequestHandler):
    state: Any

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: str, kind: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self._answer()

    def _answer(self) -> None:
        raise NotImplementedError

    def _other_service(self, mode: str) -> None:
        """What a port that is not vLLM or a gateway answers: a web UI, a login redirect, another JSON API."""
        if mode == "login":
            self.send_response(302)
            self.send_header("Location", "/login?next=" + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if mode == "other-json":
            return self._send(200, json.dumps({"hello": "world"}))
        page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Open WebUI</title></head>"
                "<body><form action=\"/login\">Sign in</form></body></html>")
        return self._send(200, page, "text/html; charset=utf-8")


class _VllmHandler(_Handler):
    def _answer(self) -> None:
        s: VllmState = self.state
        auth = self.headers.get("Authorization") or ""
        s.seen_auth.append(auth)
        if s.mode == "stall":
            s.release.wait(30)
            return
        if s.mode == "error":
            return self._send(500, f"Internal Server Error; you sent {auth}", "text/plain")
        if s.mode == "garbage":
            return self._send(200, f"<html><body>Welcome to nginx! {auth}</body></html>", "text/html")
        if s.mode in ("web-ui", "login", "other-json"):
            return self._other_service(s.mode)
        if s.api_key and self.path.startswith("/v1") and auth != f"Bearer {s.api_key}":
            return self._send(401, json.dumps({"error": f"Unauthorized, got {auth}"}))
        self._route(s)

    def _route(self, s: VllmState) -> None:
        if self.path == "/health":
            return self._send(503 if s.mode == "dead-engine" else 200, "")
        if self.path == "/version":
            return self._send(200, json.dumps({"version": "0.33.0"}))
        if self.path == "/v1/models":
            card = {"id": s.served, "object": "model", "owned_by": "vllm", "root": s.root, "parent": None,
                    "max_model_len": s.max_model_len}
            return self._send(200, json.dumps({"object": "list", "data": [card]}))
        if self.path == "/metrics":
            return self._send(200, s.metrics_text(), "text/plain; version=0.0.4")
        if self.path == "/v1/messages":
            return self._send(200, json.dumps({"id": "msg_1", "type": "message", "role": "assistant",
                                               "content": [{"type": "text", "text": "p"}]}))
        self._send(404, json.dumps({"detail": "Not Found"}))


@dataclass
class GatewayState:
    """A free-claude-code-like gateway: GET /health -> {"status": "healthy"}."""

    mode: str = "ok"
    """ok, stall, error (502 everywhere), key (401 JSON everywhere, as LiteLLM's /health without a key),
    web-ui (a sign-in page everywhere)."""
    release: threading.Event = field(default_factory=threading.Event)


class _GatewayHandler(_Handler):
    def _answer(self) -> None:
        s: GatewayState = self.state
        if s.mode == "stall":
            s.release.wait(30)
            return
        if s.mode == "error":
            return self._send(502, "Bad Gateway", "text/plain")
        if s.mode == "key":
            return self._send(401, json.dumps({"error": {"message": "Authentication Error, No api key passed in."}}))
        if s.mode == "web-ui":
            return self._other_service(s.mode)
        if self.path == "/health":
            return self._send(200, json.dumps({"status": "healthy"}))
        self._send(404, "{}")


class Server:
    """A handler class served on 127.0.0.1 from a daemon thread."""

    def __init__(self, handler: type[_Handler], state: Any):
        cls = type("Bound", (handler,), {"state": state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), cls)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.state = state
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Let stalled handlers go and stop serving."""
        self.state.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def vllm_server(**changes: Any) -> Server:
    """A fake vLLM on a free port."""
    return Server(_VllmHandler, VllmState(**changes))


def gateway_server(**changes: Any) -> Server:
    """A fake gateway on a free port."""
    return Server(_GatewayHandler, GatewayState(**changes))


def closed_port_url() -> str:
    """The URL of a port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class NotHttpServer:
    """A TCP port that answers every connection with an SSH banner and hangs up."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        """Stop accepting."""
        self.sock.close()
