#!/usr/bin/env bash
# sparkadvisor export: DeepSeek-R1 (unsloth/DeepSeek-R1-GGUF) on 2 x DGX Spark, Agentic (Claude Code)
# workload, on llama.cpp.
# This script: node 0 of 2, spark-1 (head: llama-server serves the API at port 8000). Start every worker's
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
# Override any setting below from the environment, e.g. LLAMA_SERVER=~/llama.cpp/build/bin/llama-server ./node0-head.sh

set -euo pipefail

IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
LLAMA_SERVER="${LLAMA_SERVER:-llama-server}"  # the llama-server of your build
RPC_SERVERS="${RPC_SERVERS:-}"  # required: no address was exported for it
if [ -z "$RPC_SERVERS" ]; then printf '%s\n' 'RPC_SERVERS is not set: run RPC_SERVERS=ADDR1:50052 ./node0-head.sh with each worker'"'"'s address, rank 1 first, or export again with --worker-addrs ADDR,...' >&2; exit 2; fi
LLAMA_ARGS=(
  --hf-repo unsloth/DeepSeek-R1-GGUF:UD-IQ1_M
  # --no-mmproj: the plan counts the text model only; drop this to load the vision projector too.
  --no-mmproj
  --alias deepseek-r1-ud-iq1m-unsloth
  --host 0.0.0.0
  --port 8000
  # --ctx-size: 1 x 163,840 tokens, one KV cache the --parallel slots share (--kv-unified); each request may use
  # all of it, up to the model's training context.
  --ctx-size 163840
  # --parallel 4: llama-server's own default is 4 slots; a second request (a subagent, a concurrent call) takes
  # a free slot, so the conversation's slot keeps its cached prompt.
  --parallel 4
  --kv-unified
  # --n-gpu-layers: every layer on the GPU (a number past any model's layer count).
  --n-gpu-layers 999
  # --load-mode none: read the weights rather than map the file; on a DGX Spark mmap loads about ten times
  # slower (llama.cpp #27742).
  --load-mode none
  # --batch-size: 4 ubatches a batch, which llama.cpp pipelines across the devices' layers; with one ubatch a
  # batch the devices would take turns.
  --batch-size 8192
  # --ubatch-size: the batch llama.cpp's DGX Spark benchmarks ran with (its default is 512).
  --ubatch-size 2048
  --jinja
  # --metrics: the Prometheus counters `sparkadvisor probe` reads (llama-server leaves them off).
  --metrics
  # --rpc: each worker's rpc-server, rank 1 first; the layers are split over every node's GPU.
  --rpc "$RPC_SERVERS"
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 0 of 2 (head)'
warn 'llama.cpp'"'"'s RPC backend is a proof of concept, fragile and insecure (its README): rpc-server listens on each node'"'"'s own address only; never expose it on an open network'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

need_kib=82862358  # llama.cpp loads 73.6 GiB of weights and 5.4 GiB of KV cache on this node; its compute buffers come on top
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; llama.cpp loads 73.6 GiB of weights and 5.4 GiB of KV cache on this node; its compute buffers come on top"; fi

if ! command -v "$LLAMA_SERVER" >/dev/null; then
  fail "no llama-server at $LLAMA_SERVER: build llama.cpp (git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp; cmake -B build -DGGML_CUDA=ON -DGGML_RPC=ON && cmake --build build --config Release -j) and run with LLAMA_SERVER=build/bin/llama-server"
fi
help="$("$LLAMA_SERVER" --help 2>&1 || true)"
for flag in --hf-repo --no-mmproj --alias --host --port --ctx-size --parallel --kv-unified --n-gpu-layers --load-mode --batch-size --ubatch-size --jinja --metrics --rpc; do
  if ! grep -qF -- "$flag" <<<"$help"; then fail "this llama-server does not know $flag: build a newer llama.cpp"; fi
done
if ! "$LLAMA_SERVER" --list-devices 2>&1 | grep -q CUDA; then
  fail 'this llama-server lists no CUDA device: build llama.cpp with -DGGML_CUDA=ON'
fi

# Each worker's rpc-server must be up before llama-server spreads the layers over it.
IFS=, read -r -a rpc_servers <<<"$RPC_SERVERS"
for server in "${rpc_servers[@]}"; do
  # shellcheck disable=SC2016  # the inner bash expands $1: the address reaches it as an argument
  if ! timeout 5 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}"' _ "$server" 2>/dev/null; then
    fail "no rpc-server answers at $server: start that worker's script first"
  fi
done

# The first start downloads the model (158.0 GB) into llama.cpp's cache (export HF_TOKEN first for a gated
# repo). LLAMA_API_KEY passes by name: set it to require a token; no token is written here.
say "when it has loaded: curl -fsS http://localhost:8000/health"
exec "$LLAMA_SERVER" "${LLAMA_ARGS[@]}"
