#!/usr/bin/env bash
# sparkadvisor export: Qwen3-Next-80B-A3B (nvidia/Qwen3-Next-80B-A3B-Thinking-NVFP4) on 1 x DGX Spark, Agentic
# (Claude Code) workload.
# No community recipe: every flag below comes from sparkadvisor's plan alone.
#
# The plan (the numbers sparkadvisor showed):
#   One node holds all of it: 47.3 GiB.
#   At gpu-memory-utilization 0.85, vLLM takes 0.85 x 121.6 = 103.4 GiB per node; after 47.3 GiB of weights,
#   56.0 GiB is left for the KV cache and activations. vLLM keeps 5.6 GiB beside them, its profile run's peak
#   and its CUDA graph estimate (gpu_worker.determine_available_memory; the estimate on by default since
#   v0.21) and what its rules size (3.62 GiB profile run, activations at max-num-batched-tokens and non-torch
#   memory: GLM-5.3-Flash TP2's log at 8,192 batched tokens, less its indexer buffer, assumed here; 1.99 GiB
#   CUDA graphs: DeepSeek-V4.1-Flash TP4's log (FULL_AND_PIECEWISE), assumed here), so 50.4 GiB goes to the KV
#   cache. It fits.
#   50.44 GiB / 6.076 GiB per request x 262,144 = 2.18M tokens, the figure vLLM logs as "GPU KV cache size"
#   (int(max concurrency x max_model_len)). One request: full-attention rows 24.00 KiB x 482 blocks of 544
#   tokens = 6.001 GiB; linear-attention states 36 layer slots (layers padded to whole KV-cache groups) x
#   (1.06 MiB pages) x 2 pages (2 + 0 speculative tokens: prefix caching keeps one more, vLLM's "align" mode)
#   = 0.075 GiB; with max-model-len 262,144 (the model's native context), block 544 tokens (vLLM's default,
#   grown in steps of 16 so one page holds a layer's state), 0 speculative tokens (no speculation), prefix
#   caching on (vLLM's default). At 100,000 tokens per session, 21 concurrent sessions fit (each holding its
#   blocks, window and state pages).
#   5,000 tokens / estimated prefill 1,477 tok/s (range 1,227-2,072: an 80% range: split-conformal from the
#   errors on 45 measurements left out of the fit in 5 folds, at most 10% of them below it and 10% above; per
#   prompt token 0.677 ms = GEMM 0.182 ms (9.1 GFLOP, experts at 2x the cost, at 50 TFLOPS on the fp4 tensor
#   path vllm takes for nvfp4-modelopt: vllm's own, fitted to 6 prefill measurements of 6 recipes) + attention
#   FLOPs 0.451 ms (19.17 GFLOP attending to ~97,500 tokens, at 42 TFLOPS: pooled over engines, fitted to 45
#   prefill measurements) + K/V stream 0.000 ms (2.40 GB attended, read once per tile of queries, at 0.000
#   ms/GB: fitted to 0: no cost beyond the FLOPs) + weights 0.044 ms (50.8 GB read once per 5,000-token chunk,
#   at 4.30 ms/GB: the published read test)) = 3.4 s to the first token. Uncached (a cold 100,000-token
#   prompt): 44 s.
#   3.4 s + 200 tokens / 33.4 tok/s = 9.4 s per turn.
#
# Override any setting below from the environment, e.g. HF_HOME=/data/hf ./serve.sh

set -euo pipefail

HF_CACHE="${HF_HOME:-$HOME/.cache/huggingface}"
VLLM_CACHE="${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}"
IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
CONTAINER=sparkadvisor-vllm-node0
IMAGE=vllm/vllm-openai:v0.33.0
MODEL=nvidia/Qwen3-Next-80B-A3B-Thinking-NVFP4
VLLM_ARGS=(
  nvidia/Qwen3-Next-80B-A3B-Thinking-NVFP4
  --served-model-name qwen3-next-80b-a3b-nvfp4
  --tensor-parallel-size 1
  --gpu-memory-utilization 0.85
  # --max-model-len: the model's native context.
  --max-model-len 262144
  --kv-cache-dtype auto
  --enable-prefix-caching
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
warn 'no tool-call parser is known for this build: an agent'"'"'s tool calls need --tool-call-parser NAME --enable-auto-tool-choice; add them before pointing Claude Code at it'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if docker ps -a --format '{{.Names}}' | grep -qx "$CONTAINER"; then fail "a container named $CONTAINER is still there (an earlier run of this script?): stop it with docker rm -f $CONTAINER, then run this again"; fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

need_kib=108380816  # vLLM takes 0.85 x 121.6 GiB = 103.4 GiB at start
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; vLLM takes 0.85 x 121.6 GiB = 103.4 GiB at start"; fi

# hf download fetches only what is missing (export HF_TOKEN first for a gated repo). vLLM loads the
# files at the top of the repo, so sub-folders (original/ or metal/ copies of the weights) are left out.
model_path="$(hf download "$MODEL" --exclude '*/*' --quiet)"
model_bytes="$(find -L "$model_path" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
if [ "$model_bytes" -lt 45720000000 ] || [ "$model_bytes" -gt 55880000000 ]; then
  warn "the model is $((model_bytes / 1000000000)) GB on disk; the plan expects 50.8 GB"
fi

# no recipe names an image: using vllm/vllm-openai:v0.33.0, the vLLM whose flags this export was checked
# against
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
)

say "when it has loaded: curl -fsS http://localhost:8000/health"
exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint vllm "$IMAGE" serve "${VLLM_ARGS[@]}"
