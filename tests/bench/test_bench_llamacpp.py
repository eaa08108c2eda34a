"""`sparkadvisor bench` and `probe` against a stand-in llama-server (the responses a real one gives, recorded
from a build of October 2026): the exported llama.cpp launch gets the same live loop as vLLM's."""

from __future__ import annotations

import json
import re
import tomllib

import pytest
from bench_fakes import bench_server

from sparkadvisor.cli import main

BUILD = "gpt-oss-20b-gguf-ggml"
"""The alias the llama.cpp export gives llama-server: the build id, so probe and bench match it."""


@pytest.fixture
def llama():
    server = bench_server(engine="llama.cpp", served=BUILD, max_model_len=16_384, block_size=1, overhead_s=0.05,
                          prefill_tok_s=40_000.0, decode_tok_s=100.0)
    yield server
    server.close()


def test_bench_cuts_prompts_with_llama_servers_tokenize_and_counts_its_own_cache_hits(llama, tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["bench", "--vllm", llama.url, "--context", "2000", "--output-tokens", "20", "--repetitions", "1",
                 "--streams", "1", "--nodes", "1", "--record", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["served_engine"], data["max_model_len"]) == ("llama.cpp", 16_384)
    warm = next(f for f in data["figures"] if f["metric"] == "warm_ttft_s")
    assert warm["cached_tokens"] == 1_900 and warm["prefix_cache_hit_share"] == pytest.approx(0.95, abs=0.001)
    text = (tmp_path / "data" / "catalog.toml").read_text(encoding="utf-8")
    assert f'build = "{BUILD}"' in text and 'engine = "llama.cpp"' in text and "pp = 1" in text
    assert "against llama-server serving gpt-oss-20b-gguf-ggml (context 16,384 a slot)" in text
    # llama-server reports no batch sizes: the run is recorded with the export's, which the plan assumed, and says so.
    recipe = tomllib.loads(text)["recipes"][0]
    assert recipe["extra_args"] == ["--batch-size", "2048", "--ubatch-size", "2048"]
    assert "--batch-size 2048 --ubatch-size 2048 assumed as sparkadvisor's export passes them" in text
    assert "server settings: no speculative decoding;" in text  # each of its /slots says "speculative": false
    # From then on the build's plan follows the run (README: "show, rank and the app use that recipe").
    assert main(["show", BUILD, "--nodes", "1", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    steps = {s["key"]: s["text"] for s in shown["steps"]}
    assert shown["recipe"] == recipe["id"]
    assert "the newest your own `sparkadvisor bench --record` wrote" in steps["recipe"]
    run = next(m for m in recipe["measurements"] if m["metric"] == "decode_tok_s")
    assert shown["decode_measured_tok_s"] == run["value"]


def test_a_run_faster_than_the_builds_weights_allow_is_not_recorded(tmp_path, capsys, monkeypatch):
    """gpt-oss-20b reads 1.8 GB a token: 400 tok/s from one stream without drafting is another model's speed, and
    would move the fit of every build on the hardware."""
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    server = bench_server(engine="llama.cpp", served=BUILD, max_model_len=16_384, block_size=1, overhead_s=0.05,
                          prefill_tok_s=40_000.0, decode_tok_s=400.0)
    try:
        assert main(["bench", "--vllm", server.url, "--context", "2000", "--output-tokens", "20", "--repetitions",
                     "1", "--streams", "1", "--nodes", "1", "--record"]) == 1
    finally:
        server.close()
    err = capsys.readouterr().err
    said = re.search(r"not recorded: one stream decoded (\d+) tok/s without speculative decoding, above the 152 "
                     f"tok/s that reading {BUILD}'s weights at 1 x DGX Spark's rated bandwidth allows", err)
    assert said and 380 < int(said[1]) < 410
    assert "pass --build" in err and "Traceback" not in err
    assert not (tmp_path / "data" / "catalog.toml").exists()


def test_bench_says_llama_servers_context_and_how_to_raise_it(llama, capsys):
    assert main(["bench", "--vllm", llama.url, "--context", "20000", "--output-tokens", "20", "--nodes", "1"]) == 1
    err = capsys.readouterr().err
    assert ("exceeds the context 16,384 a slot that llama-server serves gpt-oss-20b-gguf-ggml with; pass --context "
            "16364 or less, or restart llama-server with a larger --ctx-size (without --kv-unified") in err


def test_probe_names_llama_server_and_reads_its_metrics(llama, capsys):
    assert main(["probe", "--vllm", llama.url, "--interval", "0.2", "--claude-settings", "/nonexistent",
                 "--nodes", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert out.startswith(f"llama.cpp   up at {llama.url}")
    assert f"ok   llama-server (llama.cpp) is up at {llama.url}, serving {BUILD} (context 16,384 a slot)" in out
    assert "the served name gpt-oss-20b-gguf-ggml is build gpt-oss-20b-gguf-ggml" in out
    assert "0 running, 0 waiting" in out and "holds no vllm: metric" not in out
    assert ("context 16,384 a slot but the agentic workload needs 100,000: longer prompts are refused; restart "
            "llama-server with --ctx-size 100000 or more (with --kv-unified") in out


def test_probe_follows_claude_code_to_llama_server(llama, tmp_path, capsys):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": llama.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0",
                                            "ANTHROPIC_DEFAULT_OPUS_MODEL": "gpt-oss-20b"}}), encoding="utf-8")
    main(["probe", "--vllm", llama.url, "--interval", "0.1", "--claude-settings", str(settings), "--nodes", "1"])
    out = capsys.readouterr().out
    assert f"Claude Code -> llama.cpp ({llama.url}, from {settings})" in out
    assert f"ok   Claude Code points at llama-server directly ({llama.url}), which is up" in out
    assert "ANTHROPIC_DEFAULT_OPUS_MODEL=gpt-oss-20b names a model llama-server does not serve" in out


def test_probe_json_says_which_engine_answered(llama, capsys):
    main(["probe", "--vllm", llama.url, "--interval", "0.1", "--claude-settings", "/nonexistent", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert (data["served_engine"], data["served_model"], data["max_model_len"]) == ("llama.cpp", BUILD, 16_384)


def test_probe_says_to_start_llama_server_with_metrics(capsys):
    server = bench_server(engine="llama.cpp", served=BUILD, metrics=False)
    try:
        main(["probe", "--vllm", server.url, "--interval", "0.1", "--claude-settings", "/nonexistent"])
    finally:
        server.close()
    out = capsys.readouterr().out
    assert "/metrics answered HTTP 501" in out and "Start it with `--metrics`" in out


def test_a_run_assumed_at_another_batch_is_another_recipe(llama, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    run = ["bench", "--vllm", llama.url, "--context", "2000", "--output-tokens", "20", "--repetitions", "1",
           "--streams", "1", "--nodes", "1", "--record"]
    assert main(run) == 0 and main([*run, "--max-num-batched-tokens", "1024"]) == 0
    recipes = tomllib.loads((tmp_path / "data" / "catalog.toml").read_text(encoding="utf-8"))["recipes"]
    assert [r["extra_args"] for r in recipes] == [["--batch-size", "2048", "--ubatch-size", "2048"],
                                                  ["--batch-size", "1024", "--ubatch-size", "1024"]]


def test_a_repo_of_several_builds_is_held_as_all_of_them(capsys):
    """unsloth's Qwen3.5-27B GGUF repo holds a Q8_0 and a UD-Q4_K_XL build: llama-server naming the repo is either,
    so probe holds both rather than the first it finds."""
    server = bench_server(engine="llama.cpp", served="unsloth/Qwen3.5-27B-GGUF", max_model_len=16_384, block_size=1)
    try:
        main(["probe", "--vllm", server.url, "--interval", "0.2", "--claude-settings", "/nonexistent", "--nodes", "1"])
    finally:
        server.close()
    out = capsys.readouterr().out
    assert ("llama-server loaded unsloth/Qwen3.5-27B-GGUF, the repo of 2 builds (qwen3.5-27b-q8-unsloth, "
            "qwen3.5-27b-ud-q4kxl-unsloth)") in out
    assert ("plans       qwen3.5-27b-q8-unsloth, qwen3.5-27b-ud-q4kxl-unsloth on 1 x DGX Spark, Agentic (Claude Code): "
            "llama-server's answers fit each of them") in out
