#!/usr/bin/env bash
# sparkadvisor export: DeepSeek-R1 (unsloth/DeepSeek-R1-GGUF) on 2 x DGX Spark, Agentic (Claude Code)
# workload, on llama.cpp.
# This script: node 1 of 2, spark-2 (rpc-server 1, at $NODE_ADDR, the address you set). Start every worker's
# script first, then the head's.
# No community recipe: every flag below comes from sparkadvisor's plan alone.
#
# The plan (the numbers sparkadvisor showed):
#   TP=1, PP=2, llama.cpp splits a model across devices by its layers and their KV (ggml's default
#   --split-mode layer) and reaches the other machines through its RPC backend, which its README calls a
#   fragile proof of concept, so one token passes the nodes one after another: each node holds 1/2, 73.6 GiB.
#   llama.cpp allocates the weights, the KV cache for its context (--ctx-size) and its compute buffers in the
#   node's 121.6 GiB. Sized here by vLLM's rules as a stand-in (llama.cpp's compute buffers are not modelled):
#   103.4 GiB for the engine, 73.6 GiB of weights, 5.6 GiB kept for activations, so 24.2 GiB goes to the KV
#   cache. It fits.
#   24.18 GiB / 5.449 GiB per 163,840-token context = 727k tokens, by vLLM's per-request rule as a stand-in
#   (llama.cpp allocates its KV cache for --ctx-size tokens, shared by its --parallel slots). At 100,000
#   tokens per session, 7 concurrent sessions fit.
#   5,000 tokens / estimated prefill 161 tok/s (range 134-226: an 80% range: split-conformal from the errors
#   on 45 measurements left out of the fit in 5 folds, at most 10% of them below it and 10% above; per prompt
#   token 6.217 ms = GEMM 1.343 ms (57.5 GFLOP per node, experts at 2x the cost, at 43 TFLOPS on the int8
#   tensor path llama.cpp takes for gguf-ud-iq1_m: llama.cpp's own, fitted to 25 prefill measurements of 5
#   recipes) + attention FLOPs 2.998 ms (194.89 GFLOP attending to ~97,500 tokens, at 65 TFLOPS: llama.cpp's
#   own, fitted to 25 prefill measurements) + K/V stream 0.156 ms (3.43 GB attended, read once per tile of
#   queries, at 0.045 ms/GB: llama.cpp's own, fitted to 25 prefill measurements) + weights 0.166 ms (79.0 GB
#   per node read once per 2,048-token chunk, at 4.30 ms/GB: the published read test) + link 0.001 ms (the
#   hidden state handed to the next stage's layers) + pipeline 1.554 ms (2 stages, 3 ubatches a batch, each
#   batch filling and draining them: (ubatches + stages - 1) / ubatches = 1.33x a stage's time)) = 31 s to the
#   first token. Uncached (a cold 100,000-token prompt): 6 min 31 s.
#   31 s + 200 tokens / 12.8 tok/s = 47 s per turn.
#
# llama.cpp runs from a local build with CUDA and its RPC backend, as its own DGX Spark benchmarks were run.
# Build it once on every node:
#   git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp
#   cmake -B build -DGGML_CUDA=ON -DGGML_RPC=ON && cmake --build build --config Release -j
#
# Override any setting below from the environment, e.g. RPC_SERVER=~/llama.cpp/build/bin/ggml-rpc-server ./node1-worker.sh

set -euo pipefail

IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
RPC_SERVER="${RPC_SERVER:-}"  # empty: ggml-rpc-server or rpc-server, whichever is on PATH
NODE_ADDR="${NODE_ADDR:-}"  # required: no address was exported for it
if [ -z "$NODE_ADDR" ]; then printf '%s\n' 'NODE_ADDR is not set: run NODE_ADDR=ADDR ./node1-worker.sh with this node'"'"'s own address on the link to the head (rpc-server listens there only), or export again with --worker-addrs ADDR,...' >&2; exit 2; fi
RPC_ARGS=(
  --host "$NODE_ADDR"
  --port 50052
  --cache
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 1 of 2 (worker)'
warn 'llama.cpp'"'"'s RPC backend is a proof of concept, fragile and insecure (its README): rpc-server listens on each node'"'"'s own address only; never expose it on an open network'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

need_kib=82862358  # rpc-server holds 73.6 GiB of weights and 5.4 GiB of KV cache on this node; its compute buffers come on top
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; rpc-server holds 73.6 GiB of weights and 5.4 GiB of KV cache on this node; its compute buffers come on top"; fi

if [ -z "$RPC_SERVER" ]; then
  RPC_SERVER="$(command -v ggml-rpc-server || command -v rpc-server || true)"
fi
if [ -z "$RPC_SERVER" ]; then
  fail 'no rpc-server on PATH: build llama.cpp with -DGGML_CUDA=ON -DGGML_RPC=ON and run with RPC_SERVER=build/bin/ggml-rpc-server (rpc-server in older builds)'
fi
if ! ip -o addr show | grep -qF " $NODE_ADDR/"; then fail "no interface here has $NODE_ADDR: set NODE_ADDR to this node's own address on the link to the head"; fi

# rpc-server keeps this node's share of the weights in its cache (--cache, under $LLAMA_CACHE or
# ~/.cache/llama.cpp/rpc), so a restart need not send them again.
exec "$RPC_SERVER" "${RPC_ARGS[@]}"
