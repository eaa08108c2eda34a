"""Hostile catalog values run nothing; no token is written; files are never overwritten silently."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from export_helpers import run_with_standins

from sparkadvisor.cli import main

SHELL_REPO = "evil/$(touch PWNED1) `touch PWNED2` \"q\" 'x'; touch PWNED3\ntouch PWNED4 #"
"""Refused when the catalog is read (a repo is OWNER/NAME of the hub's characters, an image a container reference:
`test_a_hostile_image_is_refused_when_read`), so the values that reach the exporter below are the id, title, parser
and arguments, all free text."""
EVIL_IMAGE = "img:1$(touch PWNED9)"
IMAGE = "registry.example:5000/evil/vllm:1"
EVIL_REPO = "evil_/name.with-dots_1"
EVIL_ID = "ev'il; touch PWNED5 $(touch PWNED6) \"x\"\n--trust-remote-code"
EVIL_VALUE = "4; touch PWNED7 $HOME"
EVIL_TITLE = "a title\ntouch PWNED8"


def _toml(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


HOSTILE = f"""
[[builds]]
id = {_toml(EVIL_ID)}
model = "qwen3-next-80b-a3b"
repo = {_toml(EVIL_REPO)}
format = "nvfp4-modelopt"
source = "article"

[builds.size]
value = 50.8
unit = "GB"
source = "article"

[[recipes]]
id = "evil-recipe"
build = {_toml(EVIL_ID)}
title = {_toml(EVIL_TITLE)}
image = {_toml(IMAGE)}
nodes = 1
tool_call_parser = {_toml("hermes'; touch PWNED10")}
extra_args = ["--max-num-seqs", {_toml(EVIL_VALUE)}, "--swap-space", "4", "--no-such-flag"]
source = "article"

[recipes.requires]
swap = true
drop_page_cache = true
"""


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "hostile.toml"
    path.write_text(HOSTILE, encoding="utf-8")
    return path


def _export(hostile, out, fmt, *more):
    return main(["export", EVIL_ID, "--catalog", str(hostile), "--nodes", "1", "--format", fmt, "--out", str(out),
                 *more])


def test_hostile_values_arrive_as_single_literal_arguments(hostile, tmp_path):
    out = tmp_path / "out"
    assert _export(hostile, out, "sh") == 0
    result, calls = run_with_standins(out / "serve.sh", tmp_path)
    assert result.returncode == 0, result.stderr
    assert not list(tmp_path.rglob("PWNED*")), "a hostile value ran a command"
    assert {c[0] for c in calls} <= {"nvidia-smi", "swapon", "sysctl", "sync", "sudo", "free", "hf", "docker"}
    assert ["hf", "download", EVIL_REPO, "--exclude", "*/*", "--quiet"] in calls
    serve = calls[-1]
    assert serve[:2] == ["docker", "run"] and IMAGE in serve
    argv = serve[serve.index("serve") + 1:]
    assert argv[0] == EVIL_REPO
    assert argv[argv.index("--served-model-name") + 1] == EVIL_ID
    assert argv[argv.index("--max-num-seqs") + 1] == EVIL_VALUE
    assert argv[argv.index("--tool-call-parser") + 1] == "hermes'; touch PWNED10"
    assert "--swap-space" not in argv and "--no-such-flag" not in argv and "--trust-remote-code" not in argv
    plan = json.loads(_json(hostile, tmp_path))
    assert argv == plan["nodes"][0]["vllm_argv"]


def _json(hostile, tmp_path):
    assert _export(hostile, tmp_path / "json", "json") == 0
    return (tmp_path / "json" / "plan.json").read_text(encoding="utf-8")


def test_hostile_values_read_back_exactly_from_yaml_and_compose(hostile, tmp_path):
    assert _export(hostile, tmp_path, "yaml") == 0
    assert _export(hostile, tmp_path, "compose") == 0
    config = yaml.safe_load((tmp_path / "vllm-config.yaml").read_text(encoding="utf-8"))
    assert config["model"] == EVIL_REPO and config["served-model-name"] == EVIL_ID
    compose = yaml.safe_load((tmp_path / "compose.yaml").read_text(encoding="utf-8"))["services"]["vllm"]
    command = [word.replace("$$", "$") for word in compose["command"]]
    assert command[1] == EVIL_REPO and EVIL_VALUE in command
    assert compose["image"] == IMAGE


def test_a_hostile_image_is_refused_when_read(tmp_path, capsys):
    path = tmp_path / "hostile.toml"
    path.write_text(HOSTILE.replace(_toml(IMAGE), _toml(EVIL_IMAGE)), encoding="utf-8")
    assert _export(path, tmp_path / "out", "sh") != 0
    err = capsys.readouterr().err
    assert "image: should be a container image reference" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and not list(tmp_path.rglob("PWNED*"))


def test_hostile_text_cannot_leave_a_comment(hostile, tmp_path):
    assert _export(hostile, tmp_path, "sh") == 0
    text = (tmp_path / "serve.sh").read_text(encoding="utf-8")
    assert "# Recipe: a title touch PWNED8 [evil-recipe]." in text.splitlines()


def test_dropped_arguments_are_said_loudly(hostile, tmp_path):
    assert _export(hostile, tmp_path, "sh") == 0
    text = (tmp_path / "serve.sh").read_text(encoding="utf-8")
    assert "warn 'left out of the recipe'\"'\"'s arguments: --swap-space 4: removed from vLLM" in text
    assert "--no-such-flag: not a vLLM 0.33 serve option" in text


@pytest.mark.parametrize("repo", ["--trust-remote-code", SHELL_REPO])
def test_a_repo_that_looks_like_an_option_or_a_command_is_refused(repo, tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(HOSTILE.replace(_toml(EVIL_REPO), _toml(repo)), encoding="utf-8")
    assert _export(path, tmp_path / "o", "sh") == 1
    err = capsys.readouterr().err
    assert "c.toml:5:" in err and "is not a Hugging Face repo id; give it as OWNER/NAME" in err
    assert not (tmp_path / "o").exists() and not list(tmp_path.rglob("PWNED*"))


def test_no_token_value_is_ever_written(tmp_path, monkeypatch):
    secret = "sk-secret-token-value-123"
    for name in ("VLLM_API_KEY", "HF_TOKEN", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, secret)
    for fmt in ("sh", "yaml", "compose", "claude", "md", "json"):
        assert main(["export", "glm-5.3-flash-nvfp4-redhat", "--format", fmt, "--out", str(tmp_path),
                     "--gateway-url", "http://gw.local:8082/"]) == 0
    texts = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    assert len(texts) >= 10 and not any(secret in t for t in texts.values())
    settings = json.loads(texts["claude-settings.json"])
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://gw.local:8082"
    assert settings["env"]["CLAUDE_CODE_ATTRIBUTION_HEADER"] == "0"
    assert {settings["env"][f"ANTHROPIC_DEFAULT_{m}_MODEL"] for m in ("OPUS", "SONNET", "HAIKU")} == {
        "glm-5.3-flash-nvfp4-redhat"}
    assert "$" + "{VLLM_API_KEY" in settings["apiKeyHelper"]


def test_existing_files_are_kept_without_force(tmp_path, capsys):
    args = ["export", "qwen3.8-flash-next-nvfp4", "--nodes", "1", "--format", "json", "--out", str(tmp_path)]
    (tmp_path / "plan.json").write_text("mine\n", encoding="utf-8")
    assert main(args) == 1, "a refusal, not a usage error"
    assert "plan.json already exists; pass --force to overwrite" in capsys.readouterr().err
    assert (tmp_path / "plan.json").read_text(encoding="utf-8") == "mine\n"
    assert main([*args, "--force"]) == 0
    assert json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))["build"] == "qwen3.8-flash-next-nvfp4"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"], "no temporary file is left behind"


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    from sparkadvisor.export.spec import ExportFile
    from sparkadvisor.export.write import write_files

    (tmp_path / "a.sh").write_text("old\n", encoding="utf-8")

    def broken(*_):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_files(tmp_path, [ExportFile("a.sh", "new\n", True)], force=True)
    assert (tmp_path / "a.sh").read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.sh"]


def test_scripts_are_executable(tmp_path):
    assert main(["export", "qwen3.8-flash-next-nvfp4", "--nodes", "2", "--format", "sh", "--out", str(tmp_path)]) == 0
    assert all(os.access(p, os.X_OK) for p in tmp_path.glob("*.sh"))


TERMINAL_ID = "evil\x1b]2;owned\x07\u009b31m\u202efp8"
"""An id with an OSC title sequence, a C1 CSI and a right-to-left override: `cat`ing a file must not run them."""
UNSAFE = ("\x1b", "\x07", "\u009b", "\u202e")


@pytest.mark.parametrize("fmt", ["sh", "yaml", "compose", "claude", "md", "json"])
def test_terminal_sequences_in_an_id_reach_no_file_raw(fmt, tmp_path):
    catalog = tmp_path / "terminal.toml"
    catalog.write_text(HOSTILE.split("[[recipes]]")[0].replace(_toml(EVIL_ID), _toml(TERMINAL_ID)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["export", TERMINAL_ID, "--catalog", str(catalog), "--nodes", "1", "--format", fmt,
                 "--out", str(out)]) == 0
    for path in out.iterdir():
        text = path.read_text(encoding="utf-8")
        assert not [ch for ch in UNSAFE if ch in text], path.name
        if path.suffix == ".json":
            names = json.loads(text).get("served_model_name") or json.loads(text)["env"]["ANTHROPIC_DEFAULT_OPUS_MODEL"]
            assert names == TERMINAL_ID, "the value reads back exactly"
    if fmt == "sh":
        result, calls = run_with_standins(out / "serve.sh", tmp_path, IGNORE_CHECKS="1")
        assert result.returncode == 0, result.stderr
        argv = calls[-1][calls[-1].index("serve") + 1:]
        assert argv[argv.index("--served-model-name") + 1] == TERMINAL_ID
