"""Import through the real huggingface_hub against the fake hub: what is written, and every failure."""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib

import pytest
import repos
from fakehub import FakeRepo, small

from conftest import closed_port
from sparkadvisor import cli, paths
from sparkadvisor.catalogs import load_index
from sparkadvisor.sources.hub import HubError
from sparkadvisor.usercatalog import ImportConflict, import_repo

SHA = "0123456789abcdef0123456789abcdef01234567"


def catalog_text() -> str | None:
    path = paths.user_catalog_path()
    return path.read_text() if path.exists() else None


def test_dense_moe_and_mla_repos_land_in_the_user_catalog(hub, capsys):
    hub.repos["meta/llama-dense"] = repos.make_repo(*repos.llama_8b(), shards=4)
    hub.repos["openai/oss-moe"] = repos.make_repo(*repos.gpt_oss_120b(), shards=15)
    hub.repos["deepseek/v2-mla"] = repos.make_repo(*repos.deepseek_v2_lite_fp8(), shards=3)
    for repo in hub.repos:
        assert cli.main(["import", repo, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["repo"] == repo and shown["revision"] == SHA and shown["unknown"] == []
    index = load_index()
    dense = index.builds["llama-dense-meta"]
    assert dense.size.value * 1e9 == pytest.approx(2 * 8_030_261_248) and dense.format == "bf16"
    model = index.models["oss-moe-openai"]
    assert model.params.active_b == pytest.approx(5.13, rel=0.01) and model.params.routed_experts == 128
    assert model.attention.sliding_layers == 18
    mla = index.models["v2-mla-deepseek"]
    assert mla.attention.design == "mla" and mla.mtp.layers == 1
    source = index.catalog.sources["hf-v2-mla-deepseek"]
    assert source.url == "https://huggingface.co/deepseek/v2-mla" and SHA in source.note
    cited = {mla.source, mla.params.source, mla.attention.source, index.builds["v2-mla-deepseek"].size.source}
    assert cited == {"hf-v2-mla-deepseek"}
    assert cli.main(["check", str(paths.user_catalog_path())]) == 0
    assert "ok (0 hardware, 3 models, 3 builds" in capsys.readouterr().out
    assert cli.main(["show", "oss-moe-openai", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["kv_bytes_per_token"] == 18 * 2 * 8 * 64 * 2 / 2  # TP2 on the default two nodes


def test_every_file_after_the_model_info_is_read_at_the_resolved_commit(hub):
    hub.repos["meta/llama-dense"] = repos.make_repo(*repos.llama_8b(), shards=2, branches={"v1": SHA})
    imported = import_repo("meta/llama-dense", "v1")
    assert imported.files.commit == SHA and imported.files.revision == "v1"
    resolves = [path for method, path, _ in hub.requests if "/resolve/" in path]
    config_reads = [p for p in resolves if p.endswith("/config.json")]
    assert config_reads and all(p.endswith("/resolve/v1/config.json") for p in config_reads)
    assert all(f"/resolve/{SHA}/" in path for path in resolves if path not in config_reads)


def test_large_headers_take_a_second_range_request(hub):
    hub.repos["deepseek/v2-mla"] = repos.make_repo(*repos.deepseek_v2_lite_fp8(), shards=2)
    assert len(hub.repos["deepseek/v2-mla"].files["model-00001-of-00002.safetensors"].head) > 100_008
    import_repo("deepseek/v2-mla")
    shard_gets = [p for m, p, _ in hub.requests if m == "GET" and p.endswith("00001-of-00002.safetensors")]
    assert len(shard_gets) == 2


def broken_config() -> FakeRepo:
    config, tensors = repos.llama_8b()
    repo = repos.make_repo(config, dict(list(tensors.items())[:3]))
    repo.files["config.json"] = small('{"num_hidden_layers": 32,')
    return repo


def broken_header() -> FakeRepo:
    repo = repos.make_repo(*repos.llama_8b())
    repo.files["model.safetensors"].head = b"\x10\0\0\0\0\0\0\0not json at all!"
    return repo


@pytest.mark.parametrize(("setup", "repo", "revision", "words"), [
    (None, "nobody/nothing", None, "no model repo nobody/nothing on http://127.0.0.1:"),
    ("gated", "meta/gated", None, "meta/gated is gated and no Hugging Face token was found: accept its terms at "
                                  "https://huggingface.co/meta/gated, then set HF_TOKEN or run `hf auth login`"),
    ("gated-token", "meta/gated", None, "meta/gated is gated and your token has no access to it yet: accept its "
                                        "terms at https://huggingface.co/meta/gated with that account"),
    ("plain", "meta/plain", "no-such-branch", "meta/plain has no revision 'no-such-branch'; give a branch, tag or "
                                              "commit that exists"),
    ("config", "meta/broken", None, "config.json of meta/broken is not valid JSON (line 1: Expecting property name "
                                    "enclosed in double quotes); the repo's config is malformed"),
    ("header", "meta/broken", None, "the safetensors header of model.safetensors in meta/broken is malformed "
                                    "(header is not json-encoded string)"),
    ("weights", "meta/plain", None, "meta/plain has no safetensors weights (model.safetensors or "
                                    "model.safetensors.index.json); only safetensors repos can be imported"),
])
def test_failures_are_one_sentence_and_write_nothing(hub, monkeypatch, setup, repo, revision, words):
    config, tensors = repos.llama_8b()
    if setup in ("gated", "gated-token"):
        hub.repos[repo] = repos.make_repo(config, tensors, gated=True, allowed_tokens={"hf_granted"})
    if setup == "gated-token":
        monkeypatch.setenv("HF_TOKEN", "hf_other_account")
    if setup in ("plain", "weights"):
        hub.repos[repo] = repos.make_repo(config, tensors)
    if setup == "weights":
        del hub.repos[repo].files["model.safetensors"]
    if setup == "config":
        hub.repos[repo] = broken_config()
    if setup == "header":
        hub.repos[repo] = broken_header()
    with pytest.raises(HubError) as caught:
        import_repo(repo, revision)
    assert str(caught.value).startswith(words) and "\n" not in str(caught.value)
    assert catalog_text() is None


def test_a_download_cut_off_part_way_is_told_as_such(hub):
    """The hub answered and then broke off: not "cannot reach", and nothing is written."""
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b(), shards=2)
    hub.cutoffs.add("model-00001")
    with pytest.raises(HubError, match=r"^http://127\.0\.0\.1:\d+ cut off .* of meta/plain part way \(.*\); try "
                                       r"again, or set HF_HUB_OFFLINE=1 to use what the hub cache holds$"):
        import_repo("meta/plain")
    assert catalog_text() is None


def test_network_down_and_a_stalled_server(hub, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(HubError, match=r"^cannot reach http://127\.0\.0\.1:\d+ \(.*\); check the network, or set "
                                       r"HF_HUB_OFFLINE=1 to use what the hub cache holds$"):
        import_repo("meta/plain")
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b(), shards=2)
    # The deadline covers the whole import, so it must leave the metadata and the first shard, which
    # answer, room on a loaded machine (1.5 s ran out on them under a full suite); the stall outlasts it by far.
    hub.stalls["00002-of-00002"] = 30
    with pytest.raises(HubError) as caught:
        import_repo("meta/plain", timeout_s=4)
    assert str(caught.value) == (f"{hub.url} stopped answering while sending model-00002-of-00002.safetensors of "
                                 "meta/plain (timed out: the import did not finish within 4 s); try again later, "
                                 "or raise the timeout")
    assert catalog_text() is None


def test_an_existing_id_is_refused_unless_forced_and_the_old_file_survives_a_failed_write(hub, monkeypatch):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    import_repo("meta/plain")
    before = catalog_text()
    with pytest.raises(ImportConflict, match="^build 'plain-meta' is already in .*; pass --force to replace it"):
        import_repo("meta/plain")
    assert cli.main(["import", "meta/plain"]) == 2
    # Only the disk failure is undone afterwards: monkeypatch.undo() would also drop SPARKADVISOR_HOME and the
    # hub's temporary folders, and the import below would then write the developer's own catalog.
    with monkeypatch.context() as disk:
        disk.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
        assert cli.main(["import", "meta/plain", "--force"]) == 1
    assert catalog_text() == before
    assert [p.name for p in paths.user_catalog_path().parent.iterdir()] == ["catalog.toml"]
    assert import_repo("meta/plain", force=True).build.id == "plain-meta"
    assert catalog_text().count("[[builds]]") == 1


def test_the_token_is_used_but_never_shown_logged_or_written(hub, monkeypatch, capsys, caplog):
    secret = "hf_s3cr3tT0kenValue"
    monkeypatch.setenv("HF_TOKEN", secret)
    caplog.set_level(logging.DEBUG)
    hub.repos["meta/gated"] = repos.make_repo(*repos.llama_8b(), gated=True, allowed_tokens={secret})
    hub.repos["meta/other"] = repos.make_repo(*repos.llama_8b(), gated=True)
    assert cli.main(["import", "meta/gated", "--json"]) == 0
    assert cli.main(["import", "meta/gated"]) == 2
    assert cli.main(["import", "meta/other"]) == 1
    seen = capsys.readouterr()
    assert f"Bearer {secret}" in hub.auth_headers
    for text in (seen.out, seen.err, caplog.text, catalog_text()):
        assert secret not in text
    assert "your token has no access" in seen.err


def test_offline_reuses_the_hub_cache_or_says_it_cannot(hub, monkeypatch):
    from huggingface_hub import hf_hub_download

    config, tensors = repos.llama_8b()
    small_tensors = {n: ("BF16", [4, 4]) for n in list(tensors)[:5]}
    hub.repos["meta/tiny"] = repos.make_repo(config, small_tensors)
    hub.repos["meta/big"] = repos.make_repo(config, tensors)
    for name in ("config.json", "model.safetensors"):
        hf_hub_download("meta/tiny", name, endpoint=hub.url, cache_dir=os.environ["HF_HUB_CACHE"])
    hf_hub_download("meta/big", "config.json", endpoint=hub.url, cache_dir=os.environ["HF_HUB_CACHE"])
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    imported = import_repo("meta/tiny")
    assert imported.files.read_from == "hub cache" and imported.files.commit == SHA
    assert imported.derived.weight_bytes == 5 * 4 * 4 * 2
    with pytest.raises(HubError) as caught:
        import_repo("meta/big", force=True)
    assert str(caught.value) == ("offline (HF_HUB_OFFLINE=1) and the hub cache holds config.json of meta/big but "
                                 "not 1 of its 1 safetensors files, and sparkadvisor's metadata cache has no copy "
                                 "of their headers; import it once online (later offline imports reuse its "
                                 "metadata), or unset HF_HUB_OFFLINE")
    with pytest.raises(HubError, match=r"^offline \(HF_HUB_OFFLINE=1\) and neither the hub cache nor "
                                       r"sparkadvisor's metadata cache holds meta/never at main; import it once "
                                       r"online \(later offline imports reuse its metadata\), or unset "
                                       r"HF_HUB_OFFLINE$"):
        import_repo("meta/never")


def test_a_hundred_shards_are_read_with_bounded_concurrency(hub):
    config, tensors = repos.llama_8b()
    config["num_hidden_layers"] = 99
    hub.repos["meta/deep"] = repos.make_repo(config, repos.dense_tensors(config, layers=99), shards=100)
    hub.latency_s = 0.01
    imported = import_repo("meta/deep")
    assert len(imported.files.shards) == 100
    assert 1 < hub.max_in_flight <= 16
    assert re.fullmatch(r"deep-meta", imported.build.id)


MINE = '''# my Sparks: notes I keep here
schema_version = 1   # the format, do not touch

[sources.my-notes]   # where my numbers come from
title = "my own measurements"
kind = "article"

# a build I wrote by hand, kept out of the bundled catalog on purpose
[[builds]]
id = "my-hand-build"
model = "qwen3-next-80b-a3b"
repo = "me/hand"
format = "bf16"
source = "my-notes"
size = { value = 160.0, unit = "GB", source = "my-notes" }
'''


def test_an_import_keeps_what_the_user_wrote_byte_for_byte(hub, capsys):
    path = paths.user_catalog_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MINE, encoding="utf-8")
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    hub.repos["meta/other"] = repos.make_repo(*repos.llama_8b())
    import_repo("meta/plain")
    import_repo("meta/other")
    text = catalog_text()
    assert text.startswith(MINE) and '[[builds]]\nid = "plain-meta"' in text and 'id = "other-meta"' in text
    index = load_index()
    assert {"my-hand-build", "plain-meta", "other-meta"} <= set(index.builds)

    # --force replaces that build's tables where they stand: a comment inside them moves above the new
    # text, and what comes before and after (the hand-written build, the other import) is untouched.
    start = text.index("[[models]]\nid = \"plain-meta\"")
    text = text[:start] + "# imported for the demo\n" + text[start:].replace(
        'name = "plain"', 'name = "plain"  # renamed? no', 1)
    path.write_text(text, encoding="utf-8")
    after_plain = text[text.index('[[builds]]\nid = "plain-meta"'):]
    after_plain = after_plain[after_plain.index("\n[", 1):]
    assert import_repo("meta/plain", force=True).build.id == "plain-meta"
    forced = catalog_text()
    assert forced.startswith(text[:start] + "# imported for the demo\n")
    assert "# renamed? no" in forced and forced.count('id = "plain-meta"') == 2
    assert after_plain in forced
    assert cli.main(["check", str(path)]) == 0


def test_a_user_catalog_that_is_not_toml_is_named_with_its_line_and_left_alone(hub, capsys):
    path = paths.user_catalog_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = MINE + '\n[[builds]]\nid = "half\n'
    path.write_text(broken, encoding="utf-8")
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    assert cli.main(["import", "meta/plain"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"sparkadvisor: {path} line 18 is not valid TOML (illegal character '\\n'); fix or move it, "
                   "nothing was changed")
    assert catalog_text() == broken


def test_tables_written_inline_are_refused_not_rewritten(hub, capsys):
    path = paths.user_catalog_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    inline = 'schema_version = 1\nbuilds = [ ]  # none yet\n'
    path.write_text(inline, encoding="utf-8")
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    assert cli.main(["import", "meta/plain"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"sparkadvisor: adding to {path} as written would make it invalid ({path} line ")
    assert err.endswith("; nothing was changed") and "\n" not in err
    assert catalog_text() == inline


def test_the_summary_counts_one_shard_as_one_file(hub, capsys):
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    assert cli.main(["import", "meta/plain"]) == 0
    assert "bytes, 1 safetensors file), format bf16" in capsys.readouterr().out  # was "1 safetensors files"
    note = tomllib.loads(catalog_text())["builds"][0]["size"]["note"]
    assert " bytes in 1 safetensors file (" in note  # the catalog's own note said "1 safetensors files" too


def test_a_repo_the_catalog_already_has_is_named_and_imported_only_with_force(hub, capsys):
    """README's own example, `import openai/gpt-oss-120b`, added a second row for the bundled build with none of
    its recipes, score or caveats, and made `show openai/gpt-oss-120b` ambiguous."""
    hub.repos["openai/gpt-oss-120b"] = repos.make_repo(*repos.llama_8b())
    assert cli.main(["import", "openai/gpt-oss-120b"]) == 2
    assert capsys.readouterr().err == (
        "sparkadvisor: openai/gpt-oss-120b is already in the catalog as build gpt-oss-120b-mxfp4, with its "
        "recipes, measurements and sources (sparkadvisor show gpt-oss-120b-mxfp4); pass --force to import it "
        "again beside it\n")
    assert cli.main(["import", "OpenAI/GPT-OSS-120B"]) == 2  # a repo id in any case is the same repo
    assert catalog_text() is None and hub.requests == []
    assert cli.main(["import", "openai/gpt-oss-120b", "--force"]) == 0


def test_a_table_to_replace_that_is_written_inline_is_refused_with_its_line(hub):
    from sparkadvisor.usercatalog import UserCatalogError

    path = paths.user_catalog_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    inline = '# mine\n[sources]\nhf-plain-meta = { title = "my note", kind = "config" }\n'
    path.write_text(inline, encoding="utf-8")
    hub.repos["meta/plain"] = repos.make_repo(*repos.llama_8b())
    with pytest.raises(UserCatalogError) as caught:
        import_repo("meta/plain", force=True)
    assert str(caught.value) == (f"{path}: source 'hf-plain-meta' (line 3) is not written under a table header "
                                 "of its own, so it cannot be changed in place; nothing was changed")
    assert catalog_text() == inline
