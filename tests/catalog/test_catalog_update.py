"""`catalog update|info|rollback` against a catalog server on 127.0.0.1, as a user meets them."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from sparkadvisor import paths
from sparkadvisor.cli import main

BUNDLED = Path(__file__).resolve().parents[2] / "catalog.toml"
TEXT = BUNDLED.read_text(encoding="utf-8")
BUNDLED_DATE = "2026-12-01"

NEW_MODEL = '''
[sources.new-card]
title = "A new model's card"
url = "https://huggingface.co/org/new-model"
kind = "model-card"

[[models]]
id = "new-model-7b"
name = "New-Model-7B"
family = "New"
capability_none_published = "a test model"
source = "new-card"

[models.params]
total_b = 7
source = "new-card"

[[builds]]
id = "new-model-7b-bf16"
model = "new-model-7b"
repo = "org/new-model"
format = "bf16"
source = "new-card"
'''


def newer(date: str = "2026-12-24", extra: str = NEW_MODEL) -> bytes:
    """The bundled catalog with a later date and one more model and build."""
    text = TEXT.replace(f'catalog_date = "{BUNDLED_DATE}"', f'catalog_date = "{date}"', 1)
    return (text + extra).encode()


class CatalogServer:
    """Serves one response at /catalog.toml: whole, broken off, stalled or an HTTP error."""

    def __init__(self) -> None:
        self.body, self.mode, self.status = b"", "whole", 200
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.answer(self)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/catalog.toml"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(self.status)
        handler.send_header("Content-Type", "application/toml")
        handler.send_header("Content-Length", str(len(self.body)))
        handler.end_headers()
        if self.mode == "whole":
            handler.wfile.write(self.body)
        elif self.mode == "truncated":
            handler.wfile.write(self.body[: len(self.body) // 2])
            handler.close_connection = True
        elif self.mode == "stall":
            handler.wfile.write(self.body[:1000])
            handler.wfile.flush()
            time.sleep(3)


@pytest.fixture
def server() -> Iterator[CatalogServer]:
    serving = CatalogServer()
    yield serving
    serving.httpd.shutdown()
    serving.httpd.server_close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def update(capsys: pytest.CaptureFixture[str], url: str, *more: str, timeout: str = "10") -> tuple[int, str, str]:
    """A generous timeout, so a loaded machine's slow parse is no failure; the stall case passes 1 s."""
    return run(capsys, "catalog", "update", "--url", url, "--timeout", timeout, *more)


def installed() -> Path:
    return paths.catalog_updates_dir() / "catalog.toml"


def one_sentence(err: str, still: str) -> None:
    """A failure is one line, one sentence, ending with which catalog stays in use."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sparkadvisor: ") and lines[0].endswith(f"; {still}.")


def test_a_newer_valid_catalog_installs_says_what_changed_and_is_used(server, capsys):
    server.body = newer()
    code, out, _ = update(capsys, server.url)
    assert code == 0
    assert f"Installed the catalog dated 2026-12-24 from {server.url}" in out
    assert f"replaces the bundled catalog dated {BUNDLED_DATE}" in out
    assert "models    1 added (new-model-7b)" in out and "builds    1 added (new-model-7b-bf16)" in out
    assert "caveats   unchanged" in out
    assert installed().read_bytes() == server.body
    code, out, _ = run(capsys, "catalog", "info")
    assert "Catalog in use: the update dated 2026-12-24" in out and server.url in out
    assert f"bundled   dated {BUNDLED_DATE}" in out
    code, out, _ = run(capsys, "rank", "--json")
    assert "new-model-7b-bf16" in out


def test_the_report_names_removed_entries(server, capsys):
    caveat = '\n[[caveats]]\nid = "new-caveat"\nkind = "quality-loss"\nseverity = "info"\n' \
             'explanation = "A test caveat."\nsource = "new-card"\n'
    server.body = newer(extra=NEW_MODEL + caveat)
    code, out, _ = update(capsys, server.url)
    assert code == 0 and "caveats   1 added (new-caveat)" in out
    server.body = newer("2026-12-31")
    code, out, _ = update(capsys, server.url)
    assert code == 0 and "caveats   1 removed (new-caveat)" in out
    assert "models    unchanged" in out


@pytest.mark.parametrize(("mode", "body", "words"), [
    ("whole", b'schema_version = 1\ncatalog_date = "2027-01-01"\n[[models]]\nid = "m"\ncolour = "red"\n',
     ["is not valid: line 3", "models[0] \"m\"", "(and 4 more problems)"]),
    ("whole", b"<html><body>Rate limited</body></html>", ["is not valid: line 1", "not valid TOML"]),
    ("whole", b'schema_version = 1\ncatalog_date = "2027-01-01"\n', ["not a whole catalog"]),
    ("truncated", None, ["ended before the whole file arrived"]),
    ("stall", None, ["stopped answering for 1 s"]),
])
def test_a_bad_download_leaves_the_catalog_in_use(server, capsys, mode, body, words):
    server.mode, server.body = mode, body if body is not None else newer()
    code, out, err = update(capsys, server.url, timeout="1" if mode == "stall" else "10")
    assert code == 1 and out == ""
    one_sentence(err, f"still using the bundled catalog dated {BUNDLED_DATE}")
    for word in words:
        assert word in err
    assert not installed().exists()


def test_an_http_error_is_one_sentence(server, capsys):
    server.status, server.body = 404, b"Not Found"
    code, _, err = update(capsys, server.url)
    assert code == 1
    one_sentence(err, f"still using the bundled catalog dated {BUNDLED_DATE}")
    assert "answered HTTP 404" in err


def test_no_network_is_one_sentence():
    import io
    from contextlib import redirect_stderr

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens there
    stream = io.StringIO()
    with redirect_stderr(stream):
        code = main(["catalog", "update", "--url", f"http://127.0.0.1:{port}/catalog.toml", "--timeout", "1"])
    assert code == 1
    one_sentence(stream.getvalue(), f"still using the bundled catalog dated {BUNDLED_DATE}")
    assert "could not reach 127.0.0.1" in stream.getvalue()


def test_a_failed_update_after_a_good_one_keeps_the_update(server, capsys):
    server.body = newer()
    assert update(capsys, server.url)[0] == 0
    before = hashlib.sha256(installed().read_bytes()).hexdigest()
    server.mode = "truncated"
    server.body = newer("2026-12-31")
    code, _, err = update(capsys, server.url)
    assert code == 1
    one_sentence(err, "still using the updated catalog dated 2026-12-24")
    assert hashlib.sha256(installed().read_bytes()).hexdigest() == before


def test_the_same_catalog_again_installs_nothing(server, capsys):
    server.body = TEXT.encode()
    code, out, _ = update(capsys, server.url)
    assert code == 0 and out.startswith(f"Already up to date: {server.url} holds the catalog in use")
    assert not installed().exists()


def test_an_older_catalog_is_refused_unless_forced(server, capsys):
    server.body = newer("2026-01-01")
    code, _, err = update(capsys, server.url)
    assert code == 1 and "older than the one in use (2026-12-01)" in err and "--force" in err
    code, _, _ = update(capsys, server.url, "--force")
    assert code == 0
    _, out, _ = run(capsys, "catalog", "info")
    assert "Catalog in use: the bundled catalog" in out and "the bundled catalog is newer and wins" in out


def test_rollback_puts_the_previous_catalog_back(server, capsys):
    server.body = newer()
    update(capsys, server.url)
    server.body = newer("2026-12-31", NEW_MODEL.replace("new-model-7b", "newer-model-9b"))
    code, out, _ = update(capsys, server.url)
    assert code == 0 and "models    1 added (newer-model-9b), 1 removed (new-model-7b)" in out
    code, out, _ = run(capsys, "catalog", "rollback")
    assert code == 0 and "Now using the updated catalog dated 2026-12-24" in out
    code, out, _ = run(capsys, "catalog", "rollback")
    assert code == 0 and f"Now using the bundled catalog dated {BUNDLED_DATE}" in out
    code, _, err = run(capsys, "catalog", "rollback")
    assert code == 1 and "no catalog update is installed" in err


def test_info_as_json_names_the_catalog_in_use(capsys):
    code, out, _ = run(capsys, "catalog", "info", "--json")
    data = json.loads(out)
    assert code == 0 and data["updated"] is False and data["catalog_date"] == BUNDLED_DATE
    assert data["counts"]["models"] >= 1 and Path(data["path"]).name == "catalog.toml"


def test_an_update_that_would_break_the_users_imports_is_refused(server, capsys):
    server.body = newer()
    assert update(capsys, server.url)[0] == 0
    paths.user_catalog_path().write_text('[[builds]]\nid = "mine"\nmodel = "new-model-7b"\nrepo = "me/new"\n'
                                         'format = "fp8"\nsource = "new-card"\n', encoding="utf-8")
    server.body = newer("2026-12-31", extra="")
    code, _, err = update(capsys, server.url)
    assert code == 1
    one_sentence(err, "still using the updated catalog dated 2026-12-24")
    assert f"your catalog {paths.user_catalog_path()} would no longer load" in err and "new-model-7b" in err


def test_the_address_comes_from_the_environment_and_is_checked(server, capsys, monkeypatch):
    server.body = newer()
    monkeypatch.setenv("SPARKADVISOR_CATALOG_URL", server.url)
    code, out, _ = run(capsys, "catalog", "update", "--timeout", "10")
    assert code == 0 and f"from {server.url}" in out
    monkeypatch.setenv("SPARKADVISOR_CATALOG_URL", "ftp://mirror.example/catalog.toml")
    code, _, err = run(capsys, "catalog", "update")
    assert code == 1 and "$SPARKADVISOR_CATALOG_URL 'ftp://mirror.example/catalog.toml' is not an http" in err
    one_sentence(err, "still using the updated catalog dated 2026-12-24")


def test_credentials_in_the_address_are_never_printed_or_kept(server, capsys):
    secret = server.url.replace("http://", "http://mirror:s3cret-token@")
    server.status, server.body = 404, b"Not Found"
    code, out, err = update(capsys, secret)
    assert code == 1 and "s3cret" not in out + err and "http://***@127.0.0.1" in err
    server.status, server.body = 200, newer()
    code, out, err = update(capsys, secret)
    assert code == 0 and "s3cret" not in out + err
    code, out, err = update(capsys, secret, "--json")
    assert "s3cret" not in out + err
    for command in (["catalog", "info"], ["catalog", "info", "--json"]):
        _, out, err = run(capsys, *command)
        assert "s3cret" not in out + err and "http://***@127.0.0.1" in out
    assert not any("s3cret" in p.read_text(encoding="utf-8", errors="replace")
                   for p in paths.catalog_updates_dir().iterdir() if p.suffix == ".json")


def test_a_rollback_that_would_break_the_users_imports_is_refused(server, capsys):
    """The user built on a model only the newer update has: rolling back would leave every command failing."""
    server.body = newer()
    update(capsys, server.url)
    server.body = newer("2026-12-31", NEW_MODEL.replace("new-model-7b", "newer-model-9b"))
    assert update(capsys, server.url)[0] == 0
    paths.user_catalog_path().write_text('[[builds]]\nid = "mine"\nmodel = "newer-model-9b"\nrepo = "me/newer"\n'
                                         'format = "fp8"\nsource = "new-card"\n', encoding="utf-8")
    code, _, err = run(capsys, "catalog", "rollback")
    assert code == 1 and "would no longer load over the catalog at" in err and "nothing was changed" in err
    code, out, _ = run(capsys, "catalog", "info")
    assert code == 0 and "2026-12-31" in out  # still the catalog the user's builds need
    assert run(capsys, "rank")[0] == 0


def test_update_json_says_where_the_replaced_catalog_is_kept_and_its_size_as_a_number(server, capsys):
    server.body = newer()
    update(capsys, server.url)
    server.body = newer("2026-12-31", NEW_MODEL.replace("new-model-7b", "newer-model-9b"))
    code, out, _ = update(capsys, server.url, "--json")
    kept = Path(json.loads(out)["replaced"]["path"])
    assert code == 0 and kept.name == "previous.toml" and kept.is_file()
    code, out, _ = run(capsys, "catalog", "info", "--json")
    assert isinstance(json.loads(out)["origin"]["bytes"], int)
