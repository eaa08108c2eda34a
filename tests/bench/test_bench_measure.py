"""`sparkadvisor bench` against the stand-in: what it measures is what the stand-in does."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from bench_fakes import bench_server

from sparkadvisor.cli import main

CONTEXT = 8_000


@pytest.fixture(scope="module")
def run() -> Iterator[tuple[dict[str, Any], Any]]:
    """One full run (2 cold/warm pairs, 1 and 4 streams), shared by the tests below.

    Every figure is timed on the wall clock, so the stand-in is slow enough that the moments a loaded
    machine takes to deliver a token stay a small share of what is measured: a warm first token of
    0.6 s, and 60 tokens at 100 tok/s, 10 ms apart, decoded over 0.6 s (at 400 tok/s they took 0.15 s,
    and a 15 ms delay on a loaded 2-core box moved the rate by 10%)."""
    server = bench_server(overhead_s=0.5, prefill_tok_s=4_000.0, decode_tok_s=100.0)
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPARKADVISOR_HOME", home)
        mp.delenv("SPARKADVISOR_VLLM_URL", raising=False)
        with contextlib.redirect_stdout(out):
            code = main(["bench", "--vllm", server.url, "--context", str(CONTEXT), "--output-tokens", "60",
                         "--repetitions", "2", "--streams", "1,4", "--json"])
    server.close()
    assert code == 0
    yield json.loads(out.getvalue()), server.state


def figure(data: dict[str, Any], metric: str, streams: int = 1) -> dict[str, Any]:
    return next(f for f in data["figures"] if f["metric"] == metric and f["streams"] == streams)


def test_cold_over_warm_is_the_stand_ins_ratio_within_ten_percent(run):
    data, state = run
    truth = state.truth_ratio(CONTEXT, 0.95)
    measured = figure(data, "ratio")["median"]
    assert truth > 3
    assert measured == pytest.approx(truth, rel=0.10)


def test_the_counters_say_cold_missed_and_warm_hit(run):
    data, _ = run
    assert figure(data, "cold_ttft_s")["prefix_cache_hit_share"] < 0.01
    warm = figure(data, "warm_ttft_s")
    assert warm["prefix_cache_hit_share"] == pytest.approx(0.95, abs=0.01)
    # 7,600 shared tokens are 475 blocks of 16: the cache serves all of them.
    assert warm["cached_tokens"] == 7_600


def test_every_prompt_is_exactly_the_context(run):
    data, _ = run
    assert data["prompt_tokens_seen"] == [CONTEXT]


def test_decode_is_the_stand_ins_rate_and_more_streams_give_more(run):
    data, state = run
    single = figure(data, "decode_tok_s")
    assert single["median"] == pytest.approx(state.decode_tok_s, rel=0.10)
    assert len(single["values"]) == 2 and single["spread"] is not None
    assert figure(data, "aggregate_tok_s", 4)["median"] > 1.3 * single["median"]


def test_each_figure_stands_beside_the_plans_prediction(run):
    data, _ = run
    assert data["build"] == "glm-5.3-flash-nvfp4-redhat" and data["vllm_version"] == "0.33.0"
    for f in data["figures"]:
        p = f["predicted"]
        assert p is not None and p["low"] <= p["expected"] <= p["high"]
        where = "inside" if p["low"] <= f["median"] <= p["high"] else ("below" if f["median"] < p["low"] else "above")
        assert p["verdict"] == where
    # The stand-in is far faster than two real Sparks: its first token falls below the prediction.
    assert figure(data, "cold_ttft_s")["predicted"]["verdict"] == "below"
    assert data["steps_run"] == data["steps_planned"] == 5 and data["stopped"] is None


def test_the_text_report_reads_like_show(standin, capsys):
    code = main(["bench", "--vllm", standin.url, "--context", "4000", "--repetitions", "1", "--streams", "1",
                 "--output-tokens", "20"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    lines = out.splitlines()  # not a terminal: one line per figure, never wrapped at 80 columns
    assert lines[0] == f"bench RedHatAI/GLM-5.3-Flash-NVFP4 · vLLM 0.33.0 at {standin.url} · max_model_len 262,144"
    warm = next(line for line in lines if line.startswith("warm first token [measured]"))
    text = " ".join(lines)
    assert re.search(r"\[measured\] 0\.\d\d s beside 0\.\d\d s predicted: (inside|OUTSIDE \((below|above)\)) the "
                     r"predicted range 0\.\d\d-0\.\d\d s\.", warm)
    assert "Prefix-cache counters over these requests: 95% of prompt tokens hit (3,792 tokens a request)" in warm
    assert text.endswith("add --record to keep these as measurements of this build on this cluster")


@pytest.mark.parametrize("spec", [False, True])
def test_the_decode_is_held_against_a_plan_with_the_servers_drafter_or_without(spec, capsys, monkeypatch, tmp_path):
    """vLLM reports speculative decoding only when it runs a drafter. Without one, the plan the run is held
    against runs the recipe without its drafter too; it used to predict the recipe's DFlash2 speed."""
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, Settings

    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    server = bench_server(overhead_s=0.1, prefill_tok_s=40_000.0, decode_tok_s=400.0, spec=spec)
    try:
        assert main(["bench", "--vllm", server.url, "--context", "2000", "--repetitions", "1", "--streams", "1",
                     "--output-tokens", "20", "--json"]) == 0
    finally:
        server.close()
    decode = figure(json.loads(capsys.readouterr().out), "decode_tok_s")
    # With a drafter, the figure is predicted at the acceptance the stand-in's counters say (1.5 of 2 drafted),
    # beside the plan's own.
    assert decode["acceptance"] == decode["predicted"]["at_acceptance"] == (0.75 if spec else None)
    predicted = decode["predicted"]["expected_at_recipe_acceptance" if spec else "expected"]
    index = load_index()
    workload = AGENTIC.changed(context_tokens=2000, output_tokens=20)
    build, cluster = index.builds["glm-5.3-flash-nvfp4-redhat"], Cluster(index.hardware["dgx-spark"], 2)
    plans = {s: evaluate_build(index, build, cluster, workload, Settings(speculation=s)) for s in (None, False)}
    expected = plans[None if spec else False].decode.expected_tok_s
    assert predicted == pytest.approx(expected, rel=0.01)
    assert plans[False].decode.expected_tok_s < plans[None].decode.expected_tok_s / 2


def test_a_speculating_servers_decode_is_predicted_at_the_acceptance_it_counted(capsys, monkeypatch, tmp_path):
    """Acceptance moves with the text and the batch (GLM's DFlash2 accepts 53% at one stream and 40% at six):
    each decode figure is held against the plan at the share vLLM accepted over its own steps, and says so."""
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    server = bench_server(overhead_s=0.1, prefill_tok_s=40_000.0, decode_tok_s=400.0, spec=True, acceptance=0.6,
                          acceptance_drop=0.1)
    try:
        assert main(["bench", "--vllm", server.url, "--context", "2000", "--repetitions", "1", "--streams", "1,3",
                     "--output-tokens", "40", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert main(["bench", "--vllm", server.url, "--context", "2000", "--repetitions", "1", "--streams", "1",
                     "--output-tokens", "40"]) == 0
        text = " ".join(capsys.readouterr().out.split())
    finally:
        server.close()
    single, three = figure(data, "decode_tok_s"), figure(data, "aggregate_tok_s", 3)
    assert single["acceptance"] == pytest.approx(0.6, abs=0.001)
    assert three["acceptance"] == pytest.approx(0.4, abs=0.06)  # streams overlap for most of the step
    for f in (single, three):
        p = f["predicted"]
        assert p["at_acceptance"] == f["acceptance"] and p["low"] < p["expected"] < p["high"]
        # Below the recipe's 74%, fewer tokens a pass: less than the plan's own acceptance predicts.
        assert p["expected"] < p["expected_at_recipe_acceptance"]
    # The cold first token drafts nothing: no acceptance, no change.
    assert figure(data, "cold_ttft_s")["acceptance"] is None
    assert re.search(r"decode, 1 stream \[measured\] .* predicted at the 60% of drafted tokens vLLM accepted over "
                     r"these steps \(the recipe's acceptance predicts [\d.]+ tok/s\): ", text)


def test_bounds_follow_the_engine_that_serves_the_run(capsys, monkeypatch, tmp_path):
    """Qwen3-235B NVFP4's caveat reports TensorRT-LLM slow. Served by vLLM, a bench of it holds its figures against
    ranges, not that engine's bounds; with a user's caveat naming vLLM, its figures stand beside bounds, and the
    JSON gives a bound no range."""
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path))
    monkeypatch.delenv("SPARKADVISOR_VLLM_URL", raising=False)
    args = ["--context", "4000", "--output-tokens", "20", "--repetitions", "1", "--streams", "1", "--nodes", "2",
            "--json"]
    mine = tmp_path / "mine.toml"
    mine.write_text('[sources.me]\ntitle = "my runs"\nurl = "https://example.org"\n[[caveats]]\nid = "slow-here"\n'
                    'kind = "slow-engine"\nseverity = "warning"\nexplanation = "slow on vLLM here"\n'
                    'engines = ["vllm"]\nsource = "me"\n[[builds]]\nid = "qwen3-235b-fp4-mine"\n'
                    'model = "qwen3-235b-a22b"\nrepo = "nvidia/Qwen3-235B-A22B-FP4-mine"\nformat = "nvfp4-modelopt"\n'
                    'caveats = ["slow-here"]\nsource = "me"\n')
    for served, extra, bound in (("nvidia/Qwen3-235B-A22B-FP4", [], False),
                                 ("nvidia/Qwen3-235B-A22B-FP4-mine", ["--catalog", str(mine)], True)):
        server = bench_server(served=served, overhead_s=0.05, prefill_tok_s=20_000.0, decode_tok_s=50.0)
        try:
            assert main(["bench", "--vllm", server.url, *args, *extra]) == 0
        finally:
            server.close()
        data = json.loads(capsys.readouterr().out)
        for metric in ("decode_tok_s", "cold_ttft_s", "prefill_tok_s"):
            predicted = figure(data, metric)["predicted"]
            assert bool(predicted["bound"]) is bound, (served, metric, predicted)
            assert (predicted["low"] is None) is bound and (predicted["verdict"] == "unknown") is bound
