"""Catalog text reaches a terminal with its control characters and escape sequences shown escaped."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkadvisor.cli import main
from sparkadvisor.core.safetext import safe_json, safe_text

ESC_TITLE = "\x1b]2;owned\x07"
CLEAR = "\x1b[2J\x1b[H"
HOSTILE = f"Evil{ESC_TITLE}{CLEAR}\x9b31m\u202ekcatta\r\b"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\b")


def test_escapes_are_shown_not_sent():
    assert safe_text("a\x1b[31mb") == "a\\x1b[31mb"
    assert safe_text("\x9b1m\u202e\u2028") == "\\x9b1m\\u202e\\u2028"
    assert safe_text("tab\there\nnext") == "tab\\there\\nnext"
    assert safe_text("line\nnext", keep_newlines=True) == "line\nnext"
    assert safe_text("Qwen3.5 · 122B – A10B ünïcode 😀") == "Qwen3.5 · 122B – A10B ünïcode 😀"


@given(st.text())
def test_nothing_unprintable_survives(text):
    shown = safe_text(text)
    assert all(ch.isprintable() or unicodedata.category(ch) == "Zs" for ch in shown)
    assert not any(ch in shown for ch in RAW)


@given(st.recursive(st.none() | st.booleans() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=10))
def test_safe_json_is_valid_and_keeps_strings(data):
    text = safe_json(data)
    loaded = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert not any(ch in text for ch in RAW)
    assert json.dumps(loaded, allow_nan=False)


def test_safe_json_keeps_the_exact_string():
    assert json.loads(safe_json({"name": HOSTILE})) == {"name": HOSTILE}
    assert json.loads(safe_json({"x": float("inf"), "y": [float("nan"), 1.5]})) == {"x": None, "y": [None, 1.5]}


def hostile_catalog(tmp_path: Path) -> Path:
    """A user catalog whose names, caveat and source carry terminal escapes."""
    path = tmp_path / "hostile.toml"
    path.write_text(f'''
[sources.evil]
title = {json.dumps("Evil source" + CLEAR)}
url = "https://example.org/evil"

[[caveats]]
id = "evil-caveat"
kind = "tool-calls-corrupted"
severity = "critical"
hurts = ["agentic"]
explanation = {json.dumps("breaks " + HOSTILE)}
source = "evil"

[[models]]
id = "evil"
name = {json.dumps(HOSTILE)}
family = "Test"
source = "evil"

[models.params]
total_b = 8
active_b = 8
source = "evil"

[models.attention]
design = "gqa"
layers = 32
heads = 32
kv_heads = 8
head_dim = 128
source = "evil"

[[builds]]
id = "evil-fp8"
model = "evil"
repo = "evil/repo"
format = "fp8"
caveats = ["evil-caveat"]
source = "evil"

[[builds]]
id = {json.dumps("evil-gguf," + HOSTILE)}
model = "evil"
repo = "evil/repo-GGUF"
format = "gguf-q4_k_m"
engines = ["llama.cpp"]
caveats = ["evil-caveat"]
source = "evil"
''', encoding="utf-8")
    return path


@pytest.mark.parametrize("argv", [["rank"], ["show", "evil-fp8"], ["show", "no-such\x1b]2;x\x07build"],
                                  ["rank", "--json"], ["show", "evil-fp8", "--json"], ["check"]])
def test_cli_prints_no_raw_escape(argv, tmp_path, capsys):
    catalog = hostile_catalog(tmp_path)
    main([*argv, str(catalog)] if argv == ["check"] else [*argv, "--catalog", str(catalog)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    for raw in RAW:
        assert raw not in text, f"{raw!r} reached the terminal in {argv}"
    if argv == ["show", "evil-fp8"]:
        assert "\\x1b" in text


def test_error_hint_prints_no_raw_escape(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(f'[[builds]]\nid = {json.dumps("b" + ESC_TITLE)}\nmodel = {json.dumps("m" + CLEAR)}\n'
                    'repo = "a/b"\nformat = "fp8"\nsource = "x"\n', encoding="utf-8")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b" in err


@pytest.mark.parametrize(("build", "fmt"), [("evil-fp8", "sh"), ("evil-fp8", "md"), ("evil-fp8", "yaml"),
                                           ("evil-gguf,", "sh"), ("evil-gguf,", "md"), ("evil-gguf,", "claude")])
def test_exported_messages_and_comments_carry_no_raw_escape(build, fmt, tmp_path, capsys):
    """A script's `warn` and its comments, and the report, show a caveat's escapes escaped (for vLLM's launch and
    llama.cpp's)."""
    catalog = hostile_catalog(tmp_path)
    out = tmp_path / "out"
    build = build if build == "evil-fp8" else "evil-gguf," + HOSTILE
    code = main(["export", build, "--format", fmt, "--out", str(out), "--nodes", "1", "--catalog", str(catalog)])
    text = capsys.readouterr()
    assert "Traceback" not in text.out + text.err
    for raw in RAW:
        assert raw not in text.out + text.err
    assert code == 0 or build == "evil-fp8"  # the llama.cpp build exports; the fp8 one is refused on some formats
    if code == 0:
        for path in out.rglob("*"):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.lstrip().startswith(("#", "warn ", "echo ")) or fmt == "md":
                    assert not any(raw in line for raw in RAW), f"{path.name}: {line!r}"
