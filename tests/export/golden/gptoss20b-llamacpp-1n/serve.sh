#!/usr/bin/env bash
# sparkadvisor export: gpt-oss-20b (ggml-org/gpt-oss-20b-GGUF) on 1 x DGX Spark, Agentic (Claude Code)
# workload, on llama.cpp.
# No community recipe: every flag below comes from sparkadvisor's plan alone.
#
# The plan (the numbers sparkadvisor showed):
#   One node holds all of it: 11.3 GiB.
#   llama.cpp allocates the weights, the KV cache for its context (--ctx-size) and its compute buffers in the
#   node's 121.6 GiB. Sized here by vLLM's rules as a stand-in (llama.cpp's compute buffers are not modelled):
#   103.4 GiB for the engine, 11.3 GiB of weights, 5.6 GiB kept for activations, so 86.5 GiB goes to the KV
#   cache. It fits.
#   86.48 GiB / 3.191 GiB per 131,072-token context = 3.55M tokens, by vLLM's per-request rule as a stand-in
#   (llama.cpp allocates its KV cache for --ctx-size tokens, shared by its --parallel slots). At 100,000
#   tokens per session, 37 concurrent sessions fit.
#   5,000 tokens / estimated prefill 1,400 tok/s (range 1,163-1,965: an 80% range: split-conformal from the
#   errors on 45 measurements left out of the fit in 5 folds, at most 10% of them below it and 10% above; per
#   prompt token 0.714 ms = GEMM 0.285 ms (12.2 GFLOP, experts at 2x the cost, at 43 TFLOPS on the int8 tensor
#   path llama.cpp takes for mxfp4: llama.cpp's own, fitted to 25 prefill measurements of 5 recipes) +
#   attention FLOPs 0.295 ms (19.19 GFLOP attending to ~97,500 tokens, at 65 TFLOPS: llama.cpp's own, fitted
#   to 25 prefill measurements) + K/V stream 0.109 ms (2.40 GB attended, read once per tile of queries, at
#   0.045 ms/GB: llama.cpp's own, fitted to 25 prefill measurements) + weights 0.025 ms (12.1 GB read once per
#   2,048-token chunk, at 4.30 ms/GB: the published read test)) = 3.6 s to the first token. Uncached (a cold
#   100,000-token prompt): 52 s.
#   3.6 s + 200 tokens / 39.8 tok/s = 8.6 s per turn.
#
# llama.cpp runs from a local build with CUDA, as its own DGX Spark benchmarks were run. Build it once on
# every node:
#   git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp
#   cmake -B build -DGGML_CUDA=ON -DGGML_RPC=ON && cmake --build build --config Release -j
#
# Override any setting below from the environment, e.g. LLAMA_SERVER=~/llama.cpp/build/bin/llama-server ./serve.sh

set -euo pipefail

IGNORE_CHECKS="${IGNORE_CHECKS:-0}"  # 1: report failed checks and carry on
LLAMA_SERVER="${LLAMA_SERVER:-llama-server}"  # the llama-server of your build
LLAMA_ARGS=(
  # mxfp4 names no GGUF quant tag: llama-server takes the repo's Q4_K_M file (or Q8_0), else its first one;
  # check that is the file the catalog sized
  --hf-repo ggml-org/gpt-oss-20b-GGUF
  # --no-mmproj: the plan counts the text model only; drop this to load the vision projector too.
  --no-mmproj
  --alias gpt-oss-20b-gguf-ggml
  --host 0.0.0.0
  --port 8000
  # --ctx-size: 1 x 131,072 tokens, one KV cache the --parallel slots share (--kv-unified); each request may use
  # all of it, up to the model's training context.
  --ctx-size 131072
  # --parallel 4: llama-server's own default is 4 slots; a second request (a subagent, a concurrent call) takes
  # a free slot, so the conversation's slot keeps its cached prompt.
  --parallel 4
  --kv-unified
  # --n-gpu-layers: every layer on the GPU (a number past any model's layer count).
  --n-gpu-layers 999
  # --load-mode none: read the weights rather than map the file; on a DGX Spark mmap loads about ten times
  # slower (llama.cpp #27742).
  --load-mode none
  --batch-size 2048
  # --ubatch-size: the batch llama.cpp's DGX Spark benchmarks ran with (its default is 512).
  --ubatch-size 2048
  --jinja
  # --metrics: the Prometheus counters `sparkadvisor probe` reads (llama-server leaves them off).
  --metrics
)

say() { printf '%s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
fail() {
  printf 'PRE-FLIGHT FAILED: %s\n' "$*" >&2
  if [ "$IGNORE_CHECKS" != 1 ]; then exit 1; fi
}

say '== pre-flight checks: node 0 of 1 (head)'

if ! nvidia-smi --query-gpu=name --format=csv,noheader; then fail 'nvidia-smi finds no GPU'; fi

if [ -n "$(swapon --show --noheadings)" ]; then warn 'swap is on: an overrun will page for hours instead of failing with an honest CUDA OOM'; fi

need_kib=15015788  # llama.cpp loads 11.3 GiB of weights and 3.1 GiB of KV cache on this node; its compute buffers come on top
avail_kib="$(free -k | awk '/^Mem:/ {print $7}')"
if [ "${avail_kib:-0}" -lt "$need_kib" ]; then fail "only $((${avail_kib:-0} / 1048576)) GiB available; llama.cpp loads 11.3 GiB of weights and 3.1 GiB of KV cache on this node; its compute buffers come on top"; fi

if ! command -v "$LLAMA_SERVER" >/dev/null; then
  fail "no llama-server at $LLAMA_SERVER: build llama.cpp (git clone https://github.com/ggml-org/llama.cpp && cd llama.cpp; cmake -B build -DGGML_CUDA=ON -DGGML_RPC=ON && cmake --build build --config Release -j) and run with LLAMA_SERVER=build/bin/llama-server"
fi
help="$("$LLAMA_SERVER" --help 2>&1 || true)"
for flag in --hf-repo --no-mmproj --alias --host --port --ctx-size --parallel --kv-unified --n-gpu-layers --load-mode --batch-size --ubatch-size --jinja --metrics; do
  if ! grep -qF -- "$flag" <<<"$help"; then fail "this llama-server does not know $flag: build a newer llama.cpp"; fi
done
if ! "$LLAMA_SERVER" --list-devices 2>&1 | grep -q CUDA; then
  fail 'this llama-server lists no CUDA device: build llama.cpp with -DGGML_CUDA=ON'
fi

# The first start downloads the model (12.1 GB) into llama.cpp's cache (export HF_TOKEN first for a gated
# repo). LLAMA_API_KEY passes by name: set it to require a token; no token is written here.
say "when it has loaded: curl -fsS http://localhost:8000/health"
exec "$LLAMA_SERVER" "${LLAMA_ARGS[@]}"
