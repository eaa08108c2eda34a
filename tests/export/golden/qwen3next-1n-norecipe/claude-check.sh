#!/usr/bin/env bash
# Does vLLM on the head node answer as qwen3-next-80b-a3b-nvfp4? Run before starting Claude Code: the
# article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export VLLM_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# WARNING: no tool-call parser is known for this build: an agent's tool calls need --tool-call-parser NAME
# --enable-auto-tool-choice; add them before pointing Claude Code at it
# head-address-placeholder.invalid is a placeholder: export again with --head-addr ADDR (or set
# ANTHROPIC_BASE_URL in the settings) before you rely on this.
set -u
printf '%s\n' 'claude-settings.json points Claude Code at head-address-placeholder.invalid, a placeholder: export again with --head-addr ADDR (or --gateway-url URL), then run this check' >&2
exit 2
