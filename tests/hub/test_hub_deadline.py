"""--timeout is a deadline for the whole import; every fault has its own sentence; no library chatter."""

from __future__ import annotations

import socket
import time

import pytest
import repos

from sparkadvisor import cli, paths
from sparkadvisor.sources.hub import HubError
from sparkadvisor.usercatalog import import_repo

SLACK_S = 2.5
"""Start-up and the catalog load around the import, on a loaded 2-core machine (a stall used to take 395 s)."""


def run_import(capsys, *args: str) -> tuple[int, str, float]:
    start = time.monotonic()
    code = cli.main(["import", "meta/plain", *args])
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    return code, out + err, elapsed


@pytest.mark.parametrize("stalled", ["config.json", "00001-of-00002", "resolve/"])
def test_a_hub_stalling_on_downloads_ends_within_the_timeout(hub, capsys, stalled):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b(), shards=2)
    hub.download_stalls[stalled] = 30
    code, text, elapsed = run_import(capsys, "--timeout", "1.5")
    assert code == 1
    assert elapsed < 1.5 + SLACK_S, f"took {elapsed:.1f} s with --timeout 1.5"
    assert text.count("\n") == 1, text
    assert "stopped answering while sending" in text and "did not finish within 1.5 s" in text
    assert "Trying to resume" not in text and "Retry" not in text and "has no config.json" not in text
    assert not paths.user_catalog_path().exists()


def test_a_hub_stalling_on_metadata_ends_within_the_timeout(hub, capsys):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b(), shards=2)
    hub.stalls["/api/models"] = 30
    code, text, elapsed = run_import(capsys, "--timeout", "1")
    assert code == 1 and elapsed < 1 + SLACK_S
    assert "while sending its model info of meta/plain" in text


def test_a_hub_that_sends_garbage_is_named(hub, capsys):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b(), shards=2)
    hub.garbage.add("/api/models")
    code, text, _ = run_import(capsys)
    assert code == 1
    assert f"{hub.url} sent something that is not JSON for its model info of meta/plain" in text
    assert "Expecting value" not in text


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_the_timeout_must_be_a_positive_number(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["import", "meta/plain", f"--timeout={value}"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith(f"sparkadvisor: --timeout '{value}' ")


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf")])
def test_the_library_call_refuses_a_timeout_that_is_not_positive(value):
    with pytest.raises(HubError, match="the timeout must be a number of seconds above 0"):
        import_repo("meta/plain", timeout_s=value)


def test_a_bad_hf_endpoint_is_one_sentence(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:99999")
    with pytest.raises(HubError, match=r"^\$HF_ENDPOINT 'http://127\.0\.0\.1:99999' has port 99999"):
        import_repo("meta/plain")


def test_credentials_in_hf_endpoint_are_not_echoed(monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://alice:s3cret@127.0.0.1:{port}")
    with pytest.raises(HubError) as caught:
        import_repo("meta/plain", timeout_s=2)
    assert "s3cret" not in str(caught.value) and "http://***@127.0.0.1" in str(caught.value)
