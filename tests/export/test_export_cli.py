"""`sparkadvisor export` as a script sees it: stdout for one-file formats, messages on stderr,
exit 0 done / 1 refused / 2 usage, addresses validated, the placeholder head always named."""

from __future__ import annotations

import json

import pytest
import yaml

from sparkadvisor.cli import main
from sparkadvisor.export.claude import PLACEHOLDER_HOST

QWEN = ["export", "qwen3.8-flash-next-nvfp4", "--nodes", "1"]
GLM = ["export", "glm-5.3-flash-nvfp4-redhat", "--nodes", "2"]


@pytest.mark.parametrize("out", [[], ["--out", "-"]])
def test_a_one_file_format_prints_valid_json_to_stdout(capsys, tmp_path, monkeypatch, out):
    monkeypatch.chdir(tmp_path)
    assert main([*QWEN, "--format", "json", *out]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["build"] == "qwen3.8-flash-next-nvfp4"
    assert captured.err == ""
    assert not list(tmp_path.iterdir()), "no folder named '-' or anything else is created"


def test_a_one_node_yaml_prints_a_config_vllm_can_load(capsys):
    assert main([*QWEN, "--format", "yaml", "--out", "-"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert config["model"] == "nvidia/Qwen3.8-Flash-Next-NVFP4" and config["disable-prefix-caching"] is True


def test_several_files_to_stdout_is_a_usage_error_naming_out(capsys):
    assert main([*GLM, "--format", "sh"]) == 2
    err = capsys.readouterr().err
    assert "writes 2 files" in err and "--out DIR" in err


def test_writing_a_folder_says_so_on_stderr_only(capsys, tmp_path):
    assert main([*QWEN, "--format", "json", "--out", str(tmp_path / "d")]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"wrote {tmp_path / 'd' / 'plan.json'}" in captured.err


def test_refusals_exit_1_and_usage_errors_exit_2(capsys, tmp_path):
    assert main(["export", "deepseek-v4.1-flash", "--nodes", "2", "--format", "json"]) == 1
    assert capsys.readouterr().err == ("sparkadvisor: deepseek-v4.1-flash does not fit on 2 x DGX Spark: there is "
                                       "nothing to launch; it needs 4 nodes (--nodes 4)\n")
    with pytest.raises(SystemExit) as usage:
        main([*GLM, "--format", "sh", "--head-addr", "spark 1; rm -rf ~"])
    assert usage.value.code == 2
    assert "is not an IP address or host name" in capsys.readouterr().err
    assert main([*GLM, "--format", "sh", "--worker-addrs", "10.0.0.2,10.0.0.3", "--out", str(tmp_path)]) == 2
    assert "2 worker addresses for 1 worker" in capsys.readouterr().err


@pytest.mark.parametrize(("given", "words"), [
    (["--head-addr", "127.0.0.1"], "'127.0.0.1' is a loopback address, which the other nodes cannot reach"),
    (["--worker-addrs", "0.0.0.0"], "'0.0.0.0' is the unspecified address, which the other nodes cannot reach"),
    (["--head-addr", "localhost"], "'localhost' names this machine only"),
    (["--head-addr", "192.168.100.10", "--worker-addrs", "192.168.100.10"],
     "192.168.100.10 is given for two nodes; each node of the cluster needs its own address"),
    (["--head-addr", "Spark-1", "--worker-addrs", "spark-1"], "spark-1 is given for two nodes"),  # names ignore case
    (["--head-addr", "::ffff:127.0.0.1"], "'::ffff:127.0.0.1' is a loopback address"),  # IPv4-mapped
])
def test_addresses_that_cannot_form_a_cluster_are_refused(capsys, tmp_path, given, words):
    """Loopback on every node points each at itself; 0.0.0.0 would open llama.cpp's RPC port to every network."""
    try:
        code = main([*GLM, "--format", "sh", "--out", str(tmp_path / "out"), *given])
    except SystemExit as usage:
        code = usage.code
    assert code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("bad", ["http://user:secret@gw:8082", "ftp://gw", "http://gw:8082/?x=1"])
def test_a_bad_gateway_url_is_refused_without_echoing_credentials(capsys, bad):
    with pytest.raises(SystemExit):
        main([*GLM, "--format", "claude", "--gateway-url", bad])
    assert "secret" not in capsys.readouterr().err


def test_the_placeholder_head_never_reaches_claude_settings_unnamed(capsys, tmp_path):
    assert main([*GLM, "--format", "claude", "--out", str(tmp_path)]) == 0
    assert "placeholder" in capsys.readouterr().err
    settings_text = (tmp_path / "claude-settings.json").read_text(encoding="utf-8")
    base = json.loads(settings_text)["env"]["ANTHROPIC_BASE_URL"]
    assert base == f"http://{PLACEHOLDER_HOST}:8000" and "192.168.100.10" not in settings_text
    check = (tmp_path / "claude-check.sh").read_text(encoding="utf-8")
    assert check.endswith("\n") and "is a placeholder" in check


def test_given_addresses_and_nic_reach_every_file(tmp_path):
    args = [*GLM, "--head-addr", "10.0.0.1", "--worker-addrs", "10.0.0.2", "--nic", "enp1s0f0np0"]
    assert main([*args, "--format", "claude", "--out", str(tmp_path / "c")]) == 0
    settings = json.loads((tmp_path / "c" / "claude-settings.json").read_text(encoding="utf-8"))
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://10.0.0.1:8000"
    assert main([*args, "--format", "sh", "--out", str(tmp_path / "s")]) == 0
    worker = (tmp_path / "s" / "node1-worker.sh").read_text(encoding="utf-8")
    assert 'HEAD_ADDR="${HEAD_ADDR:-10.0.0.1}"' in worker and 'NODE_ADDR="${NODE_ADDR:-10.0.0.2}"' in worker
    assert 'CX7_NETDEV="${CX7_NETDEV:-enp1s0f0np0}"' in worker


def test_a_gateway_is_where_claude_code_points(tmp_path):
    assert main([*GLM, "--format", "claude", "--gateway-url", "http://127.0.0.1:8082/", "--out", str(tmp_path)]) == 0
    settings = json.loads((tmp_path / "claude-settings.json").read_text(encoding="utf-8"))
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8082"


def test_out_naming_an_existing_file_says_out_is_a_folder(capsys, tmp_path):
    mine = tmp_path / "serve.sh"
    mine.write_text("mine")
    assert main([*QWEN, "--format", "sh", "--out", str(mine)]) == 1
    assert capsys.readouterr().err == (f"sparkadvisor: --out {mine} is a file, not a folder; give the folder to "
                                       "write serve.sh into\n")
    assert mine.read_text() == "mine"


def test_a_tilde_the_shell_left_alone_means_home(capsys, tmp_path, monkeypatch):
    # `--out=~/x` reaches us unexpanded: it made a folder named "~" here and said "wrote ~/x/plan.json".
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert main([*QWEN, "--format", "json", "--out=~/x"]) == 0
    assert (tmp_path / "home" / "x" / "plan.json").is_file() and not (tmp_path / "~").exists()
    assert f"wrote {tmp_path / 'home' / 'x' / 'plan.json'}" in capsys.readouterr().err


def test_the_reports_commands_carry_the_addresses_given(tmp_path):
    """Pasted from report.md, the commands reach the head: the addresses given are written out, as in plan.json."""
    assert main([*GLM, "--format", "md", "--out", str(tmp_path), "--head-addr", "192.168.100.10",
                 "--worker-addrs", "192.168.100.11"]) == 0
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert report.count("--master-addr 192.168.100.10") == 2 and "$HEAD_ADDR" not in report
    assert main(["export", "deepseek-r1-ud-iq1s-unsloth", "--nodes", "2", "--format", "md", "--out",
                 str(tmp_path / "r1"), "--worker-addrs", "192.168.100.11"]) == 0
    r1 = (tmp_path / "r1" / "report.md").read_text(encoding="utf-8")
    assert "--rpc 192.168.100.11:50052" in r1 and "--host 192.168.100.11" in r1 and "$RPC_SERVERS" not in r1

