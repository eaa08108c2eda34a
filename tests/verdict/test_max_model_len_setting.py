"""--max-model-len as a user's setting: a ceiling on each build's usable context, the length the KV pool is
sized for, what the context target checks and what the export writes (or refuses)."""

from __future__ import annotations

import argparse

import pytest

from sparkadvisor.catalogs import load_index
from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings
from sparkadvisor.export.argv import flatten, max_model_len, model_options
from sparkadvisor.inputs import token_count

QWEN36 = "qwen3.6-35b-a3b-nvfp4-redhat"

RECIPE = """
[[recipes]]
id = "qwen3-32b-test"
build = "qwen3-32b-nvfp4-nvidia"
title = "test: Qwen3-32B at {length}"
nodes = 1
max_model_len = {length}
source = "qwen3-32b-openrouter"
"""


def plan(index, build: str, nodes: int = 1, limit: int | None = None):
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC,
                          Settings(max_model_len=limit))


def with_recipe(tmp_path, length: int):
    path = tmp_path / "mine.toml"
    path.write_text(RECIPE.format(length=length), encoding="utf-8")
    return load_index([path], include_user=False)


def step(p, key: str) -> str:
    return next(s.text for s in explain(p) if s.key == key)


def test_a_shorter_length_is_the_usable_context_the_pool_and_the_target_use(index):
    own, short = plan(index, QWEN36), plan(index, QWEN36, limit=65536)
    assert own.usable_context.tokens == 262144
    assert short.usable_context.tokens == 65536 and short.pool.inputs.max_model_len == 65536
    assert "Usable context 65,536 (--max-model-len as set)" in step(short, "context")
    assert "with max-model-len 65,536 (--max-model-len as set)" in step(short, "pool")
    # Qwen3.6's linear-attention states cost every request the same, so shorter requests log fewer tokens.
    assert short.kv_pool_tokens < own.kv_pool_tokens
    assert "context 65,536 < 100,200 needed" in short.target_misses
    assert own.meets_targets and not short.meets_targets


def test_a_length_past_what_the_build_serves_takes_the_longest_and_says_so(index):
    p = plan(index, QWEN36, limit=2_000_000)
    usable = p.usable_context
    assert (usable.tokens, usable.basis, usable.asked) == (262144, "setting", 2_000_000)
    assert ("Usable context 262,144 (the longest this build serves here; --max-model-len asked for 2,000,000, "
            "which vLLM would refuse)") in step(p, "context")
    assert max_model_len(p) == (262144, "the longest this build serves here (--max-model-len asked for 2,000,000)")


def test_it_may_raise_a_recipes_length_up_to_the_native_context_never_into_the_extension(tmp_path):
    index = with_recipe(tmp_path, 16384)
    raised = plan(index, "qwen3-32b-nvfp4-nvidia", limit=32768)
    assert raised.recipe is not None and raised.recipe.id == "qwen3-32b-test"
    assert (raised.usable_context.tokens, raised.usable_context.basis) == (32768, "setting")
    # YaRN reaches 131,072, but this recipe does not enable it: the native 32,768 is the most.
    capped = plan(index, "qwen3-32b-nvfp4-nvidia", limit=131072)
    assert (capped.usable_context.tokens, capped.usable_context.asked) == (32768, 131072)


def test_under_a_recipe_that_extends_it_a_shorter_length_still_says_extended(tmp_path):
    p = plan(with_recipe(tmp_path, 131072), "qwen3-32b-nvfp4-nvidia", limit=65536)
    assert p.usable_context.extended
    length, why = max_model_len(p)
    assert length == 65536 and why == ("as --max-model-len sets it, the EXTENDED context: past the native 32,768 "
                                       "by YaRN factor 4, which the recipe must enable")
    options = flatten(model_options(p, "qwen"))
    assert options[options.index("--max-model-len") + 1] == "65536"


@pytest.mark.parametrize(("build", "basis"), [(QWEN36, "native"), ("qwen3.6-35b-a3b-nvfp4-nvidia", "recipe")])
def test_a_setting_equal_to_the_plans_own_length_keeps_its_basis(index, build, basis):
    p = plan(index, build, limit=262144)
    assert (p.usable_context.tokens, p.usable_context.basis) == (262144, basis)


@pytest.mark.parametrize(("text", "tokens"), [("100k", 100_000), ("128K", 131_072), ("1M", 1_048_576),
                                              ("1.5k", 1_500), ("262,144", 262_144), ("2.5m", 2_500_000)])
def test_token_counts_take_vllms_suffixes(text, tokens):
    assert token_count(text) == tokens


@pytest.mark.parametrize(("text", "says"), [("1.5K", "is not a whole number, or one with k, m"),
                                            ("1.0001k", "must be a whole number of at least 1"),
                                            ("0k", "must be a whole number of at least 1"),
                                            ("infk", "is not a whole number, or one with k, m"),
                                            ("2x", "is not a whole number of tokens \\(100000, 100k or 128K\\)")])
def test_a_bad_token_count_is_refused_in_one_sentence(text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        token_count(text)


def test_show_prints_the_setting(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["show", QWEN36, "--nodes", "1", "--max-model-len", "64k"]) == 0
    out = capsys.readouterr().out
    assert "Usable context 64,000 (--max-model-len as set) against 100,200 tokens needed" in out
    assert "context 64,000 < 100,200 needed (MISSED)" in out


def test_export_refuses_a_length_one_request_of_which_the_pool_cannot_hold(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    code = main(["export", "glm-4.6-nvfp4-lukealonso", "--nodes", "2", "--max-model-len", "100000",
                 "--format", "sh"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--max-model-len 100,000 is more than one request of the 27k-token KV pool" in err
    assert "export it with a --max-model-len of 26,624 or less" in err


def test_export_writes_the_setting_with_its_reason(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["export", QWEN36, "--nodes", "1", "--max-model-len", "65536", "--format", "sh"]) == 0
    script = capsys.readouterr().out
    assert "  # --max-model-len: as --max-model-len sets it.\n  --max-model-len 65536\n" in script


def test_rank_says_the_settings_it_applied_in_its_header_and_its_json(capsys, monkeypatch, tmp_path):
    import json

    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["rank", "--max-model-len", "128K", "--eager", "--kv-cache-dtype", "fp8"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("200 out · max-model-len 131,072 · KV dtype fp8 · eager")
    assert main(["rank", "--json", "--max-model-len", "128K"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"] == {"gpu_memory_utilization": None, "max_model_len": 131072, "max_num_batched_tokens": None,
                               "kv_cache_dtype": None, "engine": None, "enforce_eager": None, "speculation": None}
    assert {c["context_basis"] for c in out["candidates"]} <= {"setting", "recipe", "native", "unknown"}
    assert all(c["context_tokens"] <= 131072 for c in out["candidates"] if c["context_tokens"] is not None)


def test_the_native_context_is_cut_to_what_the_pool_holds_as_the_export_writes_it(index):
    p = plan(index, "glm-4.6-nvfp4-lukealonso", 2)
    usable = p.usable_context
    assert (usable.basis, usable.tokens, usable.asked) == ("pool", 26624, 202752) and usable.starts
    assert ("Usable context 26,624 (the model's native 202,752, cut to what the KV pool holds of one request, as "
            "the export writes it)") in step(p, "context")
    assert "context 26,624 < 100,200 needed" in p.target_misses
    assert max_model_len(p) == (26624, "capped at the KV pool (the model's native context is 202,752)")


def test_a_recipes_length_the_pool_cannot_hold_is_a_server_that_does_not_start(index, capsys, monkeypatch, tmp_path):
    build = index.builds["qwen3.6-35b-a3b-nvfp4-nvidia"]
    p = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 1), AGENTIC,
                       Settings(gpu_memory_utilization=0.25))
    assert p.usable_context.basis == "recipe" and not p.usable_context.starts
    assert ("context 262,144: one request of it needs more KV cache than the pool holds (218,112 tokens), so vLLM "
            "would not start") in p.target_misses
    assert "not served at all: --max-model-len 218,112 or less" in step(p, "context")
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["export", build.id, "--nodes", "1", "--gpu-memory-utilization", "0.25", "--format", "json"]) == 2
    assert "the recipe's --max-model-len 262,144 is more than one request of the 218k-token KV pool" in \
        capsys.readouterr().err


def test_a_show_report_in_markdown_or_tsv_says_the_workload_and_settings_it_was_made_for(capsys, monkeypatch,
                                                                                       tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["show", QWEN36, "--nodes", "1", "--max-model-len", "32k", "--format", "tsv"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    header_at = next(i for i, row in enumerate(rows) if row[:2] == ["item", "basis"])
    assert rows[header_at + 1] == ["workload", "assumed",
                                   "Agentic (Claude Code): 100,000 tokens, 95% reuse, 200 out · max-model-len 32,000"]


def test_the_rankings_fast_context_status_agrees_with_the_usable_context_it_describes(index):
    # targets._context reads the pool inputs directly (a ranking judges every plan); what it decides must be
    # what Plan.usable_context says in words, under every kind of length.
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.core.targets import context_needed

    for nodes in (1, 2):
        for settings in (Settings(), Settings(max_model_len=65536), Settings(max_model_len=2_000_000),
                         Settings(gpu_memory_utilization=0.3)):
            for r in advise(index, Cluster(index.hardware["dgx-spark"], nodes), AGENTIC, settings):
                usable = r.plan.usable_context
                expected = ("unknown" if usable.tokens is None else "missed"
                            if not usable.starts or usable.tokens < context_needed(AGENTIC) else "met")
                assert r.plan.statuses[0] == expected, (r.plan.build.id, settings, usable)
