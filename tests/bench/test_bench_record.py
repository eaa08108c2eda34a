"""--record: the run becomes measurements that show, rank and the calibration use at once."""

from __future__ import annotations

import json
import tomllib

from bench_fakes import bench_server

from sparkadvisor import paths
from sparkadvisor.cli import main

BUILD = "glm-5.3-flash-nvfp4-redhat"
RUN = ["--context", "4000", "--repetitions", "2", "--streams", "1,2", "--output-tokens", "20", "--record"]


def user_recipes() -> list[dict]:
    return tomllib.loads(paths.user_catalog_path().read_text(encoding="utf-8"))["recipes"]


def constants():
    from sparkadvisor.catalogs import load_index

    index = load_index()
    return index.speed_constants(index.hardware["dgx-spark"])


def test_recorded_runs_are_measured_in_show_and_move_the_calibration(standin, capsys):
    before = constants()
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    out = " ".join(capsys.readouterr().out.split())
    recipe_id = f"bench-{BUILD}-2x-dgx-spark"
    assert f"recorded 6 measurements as recipe {recipe_id}" in out

    after = constants()
    assert after.prefill_ms_per_gflop != before.prefill_ms_per_gflop
    assert after.prefill_measurements > before.prefill_measurements

    assert main(["show", BUILD, "--context", "4000", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    warm = next(m for m in user_recipes()[0]["measurements"] if m.get("cached_tokens"))
    assert shown["recipe"] == recipe_id
    assert shown["ttft_s"] == round(warm["value"], 1)
    decode = next(m for m in user_recipes()[0]["measurements"] if m["metric"] == "decode_tok_s")
    assert shown["decode_measured_tok_s"] == decode["value"] and 45 < decode["value"] < 51  # the stand-in's 50
    assert main(["show", BUILD, "--context", "4000"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "first token [measured] Measured" in text and "sparkadvisor bench" in text
    assert "with 3,792 of 4,000 prompt tokens from the prefix cache" in text


def test_a_second_record_adds_runs_and_keeps_the_first(standin, capsys):
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    first = user_recipes()
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    out = capsys.readouterr().out
    second = user_recipes()
    # The same server boot sized the same KV cache: its pool is not recorded twice.
    assert len(second) == 1 and len(second[0]["measurements"]) == 11
    assert second[0]["measurements"][:6] == first[0]["measurements"]
    assert len(second[0]["source"]) == 2 and "recorded 5 measurements as recipe bench-" in " ".join(out.split())
    catalog = tomllib.loads(paths.user_catalog_path().read_text(encoding="utf-8"))
    notes = [s["note"] for s in catalog["sources"].values()]
    assert len(notes) == 2 and all("against vLLM 0.33.0 serving RedHatAI/GLM-5.3-Flash-NVFP4" in n for n in notes)
    assert all("cache_dtype fp8_e4m3, enable_prefix_caching True" in n for n in notes)


def test_a_server_run_with_other_settings_starts_a_new_recipe(standin, capsys):
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    other = bench_server(overhead_s=0.1, block_size=32, spec=True)
    try:
        assert main(["bench", "--vllm", other.url, *RUN]) == 0
    finally:
        other.close()
    recipes = user_recipes()
    assert [r["id"] for r in recipes] == [f"bench-{BUILD}-2x-dgx-spark", f"bench-{BUILD}-2x-dgx-spark-2"]
    assert [r["block_size"] for r in recipes] == [16, 32]
    # Speculation: off on the first server (the catalog recipe's drafter is dropped), on for the second,
    # with the method from the catalog recipe and the acceptance the counters measured (1.5 of 2 drafted).
    assert "speculative" not in recipes[0]
    assert recipes[1]["speculative"]["method"] == "dflash" and recipes[1]["speculative"]["acceptance"] == 0.75
    # Each decode figure keeps the acceptance counted over its own steps, so fidelity and show predict it there.
    decode = [m for m in recipes[1]["measurements"] if m["metric"] in ("decode_tok_s", "aggregate_tok_s")]
    assert decode and all(m["acceptance"] == 0.75 for m in decode)
    assert all("acceptance" not in m for m in recipes[0]["measurements"])
    assert main(["show", BUILD, "--context", "4000", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("\n{") + 1:])["recipe"] == f"bench-{BUILD}-2x-dgx-spark-2"  # the newest


def test_recording_keeps_the_users_comments_and_other_tables(standin, capsys):
    path = paths.user_catalog_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = ('# my Sparks, my notes\nschema_version = 1\n\n'
            '[sources.my-notes]  # keep me\ntitle = "mine"\nkind = "article"\n')
    path.write_text(mine, encoding="utf-8")
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    first = path.read_text(encoding="utf-8")
    assert first.startswith(mine)
    # The user annotates the recorded recipe; the next run changes its source list and adds measurements.
    at = first.index("\nsource = ", first.index("[[recipes]]"))
    first = f"{first[:at]}\n# first run on the new switch{first[at:]}"
    cold = '[[recipes.measurements]]\nmetric = "ttft_s"'
    first = first.replace(cold, cold.replace("]]\n", "]]  # cold\n"), 1)
    path.write_text(first, encoding="utf-8")
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    second = path.read_text(encoding="utf-8")
    assert second.startswith(mine) and "# first run on the new switch\n" in second
    assert second.count("[[recipes.measurements]]  # cold\n") == 1
    recipes = user_recipes()
    assert len(recipes) == 1 and len(recipes[0]["measurements"]) == 11 and len(recipes[0]["source"]) == 2
    assert main(["check", str(path)]) == 0


def _recipe_source_line(text: str) -> tuple[int, int]:
    start = text.index("\nsource = ", text.index("[[recipes]]")) + 1
    return start, text.index("\n", start)


def test_comments_inside_the_source_list_stay_where_the_user_wrote_them(standin, capsys):
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    path = paths.user_catalog_path()
    text = path.read_text(encoding="utf-8")
    start, end = _recipe_source_line(text)
    first = tomllib.loads(text)["recipes"][0]["source"]  # one run: one source id
    mine = f'source = [  # where these came from\n    "{first}",  # the first run\n    # more to come\n]'
    path.write_text(text[:start] + mine + text[end:], encoding="utf-8")
    capsys.readouterr()
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0, capsys.readouterr().err
    second = path.read_text(encoding="utf-8")
    added = user_recipes()[0]["source"][1]
    assert (f'source = [  # where these came from\n    "{first}",  # the first run\n    # more to come\n'
            f'    "{added}",\n]') in second


def test_measurements_written_inline_grow_inline(standin, capsys):
    """A user who keeps a recipe's measurements as one inline array: the next run is added to it, in place."""
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    path = paths.user_catalog_path()
    text = path.read_text(encoding="utf-8")
    recipe = tomllib.loads(text)["recipes"][0]
    tables = text.index("[[recipes.measurements]]")
    rows = "".join("  { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in m.items()) + " },\n"
                   for m in recipe["measurements"])
    sub = text.index("\n[", text.index("[[recipes]]") + 5) + 1
    inline = text[:sub] + "measurements = [  # mine, inline\n" + rows + "]\n\n" + text[sub:tables]
    path.write_text(inline, encoding="utf-8")
    assert main(["check", str(path)]) == 0
    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    after = path.read_text(encoding="utf-8")
    assert "measurements = [  # mine, inline\n" + rows in after
    assert "[[recipes.measurements]]" not in after
    assert len(user_recipes()[0]["measurements"]) == 11 and main(["check", str(path)]) == 0


def test_a_recorded_run_keeps_the_address_without_its_credentials(standin, capsys):
    secret = standin.url.replace("http://", "http://user:s3cret@")
    assert main(["bench", "--vllm", secret, *RUN]) == 0
    capsys.readouterr()
    text = paths.user_catalog_path().read_text(encoding="utf-8")
    assert "s3cret" not in text and f'url = "{standin.url}"' in text
    assert main(["show", BUILD, "--context", "4000"]) == 0
    assert "s3cret" not in capsys.readouterr().out


def test_the_kv_cache_vllm_sized_is_recorded_as_the_recipes_pool(standin, capsys):
    # The stand-in sized 233 block ids; GLM-5.3-Flash's layout on a rank of two (its config.json facts)
    # gives what they hold and the pool at the served max_model_len, as the probe reports them.
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.advisor import evaluate_build
    from sparkadvisor.core.checkup import served_pool
    from sparkadvisor.core.metrics import ServedConfig
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.workload import AGENTIC, Settings

    assert main(["bench", "--vllm", standin.url, *RUN]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # The run's report holds it against the plan as vLLM sized it: no --kv-cache-memory (the catalog
    # recipe's 6 GiB pin is not what this server runs, so the plan is taken unpinned at its 0.85) and no
    # speculative decoding (the plan is made without the recipe's DFlash drafter, whose memory goes to the KV
    # cache, and its decode is held against a plan that decodes one token a pass).
    assert "the repo of build glm-5.3-flash-nvfp4-redhat; its recipe without the drafter, as vLLM runs none)" in out
    assert "KV cache [vLLM's num_gpu_blocks] vLLM holds 5.5 GiB of KV cache per rank (233 blocks of " in out
    assert ("the plan, at gpu-memory-utilization 0.85 and without the recipe's drafter (its memory to the KV "
            "cache), expects 6.3 GiB") in out
    [pool] = [m for m in user_recipes()[0]["measurements"] if m["metric"] == "kv_pool_tokens"]
    index = load_index()
    plan = evaluate_build(index, index.builds[BUILD], Cluster(index.hardware["dgx-spark"], 2), AGENTIC,
                          Settings(speculation=False))
    sized = served_pool(plan, ServedConfig(block_size=16, speculating=False, num_gpu_blocks=233), 262_144)
    assert pool["value"] == round(sized.pool_tokens) and pool["kv_gib"] == round(sized.kv_bytes / 2**30, 3)
    assert 5.5 < pool["kv_gib"] < 5.6 and pool["note"].startswith("vLLM's num_gpu_blocks 233 x ")
    assert main(["show", BUILD, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_pool_measured_tokens"] == pool["value"]


def test_a_block_count_beyond_the_node_records_no_pool(capsys):
    # 42,416 block ids of GLM-5.3-Flash would be a terabyte per rank: vLLM pages it otherwise than the
    # catalog's facts say, so there is no pool in the plan's terms to keep.
    other = bench_server(num_gpu_blocks=42_416)
    try:
        assert main(["bench", "--vllm", other.url, *RUN]) == 0
    finally:
        other.close()
    assert "recorded 5 measurements" in " ".join(capsys.readouterr().out.split())
    assert not [m for m in user_recipes()[0]["measurements"] if m["metric"] == "kv_pool_tokens"]
