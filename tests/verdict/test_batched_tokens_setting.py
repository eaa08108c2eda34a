"""--max-num-batched-tokens as a user's setting: what a sliding-window layer keeps per request, the prefill
chunk, the profile run's basis, what the export writes (or refuses), and a logged pool set aside when the
settings size the pool otherwise than its recipe did."""

from __future__ import annotations

import json

import pytest

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings
from sparkadvisor.export.argv import flatten, model_options

GEMMA31 = "gemma-4-31b-nvfp4-nvidia"
"""50 sliding layers (window 1,024) beside 10 full ones; MiaAI's recipe runs 8,192 batched tokens, two sequences
and logs a pool."""
QWEN36 = "qwen3.6-35b-a3b-nvfp4-redhat"
"""An MoE (256 experts, 8 a token): a smaller chunk touches fewer experts but reads them more often."""


def plan(index, build: str, nodes: int = 1, **settings):
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC,
                          Settings(**settings))


def step(p, key: str) -> str:
    return next(s.text for s in explain(p) if s.key == key)


def test_fewer_batched_tokens_leave_a_sliding_window_model_a_bigger_pool(index):
    own, small = plan(index, GEMMA31), plan(index, GEMMA31, batched_tokens=2048)
    assert own.pool.inputs.batched_tokens == 8192 and not own.pool.inputs.batched_set
    assert small.pool.inputs.batched_tokens == 2048 and small.pool.inputs.batched_set
    # A sliding layer keeps window - 1 + batched tokens per request: 577 blocks of 16 at 8,192, 193 at 2,048.
    assert "577 blocks (window 1,024 - 1 + 8,192 batched tokens" in step(own, "pool")
    text = step(small, "pool")
    assert "193 blocks (window 1,024 - 1 + 2,048 batched tokens" in text
    assert "max-num-batched-tokens 2,048 (--max-num-batched-tokens as set)" in text
    assert small.pool.request_bytes < own.pool.request_bytes
    assert small.kv_pool_tokens > own.kv_pool_tokens


def test_the_chunk_sets_how_often_a_prompt_reads_the_weights(index):
    own, small = plan(index, QWEN36), plan(index, QWEN36, batched_tokens=1024)
    assert own.first.prefill_inputs.chunk_tokens == 5000  # the 5,000 uncached tokens fit one 8,192 chunk
    assert small.first.prefill_inputs.chunk_tokens == 1024
    assert "read once per 1,024-token chunk" in step(small, "ttft")
    assert small.prefill_tok_s < own.prefill_tok_s
    assert small.cold_ttft_s > own.cold_ttft_s


def test_a_llama_cpp_plan_is_costed_for_the_ubatch_its_export_launches(index):
    from sparkadvisor.export import render

    # Without a recipe, a llama.cpp plan is costed for the launch the export writes: --ubatch-size 2,048 (the
    # benchmarks'), or the user's --max-num-batched-tokens; llama-server's own default would be 512.
    for batched, chunk in ((None, 2048), (1024, 1024)):
        p = plan(index, "gemma-4-31b-q4km-unsloth", engine="llama.cpp", batched_tokens=batched)
        assert p.constants.engine == "llama.cpp" and p.first.prefill_inputs.chunk_tokens == chunk
        argv = json.loads(render("json", p)[0].text)["nodes"][0]["argv"]
        assert argv[argv.index("--ubatch-size") + 1] == argv[argv.index("--batch-size") + 1] == str(chunk)


def test_the_profile_run_says_it_was_logged_at_another_batch(index):
    text = step(plan(index, GEMMA31, batched_tokens=4096), "budget")
    assert "GLM-5.3-Flash TP2's log at 8,192 batched tokens" in text
    assert "where this plan runs 4,096 (which needs less, by an amount no log gives)" in text
    assert "where this plan runs" not in step(plan(index, GEMMA31, batched_tokens=8192), "budget")


def test_a_logged_pool_is_compared_only_under_the_settings_it_was_logged_with(index):
    own = plan(index, GEMMA31)
    assert own.kv_pool_measured is not None and own.kv_pool_measured.value == 542037
    # The recipe's own value changes nothing; another one, or another gpu-memory-utilization, sets it aside.
    assert plan(index, GEMMA31, batched_tokens=8192).kv_pool_measured is not None
    for settings, named in (({"batched_tokens": 2048}, "--max-num-batched-tokens 2,048"),
                            ({"gpu_memory_utilization": 0.5}, "--gpu-memory-utilization 0.5"),
                            ({"max_model_len": 65536}, "--max-model-len 65,536"),
                            ({"enforce_eager": True}, "--enforce-eager")):
        p = plan(index, GEMMA31, **settings)
        assert p.kv_pool_measured is None and p.pool.set_aside == named
        assert p.sessions == p.pool.modelled_sessions
        text = step(p, "pool")
        assert "The recipe logged 542k tokens" in text and f"{named} sizes this pool otherwise" in text
        assert "The table shows the measured pool" not in text


def test_the_export_passes_the_setting_and_leaves_out_the_recipes_copy(index):
    args = [str(a) for a in flatten(model_options(plan(index, GEMMA31, batched_tokens=4096), "gemma"))]
    assert args[args.index("--max-num-batched-tokens") + 1] == "4096"
    assert "--max-num-batched-tokens" not in [str(a) for a in flatten(model_options(plan(index, GEMMA31), "g"))]


def test_the_export_script_runs_the_setting_once(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    assert main(["export", GEMMA31, "--nodes", "1", "--format", "sh", "--out", str(out),
                 "--max-num-batched-tokens", "4096"]) == 0
    script = (out / "serve.sh").read_text(encoding="utf-8")
    launch = script[script.index("VLLM_ARGS=("):]
    launch = launch[:launch.index(")")]
    assert launch.count("  --max-num-batched-tokens") == 1 and "  --max-num-batched-tokens 4096\n" in launch
    assert "# --max-num-batched-tokens: as set, not the recipe's 8,192" in launch
    assert "--max-num-batched-tokens 8192: the plan sets --max-num-batched-tokens itself" in script


def test_the_export_refuses_fewer_batched_tokens_than_the_recipes_sequences(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path / "home"))
    # MiaAI's recipe runs --max-num-seqs 2: vLLM refuses max_num_batched_tokens below max_num_seqs.
    assert main(["export", GEMMA31, "--nodes", "1", "--format", "sh", "--out", str(tmp_path / "out"),
                 "--max-num-batched-tokens", "1"]) == 2
    err = capsys.readouterr().err
    assert "--max-num-batched-tokens 1 is fewer than the recipe's --max-num-seqs 2" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_fewer_batched_tokens_than_streams_is_one_sentence(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["rank", "--streams", "16", "--max-num-batched-tokens", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("8 batched tokens are fewer than the 16 streams: vLLM runs at most that many sequences a step")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("typed", ["0", "2k8", "-5"])
def test_a_bad_value_names_the_option(capsys, monkeypatch, tmp_path, typed):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as exit_:
        main(["rank", f"--max-num-batched-tokens={typed}"])
    assert exit_.value.code == 2
    assert "--max-num-batched-tokens" in capsys.readouterr().err


def test_rank_heads_its_table_and_json_with_the_setting(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    assert main(["rank", "--max-num-batched-tokens", "2K"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("· 2,048 batched tokens")
    assert main(["rank", "--json", "--max-num-batched-tokens", "2048"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["max_num_batched_tokens"] == 2048
