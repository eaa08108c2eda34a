#!/usr/bin/env bash
# sparkadvisor export: Qwen3.8-Flash-Next (nvidia/Qwen3.8-Flash-Next-NVFP4) on 1 x DGX Spark, Agentic (Claude
# Code) workload.
# Recipe: tonyd2wild: Qwen3.8-Flash-Next NVFP4 on one Spark (PLE table on disk)
# [qwen3.8-flash-next-tonyd2wild-tp1].
#
# The plan (the numbers sparkadvisor showed):
#   One node holds all of it: 76.2 GiB.
#   At gpu-memory-utilization 0.8, vLLM takes 0.8 x 121.6 = 97.3 GiB per node; after 76.2 GiB of weights, 21.1
#   GiB is left for the KV cache and activations. vLLM keeps 6.4 GiB beside them, its profile run's peak and
#   its CUDA graph estimate (gpu_worker.determine_available_memory; the estimate on by default since v0.21)
#   and what its rules size (2.57 GiB profile run, activations at max-num-batched-tokens and non-torch memory:
#   this recipe's own logged boot; 1.99 GiB CUDA graphs: DeepSeek-V4.1-Flash TP4's log (FULL_AND_PIECEWISE),
#   assumed here; 0.55 GiB drafter graphs: same log, assumed here; 1.29 GiB indexer prefill buffer: 40 x
#   262,144 tokens of max-model-len x 132 B (vLLM's get_max_prefill_buffer_size, reserved once in the profile
#   run)), so 14.7 GiB goes to the KV cache. The recipe's own figures: ledger row 9, the twin boot of the
#   shipped one (row 7) with MTP3 on the other node: 0.80 x 121.6 - 76.18 GiB of weights (the README's ~76
#   GiB) - 14.7 GiB of KV - 1.29 GiB indexer buffer - 1.99 + 0.55 GiB of CUDA graphs (the general figures: no
#   log splits this model's PIECEWISE graphs from its profile run) = 2.57 GiB; the ledger's other PIECEWISE
#   boots leave 4.5 to 7.7 GiB beside weights and KV in all, the spread of one boot to the next. Even with all
#   130.6 GB of the node, the 133.0 GB build is 2.4 GB short. It fits.
#   14.70 GiB / 4.044 GiB per request x 262,144 = 953k tokens, the figure vLLM logs as "GPU KV cache size"
#   (int(max concurrency x max_model_len)). One request: full-attention and indexer rows 14.68 KiB x 157
#   blocks of 1,680 tokens = 3.692 GiB; linear-attention states 39 layer slots (layers padded to whole
#   KV-cache groups) x (1.64 MiB pages + 0.21 MiB of indexer-key pages each block id also reserves) x 5 pages
#   (1 + 4 speculative tokens) = 0.353 GiB; with max-model-len 262,144 (the recipe's --max-model-len), block
#   1,680 tokens (vLLM's default, grown in steps of 16 so one page holds a layer's state), 4 speculative
#   tokens (the recipe's speculative tokens), prefix caching crashes the engine in the GDN path on GB10 (vLLM
#   #54173; the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the
#   whole prompt. At 100,000 tokens per session, 8 concurrent sessions fit (each holding its blocks, window
#   and state pages). Measured: 995k tokens (at gpu-memory-utilization 0.80, fp8 KV, MTP4, piecewise graphs;
#   16.6 GiB of KV (the README's KV pool ledger)). In the 16.6 GiB of KV per node the run logged, one
#   request's 4.044 GiB give 1.08M tokens (+8%): the rest of the gap is in what vLLM keeps beside the KV, 4.5
#   GiB there against 6.4 GiB here. The table shows the measured pool, and the sessions follow it: at the
#   model's cost per session it holds 8 concurrent sessions of 100,000 tokens.
#   Measured 32.5 tok/s (median of 40 prompts; the article's 43.9 matches the README's counting-prompt figure
#   (43.8), not its median) at its own conditions (2,000 tokens (assumed: not stated), 1 stream, CUDA graphs);
#   the model's 64 tok/s there leaves out the PLE table every token reads (its bytes per token are
#   unpublished), so it is a bound, not a prediction: unknown, and `sparkadvisor fidelity` lists this row
#   apart, never as a pass; 36% of the ceiling.
#   100,000 tokens / measured prefill 1,643 tok/s (cold prefill of a 113K-token prompt) = 61 s to the first
#   token.
#   61 s + 200 tokens / 32.5 tok/s = 67 s per turn.
#
# Override any setting below from the environment, e.g. HF_HOME=/data/hf ./serve.sh

set -euo pipefail

HF_CACHE="${HF_HOME:-$HOME/.cache/huggingface}"
VLLM_CACHE="${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}"
IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
CONTAINER=sparkadvisor-vllm-node0
IMAGE=vllm/vllm-openai:nightly-8a728663c1c3eeace834a95f5654fa653cc1998c
MODEL=nvidia/Qwen3.8-Flash-Next-NVFP4
RECIPE_DIR="${RECIPE_DIR:-}"  # a checkout of the recipe repository (its patches mount from it)
VLLM_ARGS=(
  nvidia/Qwen3.8-Flash-Next-NVFP4
  --served-model-name qwen3.8-flash-next-nvfp4
  --tensor-parallel-size 1
  --gpu-memory-utilization 0.8
  # --max-model-len: the recipe's.
  --max-model-len 262144
  --kv-cache-dtype fp8_e4m3
  # prefix-caching-disabled (critical): prefix caching crashes the engine in the GDN path on GB10 (vLLM #54173;
  # the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the whole
  # prompt
  # PREFIX CACHING IS OFF: every turn recomputes all 100,000 prompt tokens, 61 s before each first token; fine
  # for chat, unfit for an agent
  --disable-prefix-caching
  --speculative-config '{"method":"mtp","num_speculative_tokens":4}'
  --compilation-config '{"cudagraph_mode":"PIECEWISE"}'
  --tool-call-parser qwen3_xml
  --enable-auto-tool-choice
  --reasoning-parser qwen3
  --quantization modelopt
  --trust-remote-code
  --max-num-seqs 8
  --host 0.0.0.0
  --port 8000
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 0 of 1 (head)'
warn 'prefix-caching-disabled (critical): prefix caching crashes the engine in the GDN path on GB10 (vLLM #54173; the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the whole prompt'
warn 'PREFIX CACHING IS OFF: every turn recomputes all 100,000 prompt tokens, 61 s before each first token; fine for chat, unfit for an agent'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if docker ps -a --format '{{.Names}}' | grep -qx "$CONTAINER"; then fail "a container named $CONTAINER is still there (an earlier run of this script?): stop it with docker rm -f $CONTAINER, then run this again"; fi

PATCH_ARGS=()

# Patch qwen38-ple-mmap: PLE table on disk (mmap), rows read on demand (needed: the plan fits 1 x DGX Spark
# only with it).
# Without it stock vLLM holds the 47.68 GiB PLE table in memory, and the build no longer fits one Spark.
# Get it (then run with RECIPE_DIR=DIR):
#   git clone https://github.com/tonyd2wild/Qwen3.8-Flash-Next-NVFP4-DGX-Spark ~/sparkadvisor-recipes/Qwen3.8-Flash-Next-NVFP4-DGX-Spark
#   git -C ~/sparkadvisor-recipes/Qwen3.8-Flash-Next-NVFP4-DGX-Spark checkout 0d507df43a5ad3c7e35db8a48a91ad037c114239
if [ -n "$RECIPE_DIR" ] && [ -f "$RECIPE_DIR"/single-spark-vllm-tp1/patch/ple_layer.py ] && [ -f "$RECIPE_DIR"/single-spark-vllm-tp1/patch/ple_mmap.py ]; then
  PATCH_ARGS+=(-v "$RECIPE_DIR"/single-spark-vllm-tp1/patch/ple_layer.py:/usr/local/lib/python3.12/dist-packages/vllm/models/qwen4_exp/nvidia/ple_layer.py:ro -v "$RECIPE_DIR"/single-spark-vllm-tp1/patch/ple_mmap.py:/usr/local/lib/python3.12/dist-packages/vllm/models/qwen4_exp/nvidia/ops/ple_mmap.py:ro -e QWEN4EXP_PLE_MMAP=1 -e QWEN4EXP_PLE_MMAP_THREADS=64)
  if [ "$(git -C "$RECIPE_DIR" rev-parse HEAD 2>/dev/null)" != 0d507df43a5ad3c7e35db8a48a91ad037c114239 ]; then
    warn "$RECIPE_DIR is not at commit 0d507df43a5ad3c7e35db8a48a91ad037c114239, where the catalog read patch qwen38-ple-mmap"
  fi
else
  fail 'patch qwen38-ple-mmap (PLE table on disk (mmap), rows read on demand) is missing: RECIPE_DIR must name a checkout of https://github.com/tonyd2wild/Qwen3.8-Flash-Next-NVFP4-DGX-Spark. Without it stock vLLM holds the 47.68 GiB PLE table in memory, and the build no longer fits one Spark. Get it: git clone https://github.com/tonyd2wild/Qwen3.8-Flash-Next-NVFP4-DGX-Spark ~/sparkadvisor-recipes/Qwen3.8-Flash-Next-NVFP4-DGX-Spark && git -C ~/sparkadvisor-recipes/Qwen3.8-Flash-Next-NVFP4-DGX-Spark checkout 0d507df43a5ad3c7e35db8a48a91ad037c114239; then run this script with RECIPE_DIR=~/sparkadvisor-recipes/Qwen3.8-Flash-Next-NVFP4-DGX-Spark'
fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

# page-cache-drop (info): run `sync; echo 3 > /proc/sys/vm/drop_caches` on every node before loading, or the
# previous model's page cache starves the loader
say 'dropping the page cache so the loader gets the memory'
sync
sudo sysctl -q -w vm.drop_caches=3

need_kib=102005474  # vLLM takes 0.8 x 121.6 GiB = 97.3 GiB at start
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; vLLM takes 0.8 x 121.6 GiB = 97.3 GiB at start"; fi

# hf download fetches only what is missing (export HF_TOKEN first for a gated repo). vLLM loads the
# files at the top of the repo, so sub-folders (original/ or metal/ copies of the weights) are left out.
model_path="$(hf download "$MODEL" --exclude '*/*' --quiet)"
model_bytes="$(find -L "$model_path" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
if [ "$model_bytes" -lt 119700000000 ] || [ "$model_bytes" -gt 146300000000 ]; then
  warn "the model is $((model_bytes / 1000000000)) GB on disk; the plan expects 133.0 GB"
fi

# patch-required (warning): on one Spark the recipe patches vLLM to keep the 47.68 GiB PLE table on disk and
# read the rows each token needs
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then docker pull "$IMAGE"; fi

# vLLM's compile cache stays on the host, so only the first start compiles: a cold compile takes
# minutes, and vLLM counts its temporary memory against the KV cache (vllm #54122).
mkdir -p "$VLLM_CACHE"

# VLLM_API_KEY passes by name: set it in your shell to require a token; no token is written here.
DOCKER_ARGS=(
  --name "$CONTAINER" --network host --ipc host --gpus all --shm-size 10.24g
  -v "$HF_CACHE:/root/.cache/huggingface" -v "$VLLM_CACHE:/root/.cache/vllm"
  -e VLLM_API_KEY
  -e HF_HOME=/root/.cache/huggingface
  -e HF_HUB_OFFLINE=1
  -e VLLM_CACHE_ROOT=/root/.cache/vllm
  "${PATCH_ARGS[@]}"
)

say "when it has loaded: curl -fsS http://localhost:8000/health"
exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint vllm "$IMAGE" serve "${VLLM_ARGS[@]}"
