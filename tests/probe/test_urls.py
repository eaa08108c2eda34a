"""Every URL from options, settings and the environment is checked in one place; credentials never shown."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from probe_fakes import closed_port_url
from textual.app import App, ComposeResult

from sparkadvisor.cli import main
from sparkadvisor.urls import UrlError, check_url, redact_urls


@pytest.mark.parametrize(("url", "words"), [
    ("http://127.0.0.1:99999", "has port 99999, which is not a number from 1 to 65535"),
    ("http://spark1:0", "has port 0"),
    ("http://spark1:eighty", "has port eighty"),
    ("ftp://spark1", "is not an http:// or https:// URL"),
    ("http://", "names no valid host"),
    ("http://spark 1:8000", "contains spaces or control characters"),
    ("http://[::1", "cannot be read as a URL"),
])
def test_bad_urls_are_one_sentence_naming_the_origin(url, words):
    with pytest.raises(UrlError) as error:
        check_url(url, "$SPARKADVISOR_VLLM_URL")
    assert str(error.value).startswith("$SPARKADVISOR_VLLM_URL '")
    assert words in str(error.value)


@pytest.mark.parametrize(("url", "checked"), [
    ("spark1:8000", "http://spark1:8000"), ("HTTPS://Spark1.local/v1", "https://Spark1.local/v1"),
    ("http://[::1]:8000", "http://[::1]:8000"), ("http://u:p@spark1:8000", "http://u:p@spark1:8000"),
])
def test_good_urls_pass(url, checked):
    assert check_url(url, "--vllm") == checked


def test_credentials_are_redacted_everywhere_in_a_text():
    text = "at http://alice:s3cret@spark1:8000/health and https://tok3n@gw/v1, not mail@example.org"
    assert redact_urls(text) == "at http://***@spark1:8000/health and https://***@gw/v1, not mail@example.org"


def test_env_port_out_of_range_is_one_sentence_in_probe(monkeypatch, capsys):
    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", "http://127.0.0.1:99999")
    assert main(["probe", "--timeout", "0.3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "$SPARKADVISOR_VLLM_URL 'http://127.0.0.1:99999' has port 99999" in err


def test_env_port_out_of_range_is_one_line_in_the_app(monkeypatch):
    from sparkadvisor.tui.widgets.probe_status import ProbeStatus

    monkeypatch.setenv("SPARKADVISOR_VLLM_URL", "http://127.0.0.1:99999")
    monkeypatch.delenv("SPARKADVISOR_PROBE", raising=False)
    status = ProbeStatus()

    class StatusApp(App):
        def compose(self) -> ComposeResult:
            yield status

    async def run() -> None:
        async with StatusApp().run_test() as pilot:
            await pilot.pause()
            assert "has port 99999, which is not a number from 1 to 65535" in status.status
            assert status.has_class("-critical")

    import asyncio

    asyncio.run(run())


@pytest.mark.parametrize("as_json", [False, True])
def test_credentials_in_the_url_are_never_echoed(capsys, settings_file, as_json):
    url = closed_port_url().replace("http://", "http://alice:s3cret@")
    path = settings_file({"ANTHROPIC_BASE_URL": url})
    main(["probe", "--vllm", url, "--timeout", "0.3", "--claude-settings", str(path), *(["--json"] if as_json else [])])
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err and "alice" not in out + err
    assert "http://***@127.0.0.1" in out


class SshServer:
    """A port that greets with an SSH banner and then waits, as sshd does for a client's id line."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
                conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
                self.held.append(conn)
            except OSError:
                return

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_an_ssh_banner_is_not_an_http_server_not_hung(capsys, settings_file):
    server = SshServer()
    try:
        start = time.monotonic()
        code = main(["probe", "--vllm", server.url, "--timeout", "1", "--interval", "0.2", "--claude-settings",
                     str(settings_file({}))])
        elapsed = time.monotonic() - start
    finally:
        server.close()
    out = capsys.readouterr().out
    assert code == 1
    assert f"{server.url}/health is not an HTTP server: it greets with 'SSH-2.0-OpenSSH_9.6p1" in out
    assert "(an SSH server)" in out and "hung" not in out
    assert elapsed < 5
