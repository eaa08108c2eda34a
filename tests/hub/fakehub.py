"""A local Hugging Face Hub on 127.0.0.1 that speaks the protocol huggingface_hub 2.x uses.

Model info at /api/models/{repo}[/revision/{rev}]; files at /{repo}/resolve/{rev}/{file}
with HEAD answering ETag, X-Repo-Commit and Content-Length, GET honouring Range with 206
and Content-Range; errors carry X-Error-Code (RepoNotFound, GatedRepo, RevisionNotFound,
EntryNotFound) as the real hub does (research/ecosystem.md 1.4). Safetensors files are
virtual: their header bytes followed by zeros up to the size the header describes.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


@dataclass
class FakeFile:
    """A file: its leading bytes, and its full size (zeros after the leading bytes)."""

    head: bytes
    size: int

    def read(self, start: int, end: int) -> bytes:
        """Bytes start..end inclusive."""
        end = min(end, self.size - 1)
        part = self.head[start:end + 1]
        return part + b"\0" * (end + 1 - start - len(part))


@dataclass
class FakeRepo:
    """One model repo at one commit."""

    files: dict[str, FakeFile]
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    gated: bool = False
    allowed_tokens: set[str] = field(default_factory=set)
    branches: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> str | None:
        """The commit a branch, tag or sha names."""
        if revision == self.sha:
            return self.sha
        return {"main": self.sha, **self.branches}.get(revision)


def small(data: bytes | str) -> FakeFile:
    """A real small file (config.json, an index)."""
    raw = data.encode() if isinstance(data, str) else data
    return FakeFile(raw, len(raw))


class FakeHub:
    """The server: repos by id, optional latency per request and stalls by path fragment."""

    def __init__(self, latency_s: float = 0.0):
        self.repos: dict[str, FakeRepo] = {}
        self.latency_s = latency_s
        self.stalls: dict[str, float] = {}
        """Seconds to wait before answering any request whose path holds the key."""
        self.download_stalls: dict[str, float] = {}
        """The same for downloads (GET) only: metadata (HEAD) answers at once."""
        self.garbage: set[str] = set()
        """Path fragments answered with 200 and a body that is not JSON."""
        self.cutoffs: set[str] = set()
        """Path fragments whose downloads send half their body, then close the connection."""
        self.requests: list[tuple[str, str, bool]] = []
        self.auth_headers: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        """The endpoint to put in HF_ENDPOINT."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _serve(self, body: bool) -> None:
            with hub._lock:
                hub.in_flight += 1
                hub.max_in_flight = max(hub.max_in_flight, hub.in_flight)
            try:
                self._route(body)
            finally:
                with hub._lock:
                    hub.in_flight -= 1

        def _route(self, body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            auth = self.headers.get("authorization")
            hub.requests.append((self.command, path, auth is not None))
            if auth:
                hub.auth_headers.append(auth)
            for fragment, seconds in [*hub.stalls.items(), *(hub.download_stalls.items() if body else ())]:
                if fragment in path:
                    time.sleep(seconds)
            if any(fragment in path for fragment in hub.garbage):
                return self._send(200, {"Content-Type": "application/json"}, b"<html>Welcome to nginx!</html>", body)
            if hub.latency_s:
                time.sleep(hub.latency_s)
            if match := re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/(.+))?", path):
                return self._model_info(match.group(1), match.group(2) or "main", body)
            if match := re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
                return self._file(match.group(1), match.group(2), match.group(3), body)
            self._error(404, "EntryNotFound", "no such route", body)

        def _model_info(self, repo_id: str, revision: str, body: bool) -> None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(401, "RepoNotFound", "Repository not found", body)
            sha = repo.resolve(revision)
            if sha is None:
                return self._error(404, "RevisionNotFound", "Invalid rev id", body)
            info = {"_id": "x", "id": repo_id, "modelId": repo_id, "sha": sha, "private": False,
                    "gated": "manual" if repo.gated else False, "downloads": 0, "likes": 0, "tags": [],
                    "siblings": [{"rfilename": name} for name in sorted(repo.files)]}
            self._send(200, {"Content-Type": "application/json"}, json.dumps(info).encode(), body)

        def _file(self, repo_id: str, revision: str, filename: str, body: bool) -> None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(401, "RepoNotFound", "Repository not found", body)
            sha = repo.resolve(revision)
            if sha is None:
                return self._error(404, "RevisionNotFound", "Invalid rev id", body)
            if repo.gated:
                token = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
                if not token:
                    return self._error(401, "GatedRepo", "Access to this model is restricted", body)
                if token not in repo.allowed_tokens:
                    return self._error(403, "GatedRepo", "Access to this model is restricted", body)
            file = repo.files.get(filename)
            if file is None:
                return self._error(404, "EntryNotFound", "Entry not found", body, {"X-Repo-Commit": sha})
            etag = hashlib.sha256(file.head + str(file.size).encode()).hexdigest()
            headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
            ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("range") or "")
            if ranged and body:
                start = int(ranged.group(1))
                end = int(ranged.group(2) or file.size - 1)
                data = file.read(start, end)
                headers["Content-Range"] = f"bytes {start}-{start + len(data) - 1}/{file.size}"
                if any(fragment in filename for fragment in hub.cutoffs):  # says the whole length, sends half
                    self._send(206, headers, data[: len(data) // 2], body, length=len(data))
                    self.wfile.flush()
                    self.close_connection = True
                    return self.connection.shutdown(socket.SHUT_RDWR)
                return self._send(206, headers, data, body)
            if body and file.size > 50_000_000:
                return self._error(416, "RangeRequired", "this fake serves large files by range only", body)
            self._send(200, headers, file.read(0, file.size - 1) if body else b"", body, length=file.size)

        def _error(self, status: int, code: str, message: str, body: bool, extra: dict | None = None) -> None:
            data = json.dumps({"error": message}).encode()
            headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json",
                       **(extra or {})}
            self._send(status, headers, data, body)

        def _send(self, status: int, headers: dict, data: bytes, body: bool, length: int | None = None) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data) if length is None else length))
            self.end_headers()
            if body:
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

    return Handler
