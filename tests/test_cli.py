"""The CLI as a script sees it: JSON field names are an API, bad input is one sentence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sparkadvisor.cli import main

REPO_DATA = Path(__file__).parent / "data" / "catalogs"

CANDIDATE_KEYS = {
    "build", "model", "repo", "rank", "fits", "nodes_needed", "tp", "pp", "weights_gib_per_node",
    "kv_budget_gib_per_node", "kv_pool_tokens", "decode_ceiling_tok_s", "decode_expected_tok_s",
    "decode_measured_tok_s", "prefill_tok_s", "ttft_s", "turn_s", "meets_targets", "caveats",
    "disqualified", "reason",
}


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_rank_json_shape(capsys):
    data = run_json(capsys, "rank", "--nodes", "2", "--workload", "agentic")
    assert data["hardware"] == "dgx-spark" and data["nodes"] == 2
    assert data["workload"]["context_tokens"] == 100_000 and data["workload"]["prefix_reuse"] == 0.95
    for candidate in data["candidates"]:
        assert CANDIDATE_KEYS <= candidate.keys()
    ranks = [c["rank"] for c in data["candidates"] if c["rank"] is not None]
    assert ranks == list(range(1, len(ranks) + 1))


def test_rank_json_context_option_changes_the_workload(capsys):
    data = run_json(capsys, "rank", "--context", "32000", "--workload", "chat")
    assert data["workload"]["context_tokens"] == 32_000 and data["workload"]["kind"] == "chat"


def test_show_json_has_the_candidate_and_its_steps(capsys):
    data = run_json(capsys, "show", "glm-5.3-flash-nvfp4-redhat")
    assert CANDIDATE_KEYS <= data.keys()
    keys = [s["key"] for s in data["steps"]]
    assert keys[:5] == ["recipe", "cluster", "weights", "parallelism", "budget"]
    assert {"kv", "pool", "ceiling", "expected", "measured", "ttft", "turn"} <= set(keys)
    budget = next(s for s in data["steps"] if s["key"] == "budget")["text"]
    assert "0.85 x 121.6 = 103.4 GiB" in budget and "11.2 GiB is left" in budget


def test_show_names_the_recipe_it_follows_and_the_others_here(capsys):
    # DeepSeek-V4-Flash-0731 has three recipes on two Sparks: show follows one and names the other two,
    # with how to follow them.
    assert main(["show", "deepseek-v4-flash-0731-stack"]) == 0
    recipe = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("recipe "))
    assert "Follows deepseek-v4-flash-article-tp2" in recipe and "the first listed of those with the most " \
        "measurements (4) of the 3 recipes" in recipe
    assert "Also here: deepseek-v4-flash-0731-miaai-tp2 (4 measurements), deepseek-v4-flash-0731-tonyd2wild-tp2 " \
        "(2 measurements); --recipe ID follows one instead." in recipe


def test_show_follows_the_recipe_named_and_compares_its_own_measurement(capsys):
    # MiaAI-Lab's recipe decodes 75.4 tok/s at a 256-token prompt: show --recipe holds the plan at its
    # own MTP speculation, and the measured line is that recipe's, not the article's 57.54.
    data = run_json(capsys, "show", "deepseek-v4-flash-0731-stack", "--recipe", "deepseek-v4-flash-0731-miaai-tp2")
    assert data["recipe"] == "deepseek-v4-flash-0731-miaai-tp2" and data["nodes"] == 2
    steps = {s["key"]: s["text"] for s in data["steps"]}
    assert "as --recipe names it" in steps["recipe"] and "deepseek-v4-flash-article-tp2" in steps["recipe"]
    assert steps["measured"].startswith("Measured 75.4 tok/s (256-token prompt, concurrency 1)")
    assert "mtp with 5 tokens per pass" in steps["expected"]


@pytest.mark.parametrize(("argv", "words"), [
    (["--recipe", "nope"], "no recipe 'nope' for gpt-oss-120b-mxfp4; the recipes its plans follow: "
                           "gpt-oss-120b-cutlass-tp1 "
                           "(1 node), gpt-oss-120b-spark-arena-tp1 (1 node), gpt-oss-120b-eugr-tp2 (2 nodes), "),
    (["--recipe", "gpt-oss-120b-ollama"], "recipe gpt-oss-120b-ollama serves with ollama, and a plan of "
                                          "gpt-oss-120b-mxfp4 runs on vllm there"),
    (["--recipe", "deepseek-v4-flash-0731-miaai-tp2"], "no recipe 'deepseek-v4-flash-0731-miaai-tp2' for "
                                                       "gpt-oss-120b-mxfp4"),
    (["--recipe", "gpt-oss-120b-conselara-tp1", "--nodes", "2"], "recipe gpt-oss-120b-conselara-tp1 runs on "
                                                                 "1 node, not --nodes 2"),
])
def test_show_refuses_a_recipe_of_another_build_or_node_count(argv, words, capsys):
    assert main(["show", "gpt-oss-120b-mxfp4", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_show_recipe_sets_the_hardware_too(capsys):
    # The GLM-4.6-FP8 recipe runs on eight RTX PRO 6000s: --recipe alone gets that cluster, and a --hardware
    # that differs is refused rather than read as a DGX Spark cluster of 8 nodes.
    data = run_json(capsys, "show", "glm-4.6-fp8", "--recipe", "glm-4.6-fp8-rtxpro-tp8")
    assert data["hardware"] == "rtx-pro-6000" and data["nodes"] == 8 and data["recipe"] == "glm-4.6-fp8-rtxpro-tp8"
    assert main(["show", "glm-4.6-fp8", "--recipe", "glm-4.6-fp8-rtxpro-tp8", "--hardware", "dgx-spark"]) == 2
    assert "recipe glm-4.6-fp8-rtxpro-tp8 runs on rtx-pro-6000, not --hardware dgx-spark" in capsys.readouterr().err


def test_show_recipe_sets_the_nodes(capsys):
    data = run_json(capsys, "show", "gpt-oss-120b-mxfp4", "--recipe", "gpt-oss-120b-cutlass-tp1")
    assert data["nodes"] == 1 and data["recipe"] == "gpt-oss-120b-cutlass-tp1"
    assert "On other node counts: gpt-oss-120b-eugr-tp2 (2 nodes, 0 measurements)." in data["steps"][0]["text"]


def test_show_cites_the_counted_read_and_the_measurements_it_quotes(capsys):
    # NVIDIA's GLM build is read tensor by tensor from tonyd2wild's module sums; the Gemma recipe's logged
    # pool is quoted with vllm #54122 beside it: both sources are listed under the arithmetic.
    assert main(["show", "glm-5.3-flash-nvfp4-nvidia"]) == 0
    sources = capsys.readouterr().out.split("\nsources\n", 1)[1]
    assert "tonyd2wild-glm-nvidia-lanes:" in sources and "tonyd2wild-glm-nvfp4-attention:" in sources
    assert main(["show", "gemma-4-31b-nvfp4-nvidia", "--nodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "vllm-54122:" in out.split("\nsources\n", 1)[1]
    # A dense build's counted read: only its NVFP4 MLPs pay the format's overhead, and they are not experts.
    text = " ".join(out.split())
    assert "a token reads 31.70 GB split 1 ways + 0.00 GB every rank keeps whole = 31.70 GB per node" in text
    assert re.search(r"\+\d+% dequantization on the 11\.71 GB of quantized projections", text)


def test_show_text_explains_with_units(capsys):
    assert main(["show", "qwen3.8-flash-next-nvfp4", "--nodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "2.4 GB short" in out
    assert "Prefix caching is OFF" in out
    assert "[measured]" in out and "[derived]" in out


def test_rank_text_lists_excluded_builds_with_reasons(capsys):
    assert main(["rank"]) == 0
    out = capsys.readouterr().out
    assert "needs 4 nodes" in out
    assert "ruled out for agentic (TOOLCALLS-CORRUPT" in out


@pytest.mark.parametrize(("argv", "words"), [
    (["show", "no-such-build"], "unknown build 'no-such-build'"),
    (["show", "glm"], "builds whose id contains it: glm-4.5-air-bf16"),
    (["rank", "--hardware", "abacus"], "unknown hardware 'abacus'; known hardware ids: dgx-spark"),
    (["rank", "--nodes", "9"], "more than the 4 nodes"),
])
def test_bad_input_is_one_sentence_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_bad_option_value_is_argparse_usage(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["rank", "--prefix-reuse", "2"])
    assert exit_info.value.code == 2
    assert "between 0 and 1" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "words"), [
    (["rank", "--context", "99999999999999999999999"], "--context '99999999999999999999999' must be "
                                                      "at most 100,000,000 tokens"),
    (["show", "glm-5.3-flash-nvfp4-redhat", "--output-tokens", "100000000000"],
     "--output-tokens '100000000000' must be at most 100,000,000 tokens"),
    (["rank", "--streams", "1000000000"], "--streams '1000000000' must be at most 256 streams"),
])
def test_an_absurd_count_is_refused_before_any_arithmetic(argv, words, capsys):
    """A count past any real scenario was taken and came out as nonsense ("5,000,000,000,000,004,194,304
    tokens / 0 tok/s", a 1,520 tok/s single request at a billion streams)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and words in err and "Traceback" not in err


def test_an_answer_of_thousands_of_tokens_is_written_with_separators(capsys):
    """The header said "2000 out" and the turn "+ 2000 tokens" beside "100,000 tokens" and "2,000 answer"."""
    assert main(["show", "glm-5.3-flash-nvfp4-redhat", "--output-tokens", "2000"]) == 0
    out = capsys.readouterr().out
    assert "100,000 tokens, 95% reuse, 2,000 out" in out and "+ 2,000 tokens / " in out and "2000" not in out


@pytest.mark.parametrize(("argv", "command", "extra"), [
    (["rank", "--bogus"], "rank", "--bogus"),
    (["--catalog", "x.toml", "show", "glm-5.3-flash-nvfp4-redhat", "two"], "show", "two"),
])
def test_an_unknown_argument_is_refused_by_the_command_itself(argv, command, extra, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    first, usage = capsys.readouterr().err.splitlines()
    assert first in (f"sparkadvisor: {command} has no option {extra}",
                     f"sparkadvisor: {command} does not take the argument {extra!r}")
    assert usage.startswith(f"usage: sparkadvisor {command} ")
    with pytest.raises(SystemExit):
        main(["--bogus"])
    assert capsys.readouterr().err.startswith("sparkadvisor: there is no option --bogus\n")


def test_catalog_before_or_after_the_command_counts(capsys):
    addition = str(REPO_DATA / "user_addition.toml")
    plain = len(run_json(capsys, "rank")["candidates"])
    assert len(run_json(capsys, "--catalog", addition, "rank")["candidates"]) == plain + 1
    assert len(run_json(capsys, "rank", "--catalog", addition)["candidates"]) == plain + 1


def test_a_reader_that_stops_early_ends_the_pipe_quietly(isolated_home):
    import subprocess
    import sys

    script = "import sys; from sparkadvisor.cli import main; sys.exit(main(['coverage']))"
    result = subprocess.run(f"{sys.executable} -c \"{script}\" | head -1", shell=True, capture_output=True, text=True)
    assert result.stdout.count("\n") == 1 and "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr


def test_the_app_without_a_terminal_says_so_instead_of_drawing_into_a_file(isolated_home):
    """`sparkadvisor > out.txt 2>&1` (cron, a script, ssh without -t) started the app: it drew its screen into
    the file and waited for keys that could never come."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "sparkadvisor"], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=20)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("sparkadvisor: the app needs a terminal, and stdin or stderr is not one; for text, "
                             "run `sparkadvisor rank` (every command: `sparkadvisor --help`)\n")


LOADED_ONLY = ("decode_ceiling_tok_s", "decode_expected_tok_s", "decode_low_tok_s", "decode_high_tok_s",
               "decode_per_stream_tok_s", "prefill_tok_s", "ttft_s", "turn_s")
"""The figures a build has only once it loads."""


def test_rank_json_gives_no_speed_to_a_build_that_does_not_fit(capsys):
    # The text views show - for these; a script must not read 15 tok/s for a build that cannot load.
    data = run_json(capsys, "rank", "--nodes", "1")
    glm = next(c for c in data["candidates"] if c["build"] == "glm-5.3-flash-nvfp4-redhat")
    assert glm["fits"] is False and glm["rank"] is None and glm["nodes_needed"] == 2
    assert all(glm[key] is None for key in LOADED_ONLY)
    assert set(glm["if_it_fit"]) == set(LOADED_ONLY) and glm["if_it_fit"]["decode_expected_tok_s"] > 0
    assert {t["key"]: t["status"] for t in glm["targets"]}["decode"] == "missed"
    fitting = next(c for c in data["candidates"] if c["fits"])
    assert fitting["if_it_fit"] is None and all(fitting[key] is not None for key in ("ttft_s", "turn_s"))


def test_compare_json_gives_no_first_token_to_a_build_that_does_not_fit(capsys):
    data = run_json(capsys, "compare", "glm-5.3-flash-nvfp4-redhat", "qwen3.6-35b-a3b-nvfp4-nvidia", "--nodes", "1")
    glm = data["builds"][0]
    assert glm["cold_ttft_s"] is None and glm["ttft_s"] is None
    assert glm["if_it_fit"]["cold_ttft_s"] > glm["if_it_fit"]["ttft_s"] > 0
    cold = next(row for row in data["rows"] if row["key"] == "cold")
    assert cold["cells"][0] == "-" and cold["cells"][1].endswith(" s")


def test_a_broken_own_catalog_says_whose_file_it_is_and_how_to_go_on(capsys):
    from sparkadvisor import paths

    user = paths.user_catalog_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[[builds]]\nid = "x"\nmodel = "glm-5.3-flash"\n', encoding="utf-8")
    assert main(["rank"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "sparkadvisor: the catalog has 3 problems:" and err[1].startswith(f"  {user}:1: builds[0]")
    assert err[-1] == (f"{user} is your own catalog (imports and recorded bench runs): fix it, or move it aside "
                       "to go on with the bundled catalog alone")


@pytest.mark.parametrize(("argv", "command"), [
    (["catalog", "info"], "catalog info"), (["check"], "check"), (["catalog", "rollback"], "catalog rollback")])
def test_catalog_before_a_command_that_reads_none_is_refused_as_after_it(argv, command, capsys):
    # Before the command it was silently ignored: `catalog info` then named a catalog without the file.
    addition = str(REPO_DATA / "user_addition.toml")
    for where in ([*argv, "--catalog", addition], ["--catalog", addition, *argv]):
        with pytest.raises(SystemExit) as refused:
            main(where)
        err = capsys.readouterr().err
        assert refused.value.code == 2 and err.splitlines()[0] == f"sparkadvisor: {command} has no option --catalog"
