#!/usr/bin/env bash
# Does vLLM on the head node answer as qwen3.8-flash-next-nvfp4? Run before starting Claude Code: the
# article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export VLLM_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# WARNING: prefix-caching-disabled (critical): prefix caching crashes the engine in the GDN path on GB10 (vLLM
# #54173; the article reports wrong answers), so the recipes turn it off and every agent turn recomputes the
# whole prompt
# WARNING: PREFIX CACHING IS OFF: every turn recomputes all 100,000 prompt tokens, 61 s before each first
# token; fine for chat, unfit for an agent
# WARNING: PATCH REQUIRED: PLE table on disk (mmap), rows read on demand, from
# https://github.com/tonyd2wild/Qwen3.8-Flash-Next-NVFP4-DGX-Spark at 0d507df43a5a, mounted from the checkout
# named by RECIPE_DIR; without it stock vLLM holds the 47.68 GiB PLE table in memory, and the build no longer
# fits one Spark; the plan fits 1 x DGX Spark only with it
# head-address-placeholder.invalid is a placeholder: export again with --head-addr ADDR (or set
# ANTHROPIC_BASE_URL in the settings) before you rely on this.
set -u
printf '%s\n' 'claude-settings.json points Claude Code at head-address-placeholder.invalid, a placeholder: export again with --head-addr ADDR (or --gateway-url URL), then run this check' >&2
exit 2
