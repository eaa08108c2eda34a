"""`probe` when the served name does not say which build it is: findings that need only the workload
are always given, the build is narrowed by what vLLM's metrics say, and findings that need the build
are given against every matching plan as a spread."""

from __future__ import annotations

import re

import pytest
from probe_fakes import vllm_server
from test_probe_command import probe, probe_json, texts

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.checkup import ServedModel, build_findings, match_build, narrow, workload_findings
from sparkadvisor.core.metrics import Latency, MetricsWindow, ServedConfig, parse_prometheus, served_config
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC

GLM_BUILDS = ("glm-5.3-flash-nvfp4-redhat", "glm-5.3-flash-nvfp4-libertai", "glm-5.3-flash-nvfp4-nvidia")
RECIPE_ENGINE = {"block_size": "2304", "user_specified_block_size": "True", "cache_dtype": "fp8_e4m3",
                 "enable_prefix_caching": "True", "gpu_memory_utilization": "0.85", "num_gpu_blocks": "310"}
"""vllm:cache_config_info as the tonyd2wild GLM recipe starts vLLM (labels are str() of CacheConfig fields)."""


def _ambiguous(**changes):  # type: ignore[no-untyped-def]
    """vLLM serving --served-model-name glm-5.3-flash from a local folder, as in issue 15."""
    state = {"served": "glm-5.3-flash", "root": "/models/glm-5.3-flash", "max_model_len": 32768,
             "hits_per_scrape": 120, "queries_per_scrape": 1000, **changes}
    return vllm_server(**state)


def _run(capsys, settings_file, server):  # type: ignore[no-untyped-def]
    claude = settings_file({"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    try:
        return probe_json(capsys, "--vllm", server.url, "--claude-settings", str(claude))
    finally:
        server.close()


def test_workload_findings_survive_an_ambiguous_name_and_critical_ones_exit_1(capsys, settings_file):
    code, data = _run(capsys, settings_file, _ambiguous(spec=False, generation_per_scrape=6.2))
    assert code == 1 and data["status"] == "critical" and data["build"] is None
    # vLLM runs no drafter, so every build is planned without its recipe's (RedHat's DFlash2 too): the
    # server's speed is held against plans that decode one token a pass, and none is ruled out by it.
    assert data["builds"] == ["glm-5.3-flash-nvfp4-redhat", "glm-5.3-flash-nvfp4-libertai",
                              "glm-5.3-flash-nvfp4-nvidia"]
    assert "speculative decoding off leaves" not in data["build_match"]
    [critical] = texts(data, "critical")
    assert critical.startswith("max_model_len 32,768 but the agentic workload needs 100,000")
    [hit_rate] = [t for t in texts(data, "warning") if t.startswith("prefix-cache hit rate 12%")]
    assert "the plans for the 3 matching builds expect" in hit_rate
    decode = [t for t in texts(data, "ok") + texts(data, "warning") if t.startswith("decode ")]
    assert len(decode) == 1 and re.fullmatch(r"decode \d+ tok/s: the plans for the 3 matching builds expect \d+(-\d+)?",
                                              decode[0])
    assert any("pass --build ID" in t for t in texts(data, "info"))


def test_the_text_report_puts_the_critical_finding_first(capsys, settings_file):
    server = _ambiguous(spec=False)
    claude = settings_file({"ANTHROPIC_BASE_URL": server.url, "CLAUDE_CODE_ATTRIBUTION_HEADER": "0"})
    try:
        code, out, _ = probe(capsys, "--vllm", server.url, "--claude-settings", str(claude))
    finally:
        server.close()
    findings = out.split("findings:\n", 1)[1].splitlines()
    assert code == 1 and findings[0].startswith("  FAIL max_model_len 32,768")
    marks = [line.split()[0] for line in findings]
    order = {"FAIL": 0, "WARN": 1, "info": 2, "ok": 3}
    assert marks == sorted(marks, key=order.__getitem__)


def test_the_engines_settings_identify_the_build(capsys, settings_file):
    code, data = _run(capsys, settings_file, _ambiguous(max_model_len=262144, hits_per_scrape=950,
                                                        spec_positions=7, cache_config=RECIPE_ENGINE))
    assert data["build"] == "glm-5.3-flash-nvfp4-redhat" and data["builds"] == [data["build"]]
    assert "KV dtype fp8_e4m3 leaves glm-5.3-flash-nvfp4-redhat" in data["build_match"]
    assert any("speculative decoding accepts 74% of drafted tokens (the recipe's 74%)" in t
               for t in texts(data, "ok"))
    assert code == 0


def test_prefix_caching_off_in_the_engine_is_critical_for_an_agent(capsys, settings_file):
    config = {**RECIPE_ENGINE, "enable_prefix_caching": "False"}
    code, data = _run(capsys, settings_file, _ambiguous(max_model_len=262144, cache_config=config))
    assert code == 1
    assert any(t.startswith("vLLM runs with prefix caching off (vllm:cache_config_info)")
               for t in texts(data, "critical"))


# --- the same, pure -------------------------------------------------------------


def _plans(index, ids=GLM_BUILDS):  # type: ignore[no-untyped-def]
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    return [evaluate_build(index, index.builds[b], cluster, AGENTIC) for b in ids]


def _window(tok_s: float | None = None, acceptance: float | None = None, hit_rate: float | None = 0.95,
            config: ServedConfig | None = None) -> MetricsWindow:
    none = Latency(None, None, None, 0, "none")
    return MetricsWindow(5.0, hit_rate, 0.5, 1000.0, 0.3, 1.0, 0.0, none, none, acceptance, None, tok_s, True,
                         config=config or ServedConfig())


def test_decode_against_three_matching_builds_is_a_spread(index):
    [finding] = build_findings(_plans(index), _window(tok_s=31.0))
    assert re.fullmatch(r"decode 31 tok/s: the plans for the 3 matching builds expect \d+-\d+", finding.text)
    assert finding.severity == "ok"
    [slow] = build_findings(_plans(index), _window(tok_s=10.0))  # below the slowest plan's range
    assert slow.severity == "warning" and re.fullmatch(r"decode 10 tok/s \(plan \d+-\d+\)", slow.brief)


def test_the_hit_rate_needs_no_build(index):
    findings = workload_findings(AGENTIC, ServedModel("glm-5.3-flash", None, 32768), _window(hit_rate=0.12))
    assert [f.severity for f in findings] == ["critical", "warning"]
    assert findings[1].text.startswith("prefix-cache hit rate 12% where an agent should see ~95%; check")


@pytest.mark.parametrize("root, build", [
    ("/models/GLM-5.3-Flash-NVFP4-redhat", "glm-5.3-flash-nvfp4-redhat"),
    ("/var/tmp/models/GLM-5.3-Flash-NVFP4-nvidia", "glm-5.3-flash-nvfp4-nvidia"),
])
def test_the_root_paths_last_component_names_the_build(index, root, build):
    match = match_build(index, [ServedModel("glm-5.3-flash", root, 262144)])
    assert match.build is not None and match.build.id == build
    assert "a local copy of" in match.how


def test_config_labels_and_speculation_are_read_from_metrics():
    text = ('vllm:cache_config_info{block_size="2304",cache_dtype="fp8_e4m3",enable_prefix_caching="True",'
            'gpu_memory_utilization="0.85",kv_cache_memory_bytes="6442450944",user_specified_block_size="True"} 1.0\n'
            + "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} 3.0\n'
                      for i in range(7)))
    config = served_config(parse_prometheus(text))
    assert config == ServedConfig(2304, True, "fp8_e4m3", True, 0.85, 6442450944, True, 7)
    plain = served_config(parse_prometheus("vllm:num_requests_running 1\n"))
    assert plain.speculating is False and plain.block_size is None


def test_a_test_no_plan_passes_is_skipped(index):
    plans, said = narrow(_plans(index), ServedConfig(kv_cache_dtype="nvfp4"))
    assert len(plans) == 3 and said == []


def test_the_plan_follows_the_drafted_tokens_the_engine_runs(capsys, settings_file):
    # The recipe drafts 7 tokens a pass (DFlash2); this engine's per-position counters show 3.
    code, data = _run(capsys, settings_file, _ambiguous(max_model_len=262144, hits_per_scrape=950,
                                                        spec_positions=3, cache_config=RECIPE_ENGINE))
    assert data["build"] == "glm-5.3-flash-nvfp4-redhat"
    assert data["plan"]["draft_tokens"] == 3 and not data["plan"]["drafter_off"]
    code7, data7 = _run(capsys, settings_file, _ambiguous(max_model_len=262144, hits_per_scrape=950,
                                                          spec_positions=7, cache_config=RECIPE_ENGINE))
    assert data7["plan"]["draft_tokens"] == 7 and data["plan"]["decode_tok_s"] < data7["plan"]["decode_tok_s"]
