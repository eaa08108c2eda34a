#!/usr/bin/env bash
# Does llama-server on the head node answer as deepseek-r1-ud-iq1m-unsloth? Run before starting Claude Code:
# the article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export LLAMA_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# WARNING: llama.cpp's RPC backend is a proof of concept, fragile and insecure (its README): rpc-server
# listens on each node's own address only; never expose it on an open network
# head-address-placeholder.invalid is a placeholder: export again with --head-addr ADDR (or set
# ANTHROPIC_BASE_URL in the settings) before you rely on this.
set -u
printf '%s\n' 'claude-settings.json points Claude Code at head-address-placeholder.invalid, a placeholder: export again with --head-addr ADDR (or --gateway-url URL), then run this check' >&2
exit 2
