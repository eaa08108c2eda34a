"""`sparkadvisor import` as a person runs it: a new process whose environment names the hub."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import repos


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparkadvisor", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)


def test_import_json_then_rank_in_fresh_processes(hub):
    hub.repos["deepseek/v2-mla"] = repos.make_repo(*repos.deepseek_v2_lite_fp8(), shards=3)
    done = run(["import", "deepseek/v2-mla", "--json"])
    assert done.returncode == 0, done.stderr
    added = json.loads(done.stdout)
    assert {"model", "build", "repo", "revision", "weight_bytes", "total_params", "active_params",
            "kv_bytes_per_token", "format", "unknown"} <= set(added)
    assert (added["build"], added["format"], added["kv_bytes_per_token"]) == ("v2-mla-deepseek", "fp8", 31104)
    ranked = run(["rank", "--nodes", "1", "--json"])
    assert "v2-mla-deepseek" in [c["build"] for c in json.loads(ranked.stdout)["candidates"]]


def test_offline_in_a_fresh_process_says_what_is_missing(hub):
    done = run(["import", "deepseek/v2-mla"], HF_HUB_OFFLINE="1")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("sparkadvisor: offline (HF_HUB_OFFLINE=1) and neither the hub cache nor sparkadvisor's "
                           "metadata cache holds deepseek/v2-mla at main; import it once online (later offline "
                           "imports reuse its metadata), or unset HF_HUB_OFFLINE\n")
    assert hub.requests == []


def test_import_refuses_what_is_not_owner_slash_name_before_reaching_the_hub(hub, capsys):
    from sparkadvisor import cli

    assert cli.main(["import", "https://huggingface.co/openai/gpt-oss-120b"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "'https://huggingface.co/openai/gpt-oss-120b' is a hub address, not a repo id; give the id alone, "
        "openai/gpt-oss-120b")
    assert cli.main(["import", "openai/gpt..oss"]) == 2
    assert "'openai/gpt..oss' is not a Hugging Face repo id; give it as OWNER/NAME" in capsys.readouterr().err
    assert hub.requests == []
