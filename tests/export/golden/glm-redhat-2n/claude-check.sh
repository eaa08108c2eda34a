#!/usr/bin/env bash
# Does vLLM on the head node answer as glm-5.3-flash-nvfp4-redhat? Run before starting Claude Code: the
# article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export VLLM_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# WARNING: PATCH REQUIRED: sparse-attention indexer top-k fix for SM121, from
# https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-DFlash2-2x-DGX-Spark at 06b681991fb7, mounted from the
# checkout named by RECIPE_DIR; without it both published images still carry a decode-time top-k kernel that
# hard-kills the engine on any decode past ~24K context on GB10; --max-model-len 262,144 is past the ~24,000
# tokens stock vLLM survives
# head-address-placeholder.invalid is a placeholder: export again with --head-addr ADDR (or set
# ANTHROPIC_BASE_URL in the settings) before you rely on this.
set -u
printf '%s\n' 'claude-settings.json points Claude Code at head-address-placeholder.invalid, a placeholder: export again with --head-addr ADDR (or --gateway-url URL), then run this check' >&2
exit 2
