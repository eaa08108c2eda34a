"""--engine, --eager/--cuda-graphs and --streams: the speed a plan is costed at follows them."""

from __future__ import annotations

import json

from sparkadvisor.cli import main

BUILD = "qwen3-next-80b-a3b-nvfp4"
"""A build with no recipe on one Spark, so the options decide its engine and mode."""


def _show(capsys, *options: str) -> dict:
    assert main(["show", BUILD, "--nodes", "1", "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_engine_option_picks_that_engines_constants(capsys) -> None:
    vllm, llama = _show(capsys), _show(capsys, "--engine", "llama.cpp")
    assert (vllm["engine"], llama["engine"]) == ("vllm", "llama.cpp")
    assert "llama.cpp" in llama["constants_basis"]["fixed_ms"]
    assert vllm["decode_expected_tok_s"] != llama["decode_expected_tok_s"]


def test_eager_mode_costs_more_than_cuda_graphs(capsys) -> None:
    eager, graphs = _show(capsys, "--eager"), _show(capsys, "--cuda-graphs")
    assert (eager["mode"], graphs["mode"]) == ("eager", "graphs")
    assert eager["decode_expected_tok_s"] < graphs["decode_expected_tok_s"]


def test_more_streams_raise_the_aggregate_and_lower_each_stream(capsys) -> None:
    one, four = _show(capsys), _show(capsys, "--streams", "4")
    assert four["streams"] == 4
    assert four["decode_expected_tok_s"] > one["decode_expected_tok_s"]
    assert four["decode_per_stream_tok_s"] < one["decode_per_stream_tok_s"]


def test_an_unknown_engine_is_one_sentence_naming_the_known_ones(capsys) -> None:
    assert main(["show", BUILD, "--engine", "warp-drive"]) == 2
    err = capsys.readouterr().err
    assert "unknown engine 'warp-drive' for --engine" in err and "llama.cpp" in err and "Traceback" not in err


def test_show_says_whose_constants_and_compares_like_with_like(capsys) -> None:
    assert main(["show", "deepseek-v4-flash-0731-stack"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "whose constants" in text and "vllm (the recipe's engine), CUDA graphs" in text
    assert "at its own conditions (2,000 tokens (assumed: not stated), 1 stream, CUDA graphs)" in text
