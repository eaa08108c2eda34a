"""--no-speculation (and a served vLLM that runs no drafter): every recipe planned without its drafter, its
drafter-shaped measurements set aside, the launch written without --speculative-config."""

from __future__ import annotations

import json

from sparkadvisor.cli import main
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import recipe_step
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC, Settings

GLM = "glm-5.3-flash-nvfp4-redhat"


def plan(index, speculation: bool | None = None):
    return evaluate_build(index, index.builds[GLM], Cluster(index.hardware["dgx-spark"], 2), AGENTIC,
                          Settings(speculation=speculation))


def test_without_the_drafter_the_plan_decodes_one_token_a_pass(index):
    own, off = plan(index), plan(index, speculation=False)
    assert own.recipe.speculative is not None and not own.drafter_off
    assert off.recipe.id == own.recipe.id and off.recipe.speculative is None and off.drafter_off
    # DFlash2's 7 drafted tokens at 74% acceptance carried the step; one token a pass is slower...
    assert off.decode.expected_tok_s < own.decode.expected_tok_s / 2
    # ...and the recipe's 46.9 tok/s, measured with the drafter, is no longer the plan's speed or its check.
    assert own.decode_measured is not None and off.decode_measured is None and off.kv_pool_measured is None
    assert off.decode_tok_s == off.decode.expected_tok_s
    # The drafter's weights leave vLLM's reserve (the recipe pins the KV cache, so its size stays 6 GiB).
    assert off.budget.reserve.draft_weights_bytes == 0 < own.budget.reserve.draft_weights_bytes
    recipe = recipe_step(off, index.facts[GLM]).text
    assert ("Its drafter (dflash, incoai/GLM-5.3-Flash-DFlash2) is left off (--no-speculation): the plan decodes "
            "one token a pass") in recipe
    assert "On other node counts: glm-5.3-flash-tonyd2wild-tp4" in recipe and "Also here" not in recipe


def test_the_cli_says_it_and_the_export_leaves_the_drafter_out(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKADVISOR_HOME", str(tmp_path / "home"))
    assert main(["rank", "--no-speculation", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["speculation"] is False
    glm = next(c for c in out["candidates"] if c["build"] == GLM)
    assert glm["recipe"] == "glm-5.3-flash-tonyd2wild-tp2" and glm["drafter_off"]
    assert glm["decode_measured_tok_s"] is None
    assert main(["show", GLM, "--no-speculation"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("200 out · no speculation")
    for name, extra in (("own", []), ("off", ["--no-speculation"])):
        assert main(["export", GLM, *extra, "--format", "json", "--out", str(tmp_path / name)]) == 0
    argv = {name: json.loads((tmp_path / name / "plan.json").read_text())["nodes"][0]["vllm_argv"]
            for name in ("own", "off")}
    assert "--speculative-config" in argv["own"] and "--speculative-config" not in argv["off"]


def test_a_caveat_the_drafter_brings_leaves_with_it(index):
    qwen = index.builds["qwen3.8-flash-next-nvfp4"]
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    own, off = (evaluate_build(index, qwen, cluster, AGENTIC, Settings(speculation=s)) for s in (None, False))
    kinds = {c.kind for c in own.caveats}
    assert "spec-decode-cache-miss" in kinds and "prefix-caching-disabled" in kinds
    assert {c.kind for c in off.caveats} == kinds - {"spec-decode-cache-miss"}


def test_a_served_drafter_at_another_token_count_is_planned_at_it(index):
    cluster = Cluster(index.hardware["dgx-spark"], 2)
    own, same, three = (evaluate_build(index, index.builds[GLM], cluster, AGENTIC, Settings(speculative_tokens=k))
                        for k in (None, 7, 3))
    assert same is not None and same.recipe is own.recipe and same.served_draft_tokens is None
    assert three.served_draft_tokens == 3 and three.recipe.speculative.tokens_per_pass == 3
    assert three.decode_measured is None and three.decode.expected_tok_s < own.decode.expected_tok_s
    assert ("Its drafter proposes 3 tokens a pass, as the served vLLM's counters show, not the recipe's 7: the "
            "recipe's speeds and pool, measured at 7, are not held against the plan") in \
        recipe_step(three, index.facts[GLM]).text
