"""Exported without addresses: every format names the same placeholders, which never resolve and never
look like a real address, and the scripts (and compose) refuse to start until the address is set."""

from __future__ import annotations

import re
import subprocess

import pytest
from export_helpers import STANDIN_ADDRESS, docker_runs, run_with_standins

from sparkadvisor.cli import main
from sparkadvisor.export.spec import PLACEHOLDER_HOST, worker_placeholder

GLM = ["export", "glm-5.3-flash-nvfp4-redhat", "--nodes", "2"]
IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")


@pytest.mark.parametrize("fmt", ["sh", "yaml", "compose", "claude", "md", "json"])
def test_no_format_makes_up_an_address(tmp_path, capsys, fmt):
    assert main([*GLM, "--format", fmt, "--out", str(tmp_path)]) == 0
    texts = {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()}
    for name, text in texts.items():
        assert not IPV4.findall(text.replace("0.0.0.0", "")), (name, IPV4.findall(text))
    assert any(PLACEHOLDER_HOST in t or "$HEAD_ADDR" in t for t in texts.values())


def test_the_notice_names_the_placeholders_and_what_stops(tmp_path, capsys):
    assert main([*GLM, "--format", "sh", "--out", str(tmp_path)]) == 0
    notice = capsys.readouterr().err.splitlines()[-1]
    # The scripts name no placeholder: each reads its address from a variable the export leaves empty.
    assert notice == ("sparkadvisor: no --head-addr or --worker-addrs: the scripts stop until HEAD_ADDR and NODE_ADDR "
                      "are set; export again with --head-addr ADDR --worker-addrs ADDR,...")
    assert not any(PLACEHOLDER_HOST in p.read_text() or worker_placeholder(1) in p.read_text()
                   for p in tmp_path.glob("*.sh"))


def _exported(tmp_path, *options: str) -> dict[str, object]:
    assert main([*GLM, "--format", "sh", "--out", str(tmp_path / "out"), *options]) == 0
    return {p.name: p for p in (tmp_path / "out").iterdir()}


def test_a_script_without_its_address_stops_before_anything_runs(tmp_path, capsys):
    scripts = _exported(tmp_path)
    head, calls = run_with_standins(scripts["node0-head.sh"], tmp_path, HEAD_ADDR=None, NODE_ADDR=None,
                                    IGNORE_CHECKS="1")
    assert head.returncode == 2 and calls == []
    assert head.stderr == ("HEAD_ADDR is not set: run HEAD_ADDR=ADDR ./node0-head.sh with the head node's ConnectX-7 "
                           "address, or export again with --head-addr ADDR\n")
    worker, calls = run_with_standins(scripts["node1-worker.sh"], tmp_path, NODE_ADDR=None)
    assert worker.returncode == 2 and calls == []
    assert worker.stderr == ("NODE_ADDR is not set: run NODE_ADDR=ADDR ./node1-worker.sh with this node's own "
                             "ConnectX-7 address (worker 1), or export again with --worker-addrs ADDR,...\n")


def test_the_head_runs_once_its_address_is_set(tmp_path, capsys):
    scripts = _exported(tmp_path)
    result, calls = run_with_standins(scripts["node0-head.sh"], tmp_path, NODE_ADDR=None, IGNORE_CHECKS="1")
    assert result.returncode == 0, result.stderr
    run = docker_runs(calls)[-1]
    assert f"VLLM_HOST_IP={STANDIN_ADDRESS}" in run and f"MASTER_ADDR={STANDIN_ADDRESS}" in run


def test_given_addresses_are_the_defaults_and_nothing_is_required(tmp_path, capsys):
    scripts = _exported(tmp_path, "--head-addr", STANDIN_ADDRESS, "--worker-addrs", "10.20.0.2")
    worker = scripts["node1-worker.sh"].read_text(encoding="utf-8")
    assert f'HEAD_ADDR="${{HEAD_ADDR:-{STANDIN_ADDRESS}}}"' in worker
    assert 'NODE_ADDR="${NODE_ADDR:-10.20.0.2}"' in worker
    assert "# required: no address" not in worker and "is not set" not in worker
    result, _ = run_with_standins(scripts["node0-head.sh"], tmp_path, HEAD_ADDR=None, NODE_ADDR=None,
                                  IGNORE_CHECKS="1")
    assert result.returncode == 0, result.stderr
    assert "no --head-addr" not in capsys.readouterr().err


def test_compose_refuses_to_start_without_the_address(tmp_path, capsys):
    assert main([*GLM, "--format", "compose", "--out", str(tmp_path)]) == 0
    worker = (tmp_path / "compose-node1-worker.yaml").read_text(encoding="utf-8")
    assert "${HEAD_ADDR:?set HEAD_ADDR to the head node's ConnectX-7 address}" in worker
    assert "VLLM_HOST_IP=${NODE_ADDR:?set NODE_ADDR to this node's own ConnectX-7 address}" in worker


def test_one_node_needs_no_address(tmp_path, capsys):
    assert main(["export", "qwen3.8-flash-next-nvfp4", "--nodes", "1", "--format", "sh", "--out", str(tmp_path)]) == 0
    script = (tmp_path / "serve.sh").read_text(encoding="utf-8")
    assert "HEAD_ADDR" not in script and "NODE_ADDR" not in script
    assert 'say "when it has loaded: curl -fsS http://localhost:8000/health"' in script
    assert "no --head-addr" not in capsys.readouterr().err
    subprocess.run(["bash", "-n", str(tmp_path / "serve.sh")], check=True)


def test_the_claude_check_asks_for_the_address_instead_of_checking_a_placeholder(tmp_path, capsys):
    assert main([*GLM, "--format", "claude", "--out", str(tmp_path)]) == 0
    result = subprocess.run(["bash", str(tmp_path / "claude-check.sh")], capture_output=True, text=True, timeout=20)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"claude-settings.json points Claude Code at {PLACEHOLDER_HOST}, a placeholder: export "
                             "again with --head-addr ADDR (or --gateway-url URL), then run this check\n")
