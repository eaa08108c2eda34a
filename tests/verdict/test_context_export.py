"""The export never writes a --max-model-len the model cannot serve, and says when it uses the extension."""

from __future__ import annotations

import pytest

from sparkadvisor.catalogs import load_index
from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.catalog import CatalogError
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import AGENTIC
from sparkadvisor.export.argv import flatten, max_model_len, model_options

RECIPE = """
[[recipes]]
id = "qwen3-32b-yarn"
build = "qwen3-32b-nvfp4-nvidia"
title = "test: Qwen3-32B with YaRN"
nodes = 1
max_model_len = {length}
source = "qwen3-32b-openrouter"
"""


def user_catalog(tmp_path, length: int):
    path = tmp_path / "mine.toml"
    path.write_text(RECIPE.format(length=length), encoding="utf-8")
    return load_index([path], include_user=False)


def plan(index, build: str, nodes: int = 1):
    return evaluate_build(index, index.builds[build], Cluster(index.hardware["dgx-spark"], nodes), AGENTIC)


def test_a_recipe_past_the_native_context_is_written_and_named_as_extended(tmp_path):
    p = plan(user_catalog(tmp_path, 131072), "qwen3-32b-nvfp4-nvidia")
    assert p.recipe is not None and p.recipe.id == "qwen3-32b-yarn"
    length, why = max_model_len(p)
    assert length == 131072
    assert why == ("the recipe's, the EXTENDED context: past the native 32,768 by YaRN factor 4, "
                   "which the recipe must enable")
    assert next(t for t in p.targets if t.key == "context").status == "met"


def test_a_recipe_longer_than_the_model_serves_is_refused(tmp_path):
    with pytest.raises(CatalogError, match="200,000 is longer than the model serves: its extended context 131,072"):
        user_catalog(tmp_path, 200_000)


def test_without_a_recipe_the_native_context_is_written_never_the_extension(index):
    p = plan(index, "qwen3-32b-nvfp4-nvidia", 2)
    length, why = max_model_len(p)
    assert length == 32768 and "native" in why and "needs a recipe" in why
    options = flatten(model_options(p, "qwen"))
    assert options[options.index("--max-model-len") + 1] == "32768"


def test_an_unknown_context_leaves_the_flag_out(index):
    p = plan(index, "minimax-m2.7-awq-cyankiwi", 2)
    assert p.model.context is None
    assert max_model_len(p)[0] is None
    assert "--max-model-len" not in flatten(model_options(p, "minimax"))
    assert "context window unknown" in p.unknowns
