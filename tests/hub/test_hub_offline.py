"""Offline re-imports (HF_HUB_OFFLINE=1) from the metadata sparkadvisor kept after an online read."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import repos
from test_hub_cli import run

from conftest import closed_port
from sparkadvisor import cli, paths
from sparkadvisor.catalogs import load_index
from sparkadvisor.sources.hub import HubError
from sparkadvisor.usercatalog import import_repo

SHA = "0123456789abcdef0123456789abcdef01234567"
NEWER = "89abcdef0123456789abcdef0123456789abcdef"
SAME = ("revision", "weight_bytes", "bytes_by_dtype", "total_params", "active_params", "kv_bytes_per_token",
        "format", "quantizer", "shards", "unknown")


def go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")


def import_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert cli.main(["import", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_repo_imported_online_reimports_offline_from_cached_metadata(hub, monkeypatch, capsys):
    hub.repos["openai/oss-moe"] = repos.make_repo(*repos.gpt_oss_120b(), shards=15)
    online = import_json(capsys, "openai/oss-moe")
    asked = len(hub.requests)
    go_offline(monkeypatch)
    offline = import_json(capsys, "openai/oss-moe", "--force")
    assert {k: offline[k] for k in SAME} == {k: online[k] for k in SAME}
    assert (online["read_from"], offline["read_from"]) == ("hub", "metadata cache")
    assert offline["metadata_cache"].startswith(str(paths.cache_dir() / "hub"))
    shutil.rmtree(os.environ["HF_HUB_CACHE"])
    assert cli.main(["import", "openai/oss-moe", "--force"]) == 0
    said = capsys.readouterr().out
    assert f"Imported openai/oss-moe at {SHA[:12]}" in said
    assert "offline   used cached metadata from sparkadvisor's metadata cache, read online on " in said
    note = load_index().catalog.sources["hf-oss-moe-openai"].note
    assert note.startswith(f"revision {SHA} (main), read by sparkadvisor import on ")
    assert "from sparkadvisor's local metadata cache (read online on " in note
    assert len(hub.requests) == asked


def test_offline_takes_the_commit_last_seen_for_a_revision_or_a_commit_asked_for(hub, monkeypatch, capsys):
    config, tensors = repos.llama_8b()
    hub.repos["meta/plain"] = repos.make_repo(config, tensors, shards=2)
    older = import_json(capsys, "meta/plain")
    fewer = dict(list(tensors.items())[:-1])
    hub.repos["meta/plain"] = repos.make_repo(config, fewer, shards=3, sha=NEWER, branches={"v2": NEWER})
    newer = import_json(capsys, "meta/plain", "--force", "--revision", "v2")
    assert import_json(capsys, "meta/plain", "--force")["revision"] == NEWER
    go_offline(monkeypatch)
    shutil.rmtree(os.environ["HF_HUB_CACHE"])
    for args, expected in [((), newer), (("--revision", "v2"), newer), (("--revision", SHA), older)]:
        again = import_json(capsys, "meta/plain", "--force", *args)
        assert {k: again[k] for k in SAME} == {k: expected[k] for k in SAME}
    assert newer["weight_bytes"] < older["weight_bytes"] and newer["shards"] == 3
    with pytest.raises(HubError, match=r"^offline \(HF_HUB_OFFLINE=1\) and neither the hub cache nor "
                                       r"sparkadvisor's metadata cache holds meta/plain at v9; import it once "
                                       r"online"):
        import_repo("meta/plain", "v9", force=True)


def test_a_damaged_metadata_file_is_named_in_one_sentence(hub, monkeypatch):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    saved = import_repo("meta/plain")
    go_offline(monkeypatch)
    shutil.rmtree(os.environ["HF_HUB_CACHE"])
    path = paths.cache_dir() / "hub" / f"meta--plain--{saved.files.commit}.json"
    path.write_text('{"format": 1, "repo": "meta/plain", "headers": [')
    with pytest.raises(HubError) as caught:
        import_repo("meta/plain", force=True)
    assert str(caught.value).startswith(f"sparkadvisor's metadata cache file {path} is unreadable (")
    assert str(caught.value).endswith("); delete it and import once online") and "\n" not in str(caught.value)


def test_a_fresh_offline_process_reuses_the_metadata_and_no_token_is_stored(hub):
    secret = "hf_s3cr3tOfflineT0ken"
    hub.repos["meta/gated"] = repos.make_repo(*repos.llama_8b(), shards=2, gated=True, allowed_tokens={secret})
    online = run(["import", "meta/gated", "--json"], HF_TOKEN=secret)
    assert online.returncode == 0, online.stderr
    offline = run(["import", "meta/gated", "--force"], HF_TOKEN=secret, HF_HUB_OFFLINE="1",
                  HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}")
    assert offline.returncode == 0, offline.stderr
    assert "used cached metadata from sparkadvisor's metadata cache" in offline.stdout
    assert f"{json.loads(online.stdout)['weight_bytes']:,} bytes" in offline.stdout
    stored = [p for p in (paths.cache_dir() / "hub").rglob("*") if p.is_file()]
    assert len(stored) == 2
    for path in stored:
        assert secret not in path.read_text() and "127.0.0.1" not in path.read_text()


@pytest.mark.cold_cache  # the cache folder must not exist yet
def test_an_unwritable_metadata_cache_does_not_stop_an_online_import(hub):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    paths.cache_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.cache_dir().write_text("a file where the cache folder should be")
    from sparkadvisor import unsaved

    unsaved.take()
    assert import_repo("meta/plain").build.id == "plain-meta"
    assert paths.cache_dir().read_text() == "a file where the cache folder should be"
    assert [n for n in unsaved.take() if "hub metadata" in n] == [
        f"could not save the hub metadata read for meta/plain in {paths.cache_dir() / 'hub'} (a file stands where a "
        f"folder should be: {paths.cache_dir()}); an offline import (HF_HUB_OFFLINE=1) of it needs the hub cache "
        "instead; SPARKADVISOR_HOME=DIR puts what the app keeps in a folder it can write"]
