#!/usr/bin/env bash
# sparkadvisor export: Qwen3.8-Flash-Next (nvidia/Qwen3.8-Flash-Next-NVFP4) on 2 x DGX Spark, Agentic (Claude
# Code) workload.
# This script: node 1 of 2, spark-2 (worker 1, at $NODE_ADDR, the address you set). Run each node's script on
# its own Spark; launcher: native.
# Recipe: tonyd2wild: Qwen3.8-Flash-Next NVFP4, TP2 SPEED profile [qwen3.8-flash-next-tonyd2wild-tp2].
#
# The plan (the numbers sparkadvisor showed):
#   TP=2, PP=1, as the recipe sets it (tonyd2wild: Qwen3.8-Flash-Next NVFP4, TP2 SPEED profile): each node
#   holds 1/2, 61.9 GiB as stored. The recipe logs 63.00 GiB per rank as loaded (measured); the budget uses
#   that.
#   At gpu-memory-utilization 0.7, vLLM takes 0.7 x 121.6 = 85.1 GiB per node; after 63.0 GiB of weights, 22.1
#   GiB is left for the KV cache and activations. vLLM keeps 5.4 GiB beside them, its profile run's peak and
#   its CUDA graph estimate (gpu_worker.determine_available_memory; the estimate on by default since v0.21)
#   and what its rules size (3.69 GiB profile run, activations at max-num-batched-tokens and non-torch memory:
#   this recipe's own logged boot at 8,192 batched tokens, where the recipe runs 4,096 (which needs less, by
#   an amount no log gives); 0.40 GiB CUDA graphs of target and drafter: this model's own log; 1.29 GiB
#   indexer prefill buffer: 40 x 262,144 tokens of max-model-len x 132 B (vLLM's get_max_prefill_buffer_size,
#   reserved once in the profile run)), so 16.7 GiB goes to the KV cache. The recipe's own figures: ledger row
#   12: 0.70 x 121.6 - 63 GiB of weights - 16.74 GiB of KV - 1.29 GiB indexer buffer - 0.40 GiB of decode-only
#   CUDA graphs = 3.69 GiB; the graphs are the one-Spark pair of rows 19 and 23 (same node, MTP3, 6 seqs,
#   4,096 batched tokens; eager 1,077,703 tokens, FULL_DECODE_ONLY 1,053,871): 23,832 tokens at the ledger's
#   16.56 GiB per 995,129 tokens. It fits.
#   16.74 GiB / 2.206 GiB per request x 262,144 = 1.99M tokens, the figure vLLM logs as "GPU KV cache size"
#   (int(max concurrency x max_model_len)). One request: full-attention and indexer rows 8.18 KiB x 158 blocks
#   of 1,664 tokens = 2.050 GiB; linear-attention states 39 layer slots (layers padded to whole KV-cache
#   groups) x (0.81 MiB pages + 0.21 MiB of indexer-key pages each block id also reserves) x 4 pages (1 + 3
#   speculative tokens) = 0.156 GiB; with max-model-len 262,144 (the recipe's --max-model-len), block 1,664
#   tokens (vLLM's default, grown in steps of 16 so one page holds a layer's state), 3 speculative tokens (the
#   recipe's speculative tokens), prefix caching crashes the engine in the GDN path on GB10 (vLLM #54173; the
#   article reports wrong answers), so the recipes turn it off and every agent turn recomputes the whole
#   prompt. At 100,000 tokens per session, 17 concurrent sessions fit (each holding its blocks, window and
#   state pages). Measured: 1.97M tokens (1.97M tokens, seven full 262K contexts; 16.62 GiB of KV (the KV pool
#   ledger's row 15, Bluey and Asusi)). In the 16.62 GiB of KV per node the run logged, one request's 2.206
#   GiB give 1.98M tokens (+0%): the rest of the gap is in what vLLM keeps beside the KV, 5.5 GiB there
#   against 5.4 GiB here. The table shows the measured pool, and the sessions follow it: at the model's cost
#   per session it holds 17 concurrent sessions of 100,000 tokens.
#   Measured 53.7 tok/s (median of 40 prompts, single stream) at its own conditions (2,000 tokens (assumed:
#   not stated), 1 stream, CUDA graphs); the model's 102 tok/s there leaves out the PLE table every token
#   reads (its bytes per token are unpublished), so it is a bound, not a prediction: unknown, and
#   `sparkadvisor fidelity` lists this row apart, never as a pass; 30% of the ceiling.
#   100,000 tokens / measured prefill 2,708 tok/s (cold prefill of a 112K-token prompt) = 37 s to the first
#   token.
#   37 s + 200 tokens / 53.7 tok/s = 41 s per turn.
#
# Caveats:
#   spec-decode-cache-miss (info): with MTP on, the first identical repeat of a request misses the prefix
#   cache (hybrid state and MTP draft state are aligned differently); the second repeat hits
#
# Override any setting below from the environment, e.g. HF_HOME=/data/hf ./node1-worker.sh

set -euo pipefail

HEAD_ADDR="${HEAD_ADDR:-}"  # required: no address was exported for it
CX7_NETDEV="${CX7_NETDEV:-enp1s0f1np1}"
NCCL_IB_HCA="${NCCL_IB_HCA:-rocep1s0f1,roceP2p1s0f1}"
NODE_ADDR="${NODE_ADDR:-}"  # required: no address was exported for it
if [ -z "$HEAD_ADDR" ]; then printf '%s\n' 'HEAD_ADDR is not set: run HEAD_ADDR=ADDR ./node1-worker.sh with the head node'"'"'s ConnectX-7 address, or export again with --head-addr ADDR' >&2; exit 2; fi
if [ -z "$NODE_ADDR" ]; then printf '%s\n' 'NODE_ADDR is not set: run NODE_ADDR=ADDR ./node1-worker.sh with this node'"'"'s own ConnectX-7 address (worker 1), or export again with --worker-addrs ADDR,...' >&2; exit 2; fi
HF_CACHE="${HF_HOME:-$HOME/.cache/huggingface}"
VLLM_CACHE="${VLLM_CACHE_ROOT:-$HOME/.cache/vllm}"
IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
CONTAINER=sparkadvisor-vllm-node1
IMAGE=vllm/vllm-openai:nightly-8a728663c1c3eeace834a95f5654fa653cc1998c
MODEL=nvidia/Qwen3.8-Flash-Next-NVFP4
VLLM_ARGS=(
  nvidia/Qwen3.8-Flash-Next-NVFP4
  --nnodes 2
  --node-rank 1
  --master-addr "$HEAD_ADDR"
  --master-port 29501
  --headless
  --served-model-name qwen3.8-flash-next-nvfp4
  --tensor-parallel-size 2
  --gpu-memory-utilization 0.7
  # --max-model-len: the recipe's.
  --max-model-len 262144
  --kv-cache-dtype fp8_e4m3
  # prefix-caching-disabled (critical): prefix caching crashes the engine in the GDN path on GB10 (vLLM #54173;
  # the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the whole
  # prompt
  # PREFIX CACHING IS OFF: every turn recomputes all 100,000 prompt tokens, 37 s before each first token; fine
  # for chat, unfit for an agent
  --disable-prefix-caching
  --speculative-config '{"method":"mtp","num_speculative_tokens":3}'
  --compilation-config '{"cudagraph_mode":"FULL_DECODE_ONLY"}'
  --tool-call-parser qwen3_xml
  --enable-auto-tool-choice
  --reasoning-parser qwen3
  --quantization modelopt
  --trust-remote-code
  --max-num-seqs 6
  --max-num-batched-tokens 4096
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 1 of 2 (worker)'
warn 'prefix-caching-disabled (critical): prefix caching crashes the engine in the GDN path on GB10 (vLLM #54173; the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the whole prompt'
warn 'PREFIX CACHING IS OFF: every turn recomputes all 100,000 prompt tokens, 37 s before each first token; fine for chat, unfit for an agent'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if docker ps -a --format '{{.Names}}' | grep -qx "$CONTAINER"; then fail "a container named $CONTAINER is still there (an earlier run of this script?): stop it with docker rm -f $CONTAINER, then run this again"; fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

# page-cache-drop (info): run `sync; echo 3 > /proc/sys/vm/drop_caches` on every node before loading, or the
# previous model's page cache starves the loader
say 'dropping the page cache so the loader gets the memory'
sync
sudo sysctl -q -w vm.drop_caches=3

need_kib=89254790  # vLLM takes 0.7 x 121.6 GiB = 85.1 GiB at start
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; vLLM takes 0.7 x 121.6 GiB = 85.1 GiB at start"; fi

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
if [ "$model_bytes" -lt 119700000000 ] || [ "$model_bytes" -gt 146300000000 ]; then
  warn "the model is $((model_bytes / 1000000000)) GB on disk; the plan expects 133.0 GB"
fi

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
)

exec docker run --rm "${DOCKER_ARGS[@]}" --entrypoint vllm "$IMAGE" serve "${VLLM_ARGS[@]}"
