"""llama.cpp exports: a GGUF build's plan becomes llama-server (and rpc-server on the other nodes) with the
plan's own figures, the scripts run exactly the JSON plan's argv, and what llama.cpp cannot do is refused in
one sentence."""

from __future__ import annotations

import json
import socket
import threading

import pytest
from export_helpers import STANDIN_ADDRESS, plan_for, run_with_standins

from sparkadvisor.cli import main
from sparkadvisor.export import ExportError, ExportOptions, render
from sparkadvisor.export.llamacpp import build_llama_launch, hf_repo_arg

HELP = " ".join(["--hf-repo", "--no-mmproj", "--alias", "--host", "--port", "--ctx-size", "--parallel", "--kv-unified",
                 "--n-gpu-layers", "--load-mode", "--batch-size", "--ubatch-size", "--jinja", "--metrics", "--rpc"])
"""What the llama-server stand-in prints for --help: every flag the export passes."""


def _json(index, build, nodes, options=None):
    return json.loads(render("json", plan_for(index, build, nodes), options or ExportOptions())[0].text)


def test_the_quant_tag_llama_server_picks_the_file_by(index):
    assert hf_repo_arg(plan_for(index, "qwen3-8b-q4km-unsloth", 1)) == "unsloth/Qwen3-8B-GGUF:Q4_K_M"
    assert hf_repo_arg(plan_for(index, "deepseek-r1-ud-iq1m-unsloth", 2)) == "unsloth/DeepSeek-R1-GGUF:UD-IQ1_M"
    assert hf_repo_arg(plan_for(index, "gpt-oss-20b-gguf-ggml", 1)) == "ggml-org/gpt-oss-20b-GGUF"


def test_one_node_serves_the_plans_context_on_every_layer_of_the_gpu(index):
    plan = plan_for(index, "gpt-oss-20b-gguf-ggml", 1)
    argv = _json(index, "gpt-oss-20b-gguf-ggml", 1)["nodes"][0]["argv"]
    assert argv[argv.index("--ctx-size") + 1] == str(plan.usable_context.tokens) == "131072"
    assert argv[argv.index("--n-gpu-layers") + 1] == "999"
    # llama-server's own 4 slots over one KV cache: a subagent's request leaves the conversation's cached prompt.
    assert argv[argv.index("--parallel") + 1] == "4" and "--kv-unified" in argv
    assert argv[argv.index("--load-mode") + 1] == "none"  # mmap loads a DGX Spark about ten times slower
    assert argv[argv.index("--alias") + 1] == "gpt-oss-20b-gguf-ggml" and "--jinja" in argv
    assert "--rpc" not in argv and "--cache-type-k" not in argv  # f16, llama.cpp's default, is what auto costs


def test_streams_size_the_shared_kv_cache_and_the_slots(index, capsys):
    assert main(["export", "gpt-oss-20b-gguf-ggml", "--nodes", "1", "--streams", "6", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    argv = plan["nodes"][0]["argv"]
    assert argv[argv.index("--parallel") + 1] == "6" and argv[argv.index("--ctx-size") + 1] == str(6 * 131072)
    assert (plan["streams"], plan["slots"], plan["request_tokens"]) == (6, 6, 131072)
    assert ("a KV cache of 6 x 131,072 tokens, shared by the slots (--kv-unified): 6 requests of the full context "
            "at once") in plan["notes"]


def test_two_nodes_split_the_layers_over_rpc_server_on_the_worker(index):
    plan = _json(index, "deepseek-r1-ud-iq1m-unsloth", 2, ExportOptions(worker_addrs=("10.0.0.2",)))
    head, worker = plan["nodes"]
    assert (head["program"], worker["program"]) == ("llama-server", "ggml-rpc-server")
    assert head["argv"][head["argv"].index("--rpc") + 1] == "10.0.0.2:50052"
    assert worker["argv"] == ["--host", "10.0.0.2", "--port", "50052", "--cache"]  # never 0.0.0.0: not secure


@pytest.mark.parametrize(("argv", "sentence"), [
    (["--kv-cache-dtype", "fp8"], "llama.cpp has no fp8 KV cache (its types are f16, bf16, q8_0 and other block "
                                  "quants): export it with --kv-cache-dtype auto or bfloat16"),
    (["--streams", "40"], "40 streams of 131,072 tokens need 5,242,880 tokens of KV cache, more than the"),
    (["--format", "compose"], "--format compose is for vLLM, and gpt-oss-20b-gguf-ggml is planned on llama.cpp, "
                              "which runs from a local build with no container or config file: export it with "
                              "--format sh, claude, md or json"),
])
def test_what_llama_cpp_cannot_run_is_refused_in_one_sentence(capsys, argv, sentence):
    fmt = [] if "--format" in argv else ["--format", "json"]
    assert main(["export", "gpt-oss-20b-gguf-ggml", "--nodes", "1", *fmt, *argv]) == 2
    err = capsys.readouterr().err
    assert sentence in err and err.count("\n") == 1 and "Traceback" not in err


def test_safetensors_for_vllm_are_not_handed_to_llama_server(capsys):
    # openai/gpt-oss-120b lists llama.cpp among its engines, but its repo holds no GGUF file to load.
    assert main(["export", "gpt-oss-120b-mxfp4", "--engine", "llama.cpp", "--nodes", "4", "--format", "sh"]) == 1
    assert capsys.readouterr().err == (
        "sparkadvisor: llama.cpp loads GGUF files, and openai/gpt-oss-120b holds mxfp4 weights for vLLM: export it "
        "with --engine vllm, or choose a GGUF build of gpt-oss-120b\n")


def test_a_worker_address_llama_cpp_cannot_name_and_ray_are_refused(index):
    plan = plan_for(index, "deepseek-r1-ud-iq1m-unsloth", 2)
    with pytest.raises(ExportError, match="give the workers' IPv4 addresses or host names"):
        build_llama_launch(plan, ExportOptions(worker_addrs=("fe80::1",)))
    with pytest.raises(ExportError, match="through its RPC backend, not Ray"):
        build_llama_launch(plan, ExportOptions("ray"))


def test_claude_code_is_pointed_at_llama_server_with_its_own_token_variable(index):
    settings, check = render("claude", plan_for(index, "gpt-oss-20b-gguf-ggml", 1), ExportOptions(head_addr="spark-1"))
    assert json.loads(settings.text)["env"]["ANTHROPIC_BASE_URL"] == "http://spark-1:8000"
    assert json.loads(settings.text)["apiKeyHelper"] == 'printf "%s" "${LLAMA_API_KEY:-no-token}"'
    assert "VLLM_API_KEY" not in settings.text + check.text
    assert "Does llama-server on the head node answer" in check.text and "/v1/messages" in check.text


def test_the_placeholder_notice_names_what_the_llama_scripts_wait_for(capsys, tmp_path):
    assert main(["export", "deepseek-r1-ud-iq1m-unsloth", "--nodes", "2", "--format", "sh", "--out",
                 str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "no --worker-addrs: the scripts stop until RPC_SERVERS and NODE_ADDR are set" in err
    assert "HEAD_ADDR" not in err  # llama-server listens on every address; nothing in the scripts names the head
    for fmt, said in (("json", "no --worker-addrs: the files name worker-1-address-placeholder.invalid"),
                      ("claude", "no --head-addr: the files name head-address-placeholder.invalid"), ("md", "")):
        assert main(["export", "deepseek-r1-ud-iq1m-unsloth", "--nodes", "2", "--format", fmt, "--out",
                     str(tmp_path / fmt)]) == 0
        texts = " ".join(p.read_text(encoding="utf-8") for p in (tmp_path / fmt).iterdir())
        err = capsys.readouterr().err
        assert (said in err) if said else "sparkadvisor: no --" not in err and "placeholder.invalid" not in texts


def test_the_serve_script_runs_exactly_the_json_argv(index, tmp_path):
    plan = plan_for(index, "gpt-oss-20b-gguf-ggml", 1)
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan)[0].text, encoding="utf-8")
    result, calls = run_with_standins(script, tmp_path, STANDIN_LLAMA_HELP=HELP)
    assert result.returncode == 0, result.stderr
    served = [c for c in calls if c[0] == "llama-server" and c[1:2] not in (["--help"], ["--list-devices"])]
    assert served == [["llama-server", *_json(index, "gpt-oss-20b-gguf-ggml", 1)["nodes"][0]["argv"]]]


def test_a_llama_server_that_lacks_a_flag_stops_the_script(index, tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text(render("sh", plan_for(index, "gpt-oss-20b-gguf-ggml", 1))[0].text, encoding="utf-8")
    result, calls = run_with_standins(script, tmp_path, STANDIN_LLAMA_HELP=HELP.replace("--no-mmproj", ""))
    assert result.returncode == 1
    assert "this llama-server does not know --no-mmproj: build a newer llama.cpp" in result.stderr
    assert all(c[1:2] in (["--help"], ["--list-devices"]) for c in calls if c[0] == "llama-server")


def _listening() -> tuple[socket.socket, int]:
    """A TCP listener on 127.0.0.1 standing in for a worker's rpc-server, and its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    threading.Thread(target=lambda: server.accept()[0].close(), daemon=True).start()
    return server, server.getsockname()[1]


def test_the_head_waits_for_each_rpc_server_then_passes_them_to_llama_server(index, tmp_path):
    plan = plan_for(index, "deepseek-r1-ud-iq1m-unsloth", 2)
    head = tmp_path / "node0-head.sh"
    head.write_text(render("sh", plan)[0].text, encoding="utf-8")
    result, calls = run_with_standins(head, tmp_path, STANDIN_LLAMA_HELP=HELP, RPC_SERVERS="127.0.0.1:9")
    assert result.returncode == 1 and "no rpc-server answers at 127.0.0.1:9" in result.stderr
    assert not [c for c in calls if c[0] == "llama-server" and "--rpc" in c]
    server, port = _listening()
    with server:
        result, calls = run_with_standins(head, tmp_path, STANDIN_LLAMA_HELP=HELP, RPC_SERVERS=f"127.0.0.1:{port}")
    assert result.returncode == 0, result.stderr
    served = [c for c in calls if c[0] == "llama-server" and "--rpc" in c]
    assert served[-1][served[-1].index("--rpc") + 1] == f"127.0.0.1:{port}"


def test_the_worker_binds_rpc_server_to_its_own_address(index, tmp_path):
    worker = tmp_path / "node1-worker.sh"
    worker.write_text(render("sh", plan_for(index, "deepseek-r1-ud-iq1m-unsloth", 2))[1].text, encoding="utf-8")
    result, calls = run_with_standins(worker, tmp_path, NODE_ADDR=None)
    assert result.returncode == 2 and "NODE_ADDR is not set: run NODE_ADDR=ADDR ./node1-worker.sh" in result.stderr
    result, calls = run_with_standins(worker, tmp_path)
    assert result.returncode == 0, result.stderr
    assert calls[-1] == ["rpc-server", "--host", STANDIN_ADDRESS, "--port", "50052", "--cache"]  # an older build


def test_a_catalog_id_that_reads_as_an_option_is_refused_not_passed(tmp_path):
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.plan import Cluster, evaluate
    from sparkadvisor.core.workload import AGENTIC

    path = tmp_path / "mine.toml"
    path.write_text('[[builds]]\nid = "--rpc=203.0.113.9:50052"\nmodel = "gpt-oss-20b"\nrepo = "someone/x-GGUF"\n'
                    'format = "gguf-q4_k_m"\nengines = ["llama.cpp"]\nsource = "llamacpp-spark"\n', encoding="utf-8")
    index = load_index([path], include_user=False)
    build = next(b for b in index.catalog.builds if b.id.startswith("--rpc"))
    plan = evaluate(index, build, Cluster(index.hardware["dgx-spark"], 1), AGENTIC)
    with pytest.raises(ExportError, match="for --alias cannot be passed"):
        render("sh", plan)
