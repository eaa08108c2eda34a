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
if curl -fsS --max-time 120 http://head-address-placeholder.invalid:8000/v1/messages -H "content-type: application/json" -H "anthropic-version: 2023-06-01" -H "authorization: Bearer ${VLLM_API_KEY:-no-token}" -d '{"model": "qwen3-next-80b-a3b-nvfp4", "max_tokens": 8, "messages": [{"role": "user", "content": "Say ok."}]}' | grep -q '"type": *"message"'; then echo 'the service answers'; else echo 'NOT answering at http://head-address-placeholder.invalid:8000/v1/messages: Claude Code would fail or fall back to the cloud' >&2; exit 1; fi
