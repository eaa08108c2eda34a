#!/usr/bin/env bash
# sparkadvisor export: GLM-5.3-Flash (RedHatAI/GLM-5.3-Flash-NVFP4) on 2 x DGX Spark, Agentic (Claude Code)
# workload.
# This script: node 0 of 2, spark-1 (head: serves the API at $HEAD_ADDR:8000, the address you set). Run each
# node's script on its own Spark; launcher: native.
# Recipe: tonyd2wild: GLM-5.3-Flash NVFP4 + DFlash2, TP2 [glm-5.3-flash-tonyd2wild-tp2].
#
# The plan (the numbers sparkadvisor showed):
#   TP=2, PP=1, as the recipe sets it (tonyd2wild: GLM-5.3-Flash NVFP4 + DFlash2, TP2): each node holds 1/2,
#   92.2 GiB.
#   At gpu-memory-utilization 0.85, vLLM takes 0.85 x 121.6 = 103.4 GiB per node; after 92.2 GiB of weights,
#   11.2 GiB is left for the KV cache and activations. The recipe pins the KV cache at 6 GiB per node, so vLLM
#   skips its profile run; activations come out of what is left. It fits.
#   6.00 GiB / 2.418 GiB per request x 262,144 = 650k tokens, the figure vLLM logs as "GPU KV cache size"
#   (int(max concurrency x max_model_len)). One request: full-attention and indexer rows 5.85 KiB x 57 blocks
#   of 4,608 tokens = 1.466 GiB; linear-attention states 44 layer slots (layers padded to whole KV-cache
#   groups) x (2.25 MiB pages + 0.15 MiB of indexer-key pages each block id also reserves) x 9 pages (2 + 7
#   speculative tokens: prefix caching keeps one more, vLLM's "align" mode) = 0.926 GiB; k-pool tail 1 group x
#   11 slots x 2.40 MiB (one block id per request, vLLM 0.1.dev20051's KpoolTailSpec) = 0.026 GiB; with
#   max-model-len 262,144 (the recipe's --max-model-len), block 4,608 tokens (the recipe's --block-size, grown
#   in steps of 2,304 so one page holds a layer's state), 7 speculative tokens (the recipe's speculative
#   tokens), prefix caching on (vLLM's default). Not counted: the draft model's own KV cache (its layers and
#   window are not in the catalog); tonyd2wild's DFlash2 port gives its 5 sliding-window layers a group that
#   shares the MLA tensors and takes about 6 block ids per request, which would make the pool about 6%
#   smaller. At 100,000 tokens per session, 3 concurrent sessions fit (each holding its blocks, window and
#   state pages). Measured: 581k-679k tokens (581,040 profiler-sized, 678,661 at the 6 GiB pin). The table
#   shows the measured pool, and the sessions follow it: at the model's cost per session it holds 4 concurrent
#   sessions of 100,000 tokens.
#   Measured 46.9 tok/s (single stream, code prompt, warm, 74.1% draft acceptance (README, 2026-08-28)) at its
#   own conditions (2,000 tokens (assumed: not stated), 1 stream, eager); the model predicts 40 tok/s there,
#   range 35-47: inside the predicted range; 77% of the ceiling.
#   5,000 tokens / 1,345 tok/s derived: the measured prefill 1,365 tok/s (a 262K-token prompt took 192 s cold
#   (README)) holds at its own depth (a 262,144-token prompt, ~131,072 attended tokens per prompt token); the
#   model's own rate at this depth (~97,500 attended, 5,000-token chunks vs 8,192 measured) over its rate
#   there scales it x0.99 (depth moves the attention and indexer FLOPs and the K/V read; the chunk moves the
#   weights read per token) = 3.7 s to the first token. Uncached (a cold 100,000-token prompt): 68 s.
#   3.7 s + 200 tokens / 46.9 tok/s = 8.0 s per turn.
#
# Caveats:
#   slow-cold-load (info): a cold load takes about 15 minutes (shard loading dominates)
#
# Override any setting below from the environment, e.g. HF_HOME=/data/hf ./node0-head.sh

set -euo pipefail

HEAD_ADDR="${HEAD_ADDR:-}"  # required: no address was exported for it
CX7_NETDEV="${CX7_NETDEV:-enp1s0f1np1}"
NCCL_IB_HCA="${NCCL_IB_HCA:-rocep1s0f1,roceP2p1s0f1}"
NODE_ADDR="${NODE_ADDR:-$HEAD_ADDR}"
if [ -z "$HEAD_ADDR" ]; then printf '%s\n' 'HEAD_ADDR is not set: run HEAD_ADDR=ADDR ./node0-head.sh with the head node'"'"'s ConnectX-7 address, or export again with --head-addr ADDR' >&2; exit 2; fi
HF_CACHE="${HF_HOME:-$HOME/.cache/huggingface}"
VLLM_CACHE="${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}"
IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
CONTAINER=sparkadvisor-vllm-node0
IMAGE=ghcr.io/tonyd2wild/vllm-glm53-flash:sm121-v11-dflash2
MODEL=RedHatAI/GLM-5.3-Flash-NVFP4
DRAFT=incoai/GLM-5.3-Flash-DFlash2
RECIPE_DIR="${RECIPE_DIR:-}"  # a checkout of the recipe repository (its patches mount from it)
VLLM_ARGS=(
  RedHatAI/GLM-5.3-Flash-NVFP4
  --nnodes 2
  --node-rank 0
  --master-addr "$HEAD_ADDR"
  --master-port 29501
  --served-model-name glm-5.3-flash-nvfp4-redhat
  --tensor-parallel-size 2
  --gpu-memory-utilization 0.85
  # the KV cache pinned at 6 GiB per node (G = 2^30 bytes).
  --kv-cache-memory-bytes 6G
  # --max-model-len: the recipe's.
  --max-model-len 262144
  --kv-cache-dtype fp8_e4m3
  --block-size 2304
  --enable-prefix-caching
  --speculative-config '{"method":"dflash","model":"incoai/GLM-5.3-Flash-DFlash2","num_speculative_tokens":7}'
  # eager-only (info): runs with --enforce-eager at TP2 (CUDA graphs measured flat there), paying a launch cost
  # on every kernel
  --enforce-eager
  --tool-call-parser glm47
  --enable-auto-tool-choice
  --reasoning-parser glm45
  --max-num-seqs 6
  --max-num-batched-tokens 8192
  --host 0.0.0.0
  --port 8000
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 0 of 2 (head)'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if docker ps -a --format '{{.Names}}' | grep -qx "$CONTAINER"; then fail "a container named $CONTAINER is still there (an earlier run of this script?): stop it with docker rm -f $CONTAINER, then run this again"; fi

PATCH_ARGS=()

# Patch glm-indexer-topk-sm121: sparse-attention indexer top-k fix for SM121 (needed: --max-model-len 262,144
# is past the ~24,000 tokens stock vLLM survives).
# Without it both published images still carry a decode-time top-k kernel that hard-kills the engine on any
# decode past ~24K context on GB10.
# Get it (then run with RECIPE_DIR=DIR):
#   git clone https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark ~/sparkadvisor-recipes/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark
#   git -C ~/sparkadvisor-recipes/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark checkout 06b681991fb7ca6743c4fba535cdc7e8df78cd4b
if [ -n "$RECIPE_DIR" ] && [ -f "$RECIPE_DIR"/docker/sparse_attn_indexer_kpool_sm121.py ]; then
  PATCH_ARGS+=(-v "$RECIPE_DIR"/docker/sparse_attn_indexer_kpool_sm121.py:/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/sparse_attn_indexer_kpool.py:ro)
  if [ "$(git -C "$RECIPE_DIR" rev-parse HEAD 2>/dev/null)" != 06b681991fb7ca6743c4fba535cdc7e8df78cd4b ]; then
    warn "$RECIPE_DIR is not at commit 06b681991fb7ca6743c4fba535cdc7e8df78cd4b, where the catalog read patch glm-indexer-topk-sm121"
  fi
else
  fail 'patch glm-indexer-topk-sm121 (sparse-attention indexer top-k fix for SM121) is missing: RECIPE_DIR must name a checkout of https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark. Without it both published images still carry a decode-time top-k kernel that hard-kills the engine on any decode past ~24K context on GB10. Get it: git clone https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark ~/sparkadvisor-recipes/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark && git -C ~/sparkadvisor-recipes/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark checkout 06b681991fb7ca6743c4fba535cdc7e8df78cd4b; then run this script with RECIPE_DIR=~/sparkadvisor-recipes/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark'
fi

# swap-required (warning): swap must be on with vm.swappiness=0 or the worker dies during the MoE repack at
# load; a machine-wide policy change (with swap on, an overrun pages for hours instead of an honest CUDA OOM)
if [ -z "$(swapon --show --noheadings)" ]; then fail 'this build needs swap on (with vm.swappiness=0) to survive the loading peak: a machine-wide policy change, decide it before you run this'; fi
if [ "$(sysctl -n vm.swappiness)" != 0 ]; then fail 'vm.swappiness must be 0: sudo sysctl -w vm.swappiness=0'; fi

# page-cache-drop (info): run `sync; echo 3 > /proc/sys/vm/drop_caches` on every node before loading, or the
# previous model's page cache starves the loader
say 'dropping the page cache so the loader gets the memory'
sync
sudo sysctl -q -w vm.drop_caches=3

need_kib=108380816  # vLLM takes 0.85 x 121.6 GiB = 103.4 GiB at start
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; vLLM takes 0.85 x 121.6 GiB = 103.4 GiB at start"; fi

# Both ConnectX-7 RoCE devices must be up: NCCL over one PCIe x4 twin tops out at 13.9 GB/s.
links="$(ibdev2netdev)"
IFS=, read -r -a hcas <<<"$NCCL_IB_HCA"
for dev in "${hcas[@]}"; do
  if ! grep -q "^$dev .*(Up)" <<<"$links"; then fail "RoCE device $dev is not up (ibdev2netdev)"; fi
done
if ! ip -o addr show | grep -qF " $NODE_ADDR/"; then fail "no interface here has $NODE_ADDR: set NODE_ADDR to this node's ConnectX-7 address"; fi

# hf download fetches only what is missing (export HF_TOKEN first for a gated repo). vLLM loads the
# files at the top of the repo, so sub-folders (original/ or metal/ copies of the weights) are left out.
model_path="$(hf download "$MODEL" --exclude '*/*' --quiet)"
model_bytes="$(find -L "$model_path" -maxdepth 1 -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')"
if [ "$model_bytes" -lt 178200000000 ] || [ "$model_bytes" -gt 217800000000 ]; then
  warn "the model is $((model_bytes / 1000000000)) GB on disk; the plan expects 198.0 GB"
fi
hf download "$DRAFT" --quiet >/dev/null

# patch-required (warning): stock vLLM's sparse-attention indexer top-k kernel kills the engine past ~24K
# context on GB10; the recipe bind-mounts a patched sparse_attn_indexer_kpool.py
# custom-image (info): needs the recipe's own sm121 vLLM image with the DFlash2 drafter
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
  -e "VLLM_HOST_IP=$NODE_ADDR"
  -e "MASTER_ADDR=$HEAD_ADDR"
  -e "NCCL_SOCKET_IFNAME=$CX7_NETDEV"
  -e "GLOO_SOCKET_IFNAME=$CX7_NETDEV"
  -e "TP_SOCKET_IFNAME=$CX7_NETDEV"
  -e "UCX_NET_DEVICES=$CX7_NETDEV"
  -e "OMPI_MCA_btl_tcp_if_include=$CX7_NETDEV"
  -e "NCCL_IB_HCA=$NCCL_IB_HCA"
  -e NCCL_IB_DISABLE=0
  "${PATCH_ARGS[@]}"
)

# slow-cold-load (info): a cold load takes about 15 minutes (shard loading dominates)
say "when it has loaded: curl -fsS http://$HEAD_ADDR:8000/health"
exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint vllm "$IMAGE" serve "${VLLM_ARGS[@]}"
