"""The KV cache a running vLLM sized, held against the plan's: vLLM's num_gpu_blocks at what a block id
costs in the model's layout, as the probe reports it."""

from __future__ import annotations

import pytest
from probe_fakes import vllm_server
from test_probe_command import probe_json, texts

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.checkup import pool_findings, served_pool
from sparkadvisor.core.kv import shape_for
from sparkadvisor.core.metrics import ServedConfig, parse_prometheus, served_config
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings

GLM_LABELS = {"block_size": "4608", "user_specified_block_size": "True", "cache_dtype": "fp8_e4m3",
              "enable_prefix_caching": "True", "gpu_memory_utilization": "0.85", "num_gpu_blocks": "233",
              "kv_cache_memory_bytes": str(6 * 2**30)}
"""vllm:cache_config_info as tonyd2wild's GLM-5.3-Flash recipe runs (--kv-cache-memory 6 GiB; vLLM grows its
--block-size 2304 to 4,608 so one page holds a KDA layer's state)."""


def _plan(index, build: str, nodes: int):  # type: ignore[no-untyped-def]
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)


def test_a_block_id_costs_what_vllm_allocates_per_block(index):
    # Llama-3.3-70B (config.json: 80 layers, 8 KV heads of 128) in BF16 on one rank: a block of 16 tokens
    # is a page of 16 x 2 x 8 x 128 x 2 B in each of the 80 layers.
    llama = shape_for(index.models["llama-3.3-70b"].attention, "auto", 1, 1)
    assert llama.block_id_bytes() == 80 * 16 * 2 * 8 * 128 * 2
    # GLM-5.3-Flash: the 11 MLA tensors' 4,608 x 512 B pages and the 11 indexer tensors' 4,608 x 33 B
    # (tonyd2wild's logged pools are whole numbers of these 27.6 MB block ids).
    glm = shape_for(index.models["glm-5.3-flash"].attention, "fp8", 2, 1)
    assert glm.block_id_bytes(2304) == 11 * 4608 * (512 + 33)


def test_the_block_count_vllm_reports_gives_the_plans_pool_back(index):
    plan = _plan(index, "deepseek-v4-flash-0731-stack", 2)
    shape, inputs = plan.pool.shape, plan.pool.inputs
    blocks = int(plan.fit.budget.kv_bytes // shape.block_id_bytes(inputs.block_tokens, inputs.speculative_tokens))
    pool = served_pool(plan, ServedConfig(num_gpu_blocks=blocks), None)
    assert pool.pool_tokens == pytest.approx(plan.pool.pool_tokens, rel=1e-4)
    assert pool.kv_bytes == pytest.approx(plan.fit.budget.kv_bytes, rel=1e-4)


def test_a_pool_as_planned_is_ok_and_a_much_smaller_one_names_the_usual_causes(index):
    plan = _plan(index, "gpt-oss-120b-mxfp4", 1)
    shape, inputs = plan.pool.shape, plan.pool.inputs
    planned = int(plan.fit.budget.kv_bytes // shape.block_id_bytes(inputs.block_tokens))
    util = plan.fit.budget.utilization
    [agrees] = pool_findings([plan], ServedConfig(block_size=16, gpu_memory_utilization=util,
                                                  num_gpu_blocks=planned), None)
    assert agrees.severity == "ok" and agrees.text.startswith(f"vLLM holds {plan.fit.budget.kv_bytes / 2**30:.1f} GiB")
    assert f"({planned:,} blocks of 16 tokens" in agrees.text and "(-0.0%)" in agrees.text
    [short] = pool_findings([plan], ServedConfig(block_size=16, gpu_memory_utilization=util,
                                                 num_gpu_blocks=planned // 2), None)
    assert short.severity == "warning" and "(-50.0%)" in short.text
    assert "drop_caches" in short.text and "vllm #54122" in short.text and short.brief.startswith("small KV cache ")


def test_a_kv_cache_pinned_otherwise_than_the_plan_is_not_compared(index):
    plan = _plan(index, "gpt-oss-120b-mxfp4", 1)
    [finding] = pool_findings([plan], ServedConfig(block_size=16, kv_cache_memory_bytes=8 * 2**30,
                                                   num_gpu_blocks=29127), None)
    assert finding.severity == "info" and "--kv-cache-memory 8.0 GiB" in finding.text
    assert finding.text.endswith("so they are not compared")


def test_no_block_count_no_finding(index):
    assert pool_findings([_plan(index, "gpt-oss-120b-mxfp4", 1)], ServedConfig(block_size=16), None) == []
    text = 'vllm:cache_config_info{block_size="16",num_gpu_blocks="42416",num_cpu_blocks="None"} 1.0\n'
    assert served_config(parse_prometheus(text)).num_gpu_blocks == 42416


def test_the_probe_holds_the_served_cache_against_the_recipes_pool(capsys, settings_file):
    server = vllm_server(served="glm-5.3-flash", root="/models/glm-5.3-flash", max_model_len=262144,
                         hits_per_scrape=950, queries_per_scrape=1000, spec_positions=7, cache_config=GLM_LABELS)
    claude = settings_file({"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    try:
        code, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(claude))
    finally:
        server.close()
    assert code == 0 and data["build"] == "glm-5.3-flash-nvfp4-redhat" and data["num_gpu_blocks"] == 233
    [pool] = [t for t in texts(data, "ok") if t.startswith("vLLM holds")]
    assert pool.startswith("vLLM holds 6.0 GiB of KV cache per rank (233 blocks of 4,608 tokens at 26.35 MiB each")
    assert "a pool of 650k tokens at max_model_len 262,144" in pool
    assert "the plan, with --kv-cache-memory 6.0 GiB, expects 6.0 GiB" in pool


def test_the_plan_is_taken_at_the_utilization_vllm_reports(capsys, settings_file):
    labels = {"block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True",
              "gpu_memory_utilization": "0.8", "num_gpu_blocks": "120000"}
    server = vllm_server(served="openai/gpt-oss-120b", max_model_len=131072, cache_config=labels)
    claude = settings_file({"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    try:
        _, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(claude), "--nodes", "1")
    finally:
        server.close()
    [pool] = [t for f in data["findings"] if (t := f["text"]).startswith("vLLM holds")]
    assert "(120,000 blocks of 16 tokens" in pool and "the plan, at gpu-memory-utilization 0.8, expects" in pool


def test_a_plan_pinned_where_vllm_runs_without_a_pin_is_taken_as_vllm_sizes_it(capsys, settings_file):
    # The catalog's GLM recipe pins 6 GiB; this vLLM reports no pin, so it sized the cache from 0.85 of
    # the node: the plan is held at that, not at the pin.
    labels = {"block_size": "4608", "cache_dtype": "auto", "enable_prefix_caching": "True",
              "gpu_memory_utilization": "0.85", "num_gpu_blocks": "233", "kv_cache_memory_bytes": "None"}
    server = vllm_server(cache_config=labels)
    claude = settings_file({"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    try:
        _, data = probe_json(capsys, "--vllm", server.url, "--claude-settings", str(claude))
    finally:
        server.close()
    [pool] = [t for f in data["findings"] if (t := f["text"]).startswith("vLLM holds")]
    assert "the plan, at gpu-memory-utilization 0.85, expects" in pool and "--kv-cache-memory" not in pool


def test_a_vllm_without_the_recipes_drafter_has_its_memory_for_the_kv_cache(index):
    # GLM-5.3-Flash's recipe speculates with a DFlash drafter; a vLLM started without it gives the
    # drafter's weights and graphs to the KV cache, so the plan is held at that much more.
    plan = evaluate_build(index, index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 2),
                          AGENTIC, Settings(gpu_memory_utilization=0.85))
    reserve = plan.fit.budget.reserve
    drafter = reserve.draft_weights_bytes + reserve.draft_graph_bytes
    assert drafter > 0.5 * 2**30
    on, off = (served_pool(plan, ServedConfig(block_size=16, speculating=spec, num_gpu_blocks=233), 262_144)
               for spec in (True, False))
    assert on.planned_bytes == plan.fit.budget.kv_bytes and off.planned_bytes == on.planned_bytes + drafter
    [finding] = pool_findings([plan], ServedConfig(block_size=16, speculating=False, num_gpu_blocks=233), None)
    assert f"without the recipe's drafter (its {drafter / 2**30:.1f} GiB to the KV cache)" in finding.text
