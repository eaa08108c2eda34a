"""KV per token is never unknown for lack of a config field: every catalog model's attention facts
are complete enough for the KV arithmetic, save architectures the schema cannot express."""

from __future__ import annotations

from sparkadvisor.core.advisor import evaluate_build
from sparkadvisor.core.explain import explain
from sparkadvisor.core.plan import Cluster
from sparkadvisor.core.workload import WORKLOADS

NOT_EXPRESSIBLE = {
    # DeepSeek-V4.1-Flash (vLLM's models/deepseek_v4_1, config.json text_config): its compressed
    # layers do not cache their own rows; they read KV and indexer keys from earlier source layers
    # (kv_source_layer_ids [2, 8, 14, 20], index_source_layer_ids [2, 8, ..., 36]) and compress at
    # ratios drawn from {0, 1, 2} with a candidate-block stage. Attention.compressed caches one row
    # per `ratio` tokens in every layer it counts, so any entry here would count caches that are
    # shared, and overstate the KV. Until the schema can say "this layer reuses layer N's cache",
    # its KV comes from a recipe's measured pool, and the explanation says so.
    "deepseek-v4.1-flash": "cross-layer KV sharing (kv_source_layer_ids)",
}
"""Model id -> what the schema lacks to express its KV cache."""


def _kv_step(index, model_id):
    build = next(b for b in index.catalog.builds if b.model == model_id)
    plan = evaluate_build(index, build, Cluster(index.hardware["dgx-spark"], 1), WORKLOADS["chat"])
    step = next(s for s in explain(plan) if s.key == "kv")
    return plan, step


def test_every_model_has_kv_per_token_from_its_config(index):
    missing = []
    for model in index.catalog.models:
        if model.id in NOT_EXPRESSIBLE:
            continue
        plan, step = _kv_step(index, model.id)
        if plan.kv is None or step.basis != "derived":
            missing.append(f"{model.id}: {step.text}")
    assert missing == []


def test_the_exceptions_are_still_models_whose_kv_the_config_cannot_give(index):
    """An exception that the schema has learned to express must leave the list."""
    for model_id in NOT_EXPRESSIBLE:
        plan, step = _kv_step(index, model_id)
        assert plan.kv is None, f"{model_id} now has config-derived KV: drop it from NOT_EXPRESSIBLE"
        assert step.basis != "derived" or "measured pool" in step.text, model_id
