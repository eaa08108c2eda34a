#!/usr/bin/env bash
# Does vLLM on the head node answer as glm-5.3-flash-nvfp4-redhat? Run before starting Claude Code: the
# article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export VLLM_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# WARNING: the recipe applies a patch this export does not: sparse-attention indexer top-k fix for SM121
# (docker/sparse_attn_indexer_kpool_sm121.py)
set -u
if curl -fsS --max-time 120 http://192.168.100.10:8000/v1/messages -H "content-type: application/json" -H "anthropic-version: 2023-06-01" -H "authorization: Bearer ${VLLM_API_KEY:-no-token}" -d '{"model": "glm-5.3-flash-nvfp4-redhat", "max_tokens": 8, "messages": [{"role": "user", "content": "Say ok."}]}' | grep -q '"type": *"message"'; then echo 'the service answers'; else echo 'NOT answering at http://192.168.100.10:8000/v1/messages: Claude Code would fail or fall back to the cloud' >&2; exit 1; fi
