#!/usr/bin/env bash
# Does llama-server on the head node answer as gpt-oss-20b-gguf-ggml? Run before starting Claude Code: the
# article's gateway was off for days and Claude Code silently used the cloud.
# Merge claude-settings.json into ~/.claude/settings.json; export LLAMA_API_KEY in your shell if the server
# requires a token (it is never written to a file).
# head-address-placeholder.invalid is a placeholder: export again with --head-addr ADDR (or set
# ANTHROPIC_BASE_URL in the settings) before you rely on this.
set -u
printf '%s\n' 'claude-settings.json points Claude Code at head-address-placeholder.invalid, a placeholder: export again with --head-addr ADDR (or --gateway-url URL), then run this check' >&2
exit 2
