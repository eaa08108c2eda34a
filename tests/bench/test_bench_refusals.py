"""Every way a bench can fail ends in one sentence, and nothing partial reaches the catalog."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from bench_fakes import BenchState, _BenchHandler, bench_server
from probe_fakes import Server, closed_port_url

from sparkadvisor import paths
from sparkadvisor.cli import main

FAST = ["--context", "4000", "--repetitions", "1", "--streams", "1", "--output-tokens", "20"]


def bench(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["bench", *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("sparkadvisor: ")
    return err.strip()


def test_a_server_that_is_down(capsys):
    url = closed_port_url()
    code, out, err = bench(capsys, "--vllm", url, "--record", *FAST)
    assert code == 1 and out == ""
    assert one_sentence(err) == (f"sparkadvisor: the model server is down: nothing answers at {url}/health (connection "
                                 "refused or host unreachable); start vLLM or llama-server, or pass --vllm URL; "
                                 "nothing was recorded")
    assert not paths.user_catalog_path().exists()


def test_a_model_name_vllm_does_not_serve(standin, capsys):
    code, _, err = bench(capsys, "--vllm", standin.url, "--model", "glm-5.3", "--record", *FAST)
    assert code == 1
    assert one_sentence(err) == (f"sparkadvisor: vLLM at {standin.url} serves RedHatAI/GLM-5.3-Flash-NVFP4, not "
                                 "'glm-5.3'; pass --model with the served name; nothing was recorded")
    assert standin.state.completions == 0 and not paths.user_catalog_path().exists()


def test_a_context_longer_than_max_model_len(capsys):
    server = bench_server(max_model_len=4096)
    try:
        code, _, err = bench(capsys, "--vllm", server.url, "--record")
    finally:
        server.close()
    assert code == 1
    assert one_sentence(err) == (
        "sparkadvisor: a 100,000-token prompt plus 200 output tokens exceeds the max_model_len of 4,096 that vLLM "
        "serves RedHatAI/GLM-5.3-Flash-NVFP4 with; pass --context 3896 or less, or restart vLLM with a larger "
        "--max-model-len; nothing was recorded")
    assert server.state.completions == 0 and not paths.user_catalog_path().exists()


def test_a_stall_after_the_first_tokens_records_nothing(capsys):
    # A name no catalog build matches: no prediction, so the silence allowed is --timeout alone.
    server = bench_server(served="someone/private-model", overhead_s=0.05, stall_after_tokens=3)
    try:
        code, out, err = bench(capsys, "--vllm", server.url, "--timeout", "0.5", "--record", *FAST)
    finally:
        server.close()
    assert code == 1 and out == ""
    assert one_sentence(err) == (f"sparkadvisor: vLLM at {server.url} sent nothing for 0.5 s during warm first token "
                                 "1/1: the engine is stalled or overloaded; nothing was recorded")
    assert server.state.completions == 2 and not paths.user_catalog_path().exists()


def test_ctrl_c_shows_what_was_measured_and_records_nothing(tmp_path):
    server = bench_server(overhead_s=0.05, stall_after_tokens=3)
    env = {**os.environ, "SPARKADVISOR_HOME": str(tmp_path / "home")}
    command = [sys.executable, "-m", "sparkadvisor", "bench", "--vllm", server.url, "--record", *FAST]
    # A terminal's foreground job has SIGINT at its default; a job started in the background by a
    # non-interactive shell inherits it ignored (POSIX), and the app rightly leaves it ignored then.
    # Start the app as the terminal would, whatever this test process inherited.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if inherited is None else inherited)  # None: set outside Python
    try:
        deadline = time.monotonic() + 30
        while server.state.generation_tokens < 4 and time.monotonic() < deadline:  # the warm request hangs
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
        server.close()
    assert process.returncode == 130
    assert one_sentence(err) == "sparkadvisor: interrupted after 1 of 2 steps; nothing was recorded"
    text = " ".join(out.split())
    assert "cold first token [measured]" in text and "warm first token" not in text
    assert text.endswith("interrupted: 1 of 2 steps ran")
    assert not (tmp_path / "home" / "data" / "catalog.toml").exists()


def test_a_token_budget_smaller_than_one_cold_request(standin, capsys):
    code, _, err = bench(capsys, "--vllm", standin.url, "--max-tokens", "1000", *FAST)
    assert code == 1
    assert one_sentence(err) == ("sparkadvisor: the token budget of 1,000 is less than the first cold request's "
                                 "4,001 tokens; raise --max-tokens or lower --context")


def test_limits_stop_early_and_keep_what_was_measured(standin, capsys):
    code, out, _ = bench(capsys, "--vllm", standin.url, "--max-tokens", "5000", "--context", "4000",
                         "--repetitions", "2", "--streams", "1,4", "--output-tokens", "20")
    out = " ".join(out.split())
    assert code == 0
    assert "stopped early: the token budget of 5,000 leaves too little for cold first token 2/2 (4,001)" in out
    assert "decode, 1 stream [measured]" in out and "4 streams" not in out


@pytest.mark.parametrize("streams", ["0", "1,x", "300"])
def test_bad_stream_lists_are_refused(capsys, streams):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--streams", streams])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "is not a list of stream counts from 1 to 256 such as 1,4,8" in err



class _Gateway(_BenchHandler):
    """A port with vLLM's models list but no /tokenize (a gateway in front of vLLM)."""

    def _tokenize(self, s) -> None:
        self._send(404, json.dumps({"detail": "Not Found"}))


class _Failing(_BenchHandler):
    """vLLM answering every completion with an internal error whose message ends in a full stop."""

    def _complete(self, s) -> None:
        self._send(500, json.dumps({"error": {"message": "Internal error.", "type": "InternalServerError"}}))


@pytest.mark.parametrize(("handler", "ending"), [
    (_Gateway, "/tokenize is not there although vLLM's OpenAI-compatible server has it, so this port may be a "
               "gateway; nothing was recorded"),
    (_Failing, "/v1/completions answered HTTP 500: Internal error; nothing was recorded"),
])
def test_a_refusal_is_one_sentence_without_a_question_or_doubled_stops(handler, ending, capsys):
    server = Server(handler, BenchState())
    try:
        code, _, err = bench(capsys, "--vllm", server.url, "--record", *FAST)
    finally:
        server.close()
    said = one_sentence(err)
    assert code == 1 and said.endswith(ending), said
    assert "?" not in said and ".;" not in said and not paths.user_catalog_path().exists()


def test_a_served_build_the_plan_says_does_not_fit_is_refused_before_any_request(standin, capsys):
    # GLM-5.3-Flash needs two Sparks: on --nodes 1 its predictions are those of a build that cannot
    # load, and a recorded run would make it "fit by recipe" on one Spark.
    code, out, err = bench(capsys, "--vllm", standin.url, "--nodes", "1", "--record", *FAST)
    assert code == 1 and out == ""
    assert one_sentence(err) == (
        "sparkadvisor: vLLM serves glm-5.3-flash-nvfp4-redhat, which by the plan does not fit on 1 x DGX Spark "
        "(it needs 2 nodes): give the cluster it runs on with --nodes and --hardware; nothing was recorded")
    assert standin.state.completions == 0 and not paths.user_catalog_path().exists()
