"""The CLI's tables as a pipe, a script and a person read them: one row per line, every
--format parseable, build names resolved or suggested, plurals right."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys

import pytest

from sparkadvisor.cli import main

GLM = "glm-5.3-flash-nvfp4-redhat"
QWEN = "qwen3.8-flash-next-nvfp4"
LISTINGS = [["rank"], ["show", GLM], ["compare", GLM, QWEN], ["coverage"], ["fidelity"], ["catalog", "info"]]


def run(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_rank_piped_to_cat_prints_one_line_per_build(isolated_home, index):
    env = {**os.environ, "SPARKADVISOR_HOME": str(isolated_home), "SPARKADVISOR_PROBE": "off", "COLUMNS": "80"}
    script = "import sys; from sparkadvisor.cli import main; sys.exit(main(['rank', '--nodes', '2']))"
    result = subprocess.run(f'"{sys.executable}" -c "{script}" | cat', shell=True, capture_output=True, text=True,
                            env=env, check=True)
    lines = result.stdout.splitlines()
    assert not result.stderr
    for build_id in index.builds:
        assert sum(line.rstrip().endswith(build_id) or f" {build_id} " in line for line in lines) == 1, build_id
    glm = next(line for line in lines if f" {GLM} " in line)
    assert "GLM-5.3-Flash" in glm and "RedHatAI" in glm and "fits +" in glm
    assert len(lines) == len(index.builds) + 4  # title, headings, rows, the range's and the measured-pool notes
    assert any(line.startswith("tok/s (low-high): an 80% range") for line in lines)


def test_show_into_a_file_keeps_urls_whole(capsys):
    out = run(capsys, "show", GLM)
    urls = [word.strip("<>") for line in out.splitlines() for word in line.split() if "https://" in word]
    assert urls and all(url.startswith("https://") and " " not in url for url in urls)
    assert any(url.endswith((".md", ".json")) or "/" in url[8:] for url in urls)
    assert all(line.startswith(("  ", GLM[:3].upper())) or line[:1].isalnum() for line in out.splitlines())


@pytest.mark.parametrize("argv", LISTINGS, ids=lambda a: " ".join(a[:1]) if isinstance(a, list) else a)
def test_every_listing_speaks_tsv_markdown_and_json(argv, capsys):
    tsv = list(csv.reader(io.StringIO(run(capsys, *argv, "--format", "tsv")), delimiter="\t"))
    assert len(tsv) >= 2 and all(len(row) == len(tsv[0]) for row in tsv), "every TSV row has every column"
    md = [line for line in run(capsys, *argv, "--format", "md").splitlines() if line.startswith("|")]
    assert md[1].replace("|", "").replace("-", "").replace(":", "").strip() == ""
    assert {line.count(" | ") for line in md} == {len(tsv[0]) - 1}
    assert json.loads(run(capsys, *argv, "--json")) == json.loads(run(capsys, *argv, "--format", "json"))


def test_check_lists_its_problems_as_rows(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[builds]]\nid = "x"\nmodel = "m"\n', encoding="utf-8")
    assert main(["check", str(bad), "--format", "tsv"]) == 1
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out), delimiter="\t"))
    assert rows and {r["file"] for r in rows} == {str(bad)} and any("repo" in r["message"] for r in rows)
    assert main(["check", str(bad), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ok"] is False


def test_rank_tsv_names_every_build_once(capsys, index):
    rows = list(csv.DictReader(io.StringIO(run(capsys, "rank", "--format", "tsv")), delimiter="\t"))
    assert sorted(r["id"] for r in rows) == sorted(index.builds)
    glm = next(r for r in rows if r["id"] == GLM)
    assert glm["#"] == "1" and glm["model"] == "GLM-5.3-Flash" and glm["fit"].startswith("fits +")


@pytest.mark.parametrize("typed", [GLM.upper(), "RedHatAI/GLM-5.3-Flash-NVFP4", "redhatai/glm-5.3-flash-nvfp4",
                                   "https://huggingface.co/RedHatAI/GLM-5.3-Flash-NVFP4"])
def test_a_build_is_found_in_any_case_or_by_its_repo(typed, capsys):
    assert json.loads(run(capsys, "show", typed, "--json"))["build"] == GLM


@pytest.mark.parametrize(("command", "typed", "said"), [
    ("show", "glm-5.3-flash-nvfp4-redhatt", "did you mean glm-5.3-flash-nvfp4-redhat?"),
    ("export", "GLM-5.3-flash-nvfp4-redhet", "did you mean glm-5.3-flash-nvfp4-redhat?"),
    ("compare", "qwen3.8-flash-nxt-nvfp4", "did you mean qwen3.8-flash-next-nvfp4?"),
    ("show", "unsloth/Qwen3-8B-GGUF", "is the repo of 2 builds: qwen3-8b-q4km-unsloth, qwen3-8b-q8-unsloth"),
    ("show", "glm", "and "),
    ("show", "zzzz", "`sparkadvisor rank` lists the build ids"),
])
def test_a_misspelt_build_gets_the_closest_ids_not_all_of_them(command, typed, said, capsys, index):
    argv = {"show": ["show", typed], "export": ["export", typed, "--format", "json"],
            "compare": ["compare", GLM, typed]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert sum(build_id in err for build_id in index.builds) <= 5


def test_compare_puts_builds_side_by_side_with_both_first_tokens(capsys):
    out = run(capsys, "compare", GLM, QWEN)
    lines = out.splitlines()
    assert GLM in lines[1] and QWEN in lines[1]
    cold = next(line for line in lines if line.startswith("1st token, cold"))
    cached = next(line for line in lines if line.startswith("1st token, as it runs"))
    assert cold.split()[3:] == ["68", "s", "37", "s"] and cached.split()[5:] == ["3.7", "s", "37", "s"]
    assert "PREFIX-OFF (critical)" in out and "prefix caching" in out
    engines = next(line for line in lines if line.startswith("engine, split"))
    assert engines.split()[2:] == ["vllm,", "TP=2", "vllm,", "TP=2"]
    gguf = run(capsys, "compare", GLM, "qwen3.5-27b-ud-q4kxl-unsloth").splitlines()
    assert "llama.cpp, PP=2" in next(line for line in gguf if line.startswith("engine, split"))
    data = json.loads(run(capsys, "compare", GLM, QWEN, "--json"))
    assert [b["build"] for b in data["builds"]] == [GLM, QWEN]
    assert all(b["cold_ttft_s"] >= b["ttft_s"] for b in data["builds"])


def test_compare_refuses_one_build_or_the_same_twice(capsys):
    assert main(["compare", GLM]) == 2
    assert main(["compare", GLM, GLM.upper()]) == 2
    err = capsys.readouterr().err
    assert "two or three builds; 1 given" in err and "compare needs two different builds" in err
    assert f"{GLM} and {GLM.upper()} both name {GLM}" in err
    assert main(["compare", GLM, GLM]) == 2
    assert f"{GLM} is given 2 times; compare needs" in capsys.readouterr().err  # not "x, x all name x"


def test_counts_of_one_are_singular(capsys):
    out = run(capsys, "rank", "--hardware", "rtx-4090", "--nodes", "1")
    out += run(capsys, "show", "deepseek-r1-distill-llama-70b-bf16", "--hardware", "rtx-4090", "--nodes", "1")
    assert "1 nodes" not in out and "1 sessions" not in out and "> 1 node" not in out
    assert "does not fit on 1 node" in out


def test_a_terminal_gets_the_columns_that_fit_and_the_rest_named(capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    coloured = run(capsys, "rank")
    out = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert "\x1b[" in coloured, "a terminal gets colour"
    lines = out.splitlines()
    rows = [line for line in lines if "fits +" in line and ": " not in line]  # not the reasons below
    assert len(rows) > 20 and max(len(line) for line in rows) <= 80
    glm = next(line for line in rows if line.startswith("  1 "))
    assert "GLM-5.3-Flash" in glm and "▲•" in glm and "fits +11.2 GiB" in glm
    assert re.search(r" \d\d \(\d+-\d+\) ", glm), "tok/s with its range (the range follows the calibration)"
    assert not any(re.search(r"[✖▲•] \S*…", line) for line in rows), "a badge is dropped whole, never cut"
    hidden = next(line for line in lines if line.startswith("Not shown at this width:"))
    assert "KV pool" in hidden and "id" in hidden and f"{GLM}: meets" in out


def test_an_hour_long_first_token_reads_in_hours_not_thousands_of_minutes(capsys):
    # Builds that do not fit show - for both; a cold million-token prompt takes hours on those that do.
    rows = list(csv.DictReader(io.StringIO(run(capsys, "rank", "--nodes", "1", "--context", "1000000",
                                               "--prefix-reuse", "0", "--format", "tsv")), delimiter="\t"))
    durations = [row[column] for row in rows for column in ("1st token", "turn") if row[column] != "-"]
    minutes = [int(m) for cell in durations for m in re.findall(r"^(\d+) min \d\d s$", cell)]
    assert minutes and max(minutes) < 60, "past an hour a duration is written in hours"
    assert any(re.fullmatch(r"\d+ h \d\d min", cell) for cell in durations)
    assert all(re.fullmatch(r"\d+(\.\d)? s|\d+ min \d\d s|[\d,]+ h \d\d min", cell) for cell in durations)


def test_linear_state_slots_under_pipeline_parallelism_are_the_most_loaded_stages(capsys):
    assert main(["show", "glm-5.3-flash-nvfp4-redhat", "--nodes", "3"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "PP=3" in out and "14.6667" not in out
    # 34 KDA layers padded to 44 slots (groups of 11, the full-attention count); over three stages the one
    # holding most of them has ceil(34 / 3) = 12, so the stage that sizes the pool carries 12/34 of the slots.
    assert "linear-attention states 44 layer slots (layers padded to whole KV-cache groups), 15.53 on the " \
           "most-loaded of 3 pipeline stages x (4.14 MiB pages" in out
    assert main(["show", "glm-5.3-flash-nvfp4-redhat", "--nodes", "2"]) == 0
    assert "linear-attention states 44 layer slots (layers padded to whole KV-cache groups) x (2.25 MiB" \
           in " ".join(capsys.readouterr().out.split())


def test_a_build_that_does_not_fit_shows_no_speed_and_passes_no_speed_target(capsys):
    rows = list(csv.DictReader(io.StringIO(run(capsys, "rank", "--nodes", "1", "--format", "tsv")), delimiter="\t"))
    glm = next(r for r in rows if r["model"] == "GLM-5.3-Flash" and r["build"] == "RedHatAI NVFP4")
    assert glm["fit"] == "needs 2 nodes"
    assert [glm[c] for c in ("tok/s", "1st token", "turn", "KV pool", "ceiling")] == ["-"] * 5
    assert main(["show", "glm-5.3-flash-nvfp4-redhat", "--nodes", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "KV pool [derived] None: the weights do not fit on 1 node" in out
    assert "expected decode [estimated] Not here: it does not fit on 1 node. If it did: One step:" in out
    assert "no decode: it does not fit on 1 node (MISSED)" in out and "(met); no first token" in out
    # On two nodes it fits, and the same figures are plain numbers again.
    rows = list(csv.DictReader(io.StringIO(run(capsys, "rank", "--nodes", "2", "--format", "tsv")), delimiter="\t"))
    glm = next(r for r in rows if r["model"] == "GLM-5.3-Flash" and r["build"] == "RedHatAI NVFP4")
    assert glm["fit"].startswith("fits") and re.fullmatch(r"\d+ \(\d+-\d+\)", glm["tok/s"])


def test_the_cluster_line_says_which_figure_is_the_whole_cluster_and_which_each_node(capsys):
    # "2 x DGX Spark · 243.2 GiB · 273 GB/s" put a cluster's memory beside one node's bandwidth unmarked.
    assert run(capsys, "rank", "--nodes", "2").splitlines()[0].startswith(
        "2 x DGX Spark: 243.2 GiB in all, 273 GB/s each · Agentic (Claude Code)")
    assert run(capsys, "rank", "--nodes", "1").splitlines()[0].startswith("1 x DGX Spark: 121.6 GiB, 273 GB/s · ")


def test_compare_on_a_narrow_terminal_wraps_each_cell_in_its_column(capsys, monkeypatch):
    # Every build is kept, so the columns cannot be dropped: a long caveats cell pushed the second
    # build past column 80, where the terminal folded it under the first.
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    out = re.sub(r"\x1b\[[0-9;]*m", "", run(capsys, "compare", GLM, "qwen3.6-35b-a3b-nvfp4-nvidia"))
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith(GLM))
    table = lines[start:lines.index("", start)]
    assert max(len(line) for line in table) <= 80
    second = table[0].index("qwen3.6-35b-a3b-nvfp4-nvidia")
    caveats = [i for i, line in enumerate(table) if line.startswith("caveats")][0]
    assert "SWAP, PATCH" in table[caveats] and table[caveats][second:].strip() == "CRASHES"
    continued = table[caveats + 1]
    assert continued[:second].strip() and not continued[:22].strip(), "the rest under its own column"
    assert " ".join(line[22:second].strip() for line in table[caveats:caveats + 3]).startswith(
        "SWAP, PATCH, DROP-CACHES, CUSTOM-IMAGE, EAGER, SLOW-LOAD")


def test_a_one_token_workload_reads_in_the_singular(capsys):
    head = run(capsys, "rank", "--context", "1", "--output-tokens", "1").splitlines()[0]
    assert head.endswith("Agentic (Claude Code): 1 token, 95% reuse, 1 out")


def test_fidelity_on_an_80_column_terminal_groups_checks_under_their_recipe(capsys, monkeypatch):
    # Each check was one ~150-cell line, which an 80-column terminal folded into a jumble.
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    lines = run(capsys, "fidelity").splitlines()
    assert max(len(line) for line in lines) <= 80
    head = lines.index("glm-5.3-flash-tonyd2wild-tp2 (vllm)")
    assert re.fullmatch(r"  decode eager +35\.1 +[\d.]+ \([\d.]+-[\d.]+\) +[+-][\d.]+%  (inside|OUTSIDE)",
                        lines[head + 1])
    assert any(line.startswith("  prefill @262,144 eager     1,365 ") for line in lines)
    summary = next(i for i, line in enumerate(lines) if line.startswith("  vllm: decode, 1 stream: "))
    assert lines[summary + 1].startswith("      median |error|")  # folded between figures, not inside one
    # Piped, every check stays one line that starts with its recipe.
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    piped = run(capsys, "fidelity").splitlines()
    assert sum(line.startswith("glm-5.3-flash-tonyd2wild-tp2") and "measured      35.1  predicted" in line
               for line in piped) == 1
    assert max(len(line) for line in piped) > 80


def test_sessions_follow_the_pool_the_table_shows(capsys):
    # The table showed the logged 699k* pool while the sessions came from the modelled pool.
    ds = "deepseek-v4-flash-0731-stack"
    rows = list(csv.DictReader(io.StringIO(run(capsys, "rank", "--nodes", "2", "--format", "tsv")), delimiter="\t"))
    assert next(r for r in rows if r["id"] == ds)["KV pool"] == "699k*"
    out = " ".join(run(capsys, "show", ds, "--nodes", "2").split())
    assert "= 1.24M tokens" in out and "At 100,000 tokens per session, 49 concurrent sessions fit" in out
    assert ("The table shows the measured pool, and the sessions follow it: at the model's cost per session it "
            "holds 27 concurrent sessions of 100,000 tokens.") in out
    assert "27 sessions of 100,000 tokens fit (met)" in out and "49 sessions" not in out.split("targets")[-1]
    candidate = next(c for c in json.loads(run(capsys, "rank", "--nodes", "2", "--json"))["candidates"]
                     if c["build"] == ds)
    assert candidate["kv_pool_measured_tokens"] == 699_000 and candidate["sessions"] == 27


def test_a_recipe_caveat_that_turns_prefix_caching_off_sizes_the_pool_without_it(capsys, isolated_home):
    # The pool read prefix caching from the build's caveats only: a recipe's own caveat that turns it
    # off changed the first token but not the pool (vLLM's "align" mode page was still counted).
    from pathlib import Path

    catalog = str(Path(__file__).parent / "data" / "catalogs" / "recipe_prefix_off.toml")
    out = " ".join(run(capsys, "show", GLM, "--nodes", "2", "--catalog", catalog).split())
    pool = out.split(" KV pool [")[1].split(" decode [")[0]
    assert "x 8 pages (1 + 7 speculative tokens)" in pool and "align" not in pool
    assert "this recipe's image crashes with prefix caching on, so it runs with --disable-prefix-caching" in pool
    assert "first token [estimated] 100,000 tokens / estimated prefill" in out  # the first token agrees


def test_a_llama_cpp_plan_speaks_of_what_llama_cpp_allocates_not_vllms_flags(capsys):
    # A GGUF build costed on llama.cpp read "At gpu-memory-utilization 0.85, vLLM takes ..." and "the figure
    # vLLM logs as GPU KV cache size", with max-num-batched-tokens and block sizes it has no flag for.
    lines = run(capsys, "show", "gpt-oss-20b-gguf-ggml", "--nodes", "1").splitlines()
    fit = next(line for line in lines if line.startswith("fit ["))
    pool = next(line for line in lines if line.startswith("KV pool ["))
    for line in (fit, pool):
        assert "gpu-memory-utilization" not in line and "GPU KV cache size" not in line
        assert "max-num-batched-tokens" not in line and "max-model-len" not in line and "--ctx-size" in line
    assert fit.startswith("fit [derived] llama.cpp allocates the weights, the KV cache for its context (--ctx-size) "
                          "and its compute buffers in the node's 121.6 GiB. Sized here by vLLM's rules as a stand-in")
    assert "by vLLM's per-request rule as a stand-in" in pool and "concurrent sessions fit" in pool
    vllm = run(capsys, "show", GLM, "--nodes", "2")
    assert "At gpu-memory-utilization 0.85, vLLM takes" in vllm and "GPU KV cache size" in vllm


def test_fidelity_tsv_gives_each_measured_figure_as_the_source_does(capsys):
    """GLM's logged pool of 3,834,498 tokens read 3.8345e+06 in the TSV: a script got 3,834,500."""
    rows = list(csv.DictReader(io.StringIO(run(capsys, "fidelity", "--format", "tsv")), delimiter="\t"))
    measured = [r[next(k for k in r if k.startswith("measured"))] for r in rows]
    assert "3834498" in measured and not any("e+" in m for m in measured)


def test_coverage_on_an_80_column_terminal_fits_and_names_what_it_left_out(capsys, monkeypatch, index):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    lines = re.sub(r"\x1b\[[0-9;]*m", "", run(capsys, "coverage")).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("  ") and "usable" in line for line in lines[2:16])  # a hardware line, wrapped
    assert any(line.startswith("Not shown at this width: ") for line in lines)
    family = next(line for line in lines if line.startswith("all "))
    assert family.split()[:3] == ["all", str(len(index.catalog.models)), str(len(index.catalog.builds))]
