"""Sizes on disk: as the repo (or the source that read it) states them, else derived and marked so."""

from __future__ import annotations

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import WORKLOADS

STATED_SIZES = {
    ("deepseek-ai/DeepSeek-V4-Flash-0731", "mxfp4"): (155, "GiB"),  # the article, as loaded; eugr #331: 167 GB
    ("deepseek-ai/DeepSeek-V4.1-Flash", "mxfp4"): (510, "GB"),  # sqliteai/warp DS41.md, colibri
    ("RedHatAI/GLM-5.3-Flash-NVFP4", "nvfp4-compressed-tensors"): (198, "GB"),  # the article
    ("nvidia/Qwen3.8-Flash-Next-NVFP4", "nvfp4-modelopt"): (133, "GB"),  # the article
    ("openai/gpt-oss-120b", "mxfp4"): (65.2, "GB"),  # HF tree, original/ folder
    ("nvidia/Qwen3-Next-80B-A3B-Thinking-NVFP4", "nvfp4-modelopt"): (50.8, "GB"),  # HF tree
    ("ggml-org/gpt-oss-20b-GGUF", "mxfp4"): (11.27, "GiB"),  # llama.cpp benches/dgx-spark.md
    ("ggml-org/gpt-oss-120b-GGUF", "mxfp4"): (59.02, "GiB"),  # llama.cpp benches/dgx-spark.md
    ("ggml-org/Qwen3-Coder-30B-A3B-Instruct-Q8_0-GGUF", "gguf-q8_0"): (30.25, "GiB"),  # llama.cpp benches
    ("ggml-org/Qwen2.5-Coder-7B-Q8_0-GGUF", "gguf-q8_0"): (7.54, "GiB"),  # llama.cpp benches
    ("ggml-org/gemma-3-4b-it-qat-GGUF", "gguf-q4_0"): (2.35, "GiB"),  # llama.cpp benches
    ("prithivMLmods/Qwen3-Coder-30B-A3B-Instruct-GGUF", "gguf-q4_k_m"): (18.6, "GB"),  # HF file page
    ("Qwen/Qwen3-Next-80B-A3B-Thinking-GGUF", "gguf-q4_k_m"): (48.4, "GB"),  # HF tree
    ("Qwen/Qwen3-Next-80B-A3B-Thinking-GGUF", "gguf-q8_0"): (84.8, "GB"),  # HF tree
    ("saricles/MiniMax-M2.7-NVFP4-GB10", "nvfp4"): (130.6, "GB"),  # eugr #242 quoting the card
    ("openai/gpt-oss-20b", "mxfp4"): (13.76, "GB"),  # HF tree: the three safetensors vLLM loads
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4", "nvfp4-modelopt"): (75, "GB"),  # sglang PR #20580
    ("nvidia/Qwen3.6-35B-A3B-NVFP4", "nvfp4-modelopt"): (23.4, "GB"),  # club-3090 PR #607
    ("nvidia/Gemma-4-31B-IT-NVFP4", "nvfp4-modelopt"): (32.7, "GB"),  # HF tree; LilaRest: 31 GiB loaded in vLLM
    ("unsloth/DeepSeek-R1-GGUF", "gguf-ud-iq1_s"): (131, "GB"),  # unsloth blog, Run DeepSeek R1 Dynamic 1.58-bit
    ("unsloth/DeepSeek-R1-GGUF", "gguf-ud-iq1_m"): (158, "GB"),  # same table
    ("unsloth/DeepSeek-R1-GGUF", "gguf-ud-iq2_xxs"): (183, "GB"),  # same table
    ("unsloth/DeepSeek-R1-GGUF", "gguf-ud-q2_k_xl"): (212, "GB"),  # same table
    ("unsloth/Qwen3.5-27B-GGUF", "gguf-q8_0"): (28.6, "GB"),  # ggml-org/Llama-macOS PR #63
    ("unsloth/Qwen3.5-27B-GGUF", "gguf-ud-q4_k_xl"): (17.6, "GB"),  # same PR
    ("unsloth/Qwen3.5-397B-A17B-GGUF", "gguf-q8_0"): (421.5, "GB"),  # same PR
    ("unsloth/Qwen3.5-397B-A17B-GGUF", "gguf-ud-q4_k_xl"): (219.2, "GB"),  # same PR
    ("Qwen/Qwen2.5-Coder-7B-Instruct-AWQ", "awq-int4"): (5.58, "GB"),  # HF file listing
    ("Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", "gguf-q4_k_m"): (4.683, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", "gguf-q8_0"): (8.099, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("Qwen/Qwen2.5-Coder-32B-Instruct-AWQ", "awq-int4"): (19.33, "GB"),  # HF file listing
    ("Qwen/Qwen2.5-Coder-32B-Instruct-GGUF", "gguf-q4_k_m"): (19.851, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("Qwen/Qwen2.5-Coder-32B-Instruct-GGUF", "gguf-q8_0"): (34.821, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("Qwen/Qwen2.5-Coder-32B-Instruct-GPTQ-Int4", "gptq-int4"): (19.34, "GB"),  # HF file listing
    ("unsloth/GLM-4.7-Flash-GGUF", "gguf-q4_k_m"): (18.312, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("bartowski/Llama-3.2-3B-Instruct-GGUF", "gguf-q4_k_m"): (2.02, "GB"),  # HF file listing
    ("bartowski/Llama-3.2-3B-Instruct-GGUF", "gguf-q8_0"): (3.42, "GB"),  # HF file listing
    ("bartowski/Meta-Llama-3.1-70B-Instruct-GGUF", "gguf-q4_k_m"): (42.5, "GB"),  # HF file listing
    ("bartowski/DeepSeek-R1-Distill-Qwen-14B-GGUF", "gguf-q4_k_m"): (8.99, "GB"),  # HF file listing
    ("unsloth/DeepSeek-R1-Distill-Qwen-32B-GGUF", "gguf-q4_k_m"): (19.9, "GB"),  # HF file listing
    ("unsloth/phi-4-GGUF", "gguf-q4_k_m"): (8.89, "GB"),  # HF file listing
    ("unsloth/Qwen3-30B-A3B-GGUF", "gguf-q4_k_m"): (18.557, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("unsloth/Qwen3-30B-A3B-GGUF", "gguf-q4_0"): (17.38, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("unsloth/Qwen3-30B-A3B-GGUF", "gguf-q8_0"): (32.484, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("unsloth/Qwen3-32B-GGUF", "gguf-q4_0"): (18.703, "GB"),  # rampart-langtools catalog (HF API bytes)
    ("nvidia/Gemma-4-26B-A4B-NVFP4", "nvfp4-modelopt"): (18.8, "GB"),  # HF file listing
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "bf16"): (29.54, "GB"),  # HF tree: the four shards
    ("Qwen/Qwen3-8B", "bf16"): (16.38, "GB"),  # HF tree: the five shards
    ("Qwen/Qwen3-4B", "bf16"): (8.0496, "GB"),  # HF tree (refs/pr/10): the three shards
    ("Qwen/Qwen3-4B-FP8", "fp8"): (5.188, "GB"),  # HF tree: the two shards
    ("Qwen/Qwen2.5-Coder-7B-Instruct", "bf16"): (15.23, "GB"),  # HF tree at 6ab006b: the four shards
    ("nvidia/Llama-3.1-8B-Instruct-FP8", "fp8"): (9.08, "GB"),  # HF tree: the two shards
    ("nvidia/Llama-3.1-8B-Instruct-NVFP4", "nvfp4-modelopt"): (6.03, "GB"),  # ai-field-notes: 4.98 + 1.05 GB shards
    ("Qwen/Qwen3-32B", "bf16"): (65.5, "GB"),  # HF tree: the repo as its page heads it
    ("nvidia/MiniMax-M2.7-NVFP4", "nvfp4-modelopt"): (140, "GB"),  # HF tree: the repo as its page heads it
    ("LibertAIDAI/GLM-5.3-Flash-NVFP4", "nvfp4-modelopt"): (181, "GiB"),  # its card: 598.5 GiB -> ~181 GiB
}
"""Repo and format -> the size and unit as the research notes recorded the repo's statement."""


def test_stated_sizes_match_the_repos_statement(index):
    stated = {(b.repo, b.format): (b.size.value, b.size.unit) for b in index.catalog.builds if b.size}
    assert stated == STATED_SIZES


def test_builds_without_a_stated_size_show_a_derived_size(index):
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    for build in index.catalog.builds:
        steps = explain(evaluate_build(index, build, cluster, WORKLOADS["chat"]))
        weights = next(s for s in steps if s.key == "weights")
        if build.size is None:
            assert weights.basis == "derived", build.id
            assert "derived from" in weights.text and "stored bits per weight" in weights.text, build.id
        else:
            assert weights.basis == "stated", build.id


def test_a_derived_size_says_how_its_rule_did_on_the_formats_stated_builds(index):
    # Parameters x nominal bits against the repos' own file listings: GGUF's fixed tensor mix lands within a
    # few percent, while NVIDIA ModelOpt NVFP4 keeps embeddings, the LM head and (Gemma 4) attention in BF16,
    # so every stated build of it is larger than the rule says; a derived size of that format is a floor.
    modelopt, gguf = index.size_checks["nvfp4-modelopt"], index.size_checks["gguf-q4_k_m"]
    assert modelopt.builds >= 5 and modelopt.high < -0.05 and modelopt.low < -0.4
    assert gguf.builds >= 10 and -0.05 < gguf.low <= gguf.high < 0.05
    assert index.facts["gemma-4-31b-nvfp4-nvidia"].weights.check is None  # stated: nothing to check
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.explain import explain
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC

    def weights_text(build: str) -> str:
        plan = evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], 1), AGENTIC)
        return next(s.text for s in explain(plan) if s.key == "weights")

    text = weights_text("qwen3.6-27b-nvfp4-nvidia")
    assert f"For the {modelopt.builds} builds of NVFP4 (NVIDIA ModelOpt) whose size a source states" in text
    assert f"{-modelopt.high:.0%} to {-modelopt.low:.0%} below the stated sizes" in text and "a floor" in text
    assert "within -4% to +1% of the stated sizes" in weights_text("qwen3-8b-q4km-unsloth")
    # Parameters x 2 bytes against the BF16 repos' own shards (Qwen2.5-Coder-7B's 7.61B and 15.23 GB, ...).
    assert ("For the 5 builds of BF16 whose size a source states, the same rule comes out within -1% to +0% of the "
            "stated sizes.") in weights_text("llama-3.3-70b-bf16")
    # Against a single stated build the rule says how far it came out from that one size, not a range.
    assert ("For the 1 build of NVFP4 whose size a source states, the same rule comes out -1.5% from its stated "
            "size.") in weights_text("glm-4.6-nvfp4-lukealonso")
    assert "whose size a source states" not in weights_text("kimi-k2-thinking-int4")  # no INT4 build states one
