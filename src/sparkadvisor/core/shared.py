"""What every build of a model shares in a ranking, worked out once per model.

A catalog holds several builds of most models (formats, publishers), and much of a plan reads only the
model, its recipe, the cluster, the workload and the settings: the split and what a node's budget holds
beside the weights, what a request costs the KV pool, a decode pass's inputs and costs beside reading the
weights, a prompt token's attention. `core.plan.evaluate` asks `model_figures` for that once per build;
inside a ranking (`core.memo.per_ranking`) it is worked out for the first build of the model and kept,
and each stage of `core.stages` takes its part and adds the build's own figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkadvisor.core.memo import once
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Recipe
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.stages.decode import PassTerms, decode_mode, shared_decode
from sparkadvisor.core.stages.first_token import ModelPrefill, prefill_shared, uncached_tokens
from sparkadvisor.core.stages.fit import Split, split_and_terms
from sparkadvisor.core.stages.kv_pool import PerRequest, pool_per_request
from sparkadvisor.core.workload import Settings, Workload

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts


@record(kw_only=False)
class ModelFigures:
    """What every build of a model shares in its plan on one cluster for one workload, under one recipe,
    the user's settings and speed constants, with prefix caching on or off: a ranking works it out once
    per model (`model_figures`) and each build's stages read it beside the build's own weights."""

    split: Split
    """`split_and_terms`: tp, pp, why, the KV dtype in force, the budget's terms."""
    per_request: PerRequest
    """`pool_per_request` at the workload's context."""
    pass_terms: PassTerms | None
    """`shared_decode` at the pool's KV read; None when that read is the build's own (no KV shape, so a
    measured pool's bytes per token)."""
    prefill: ModelPrefill
    """`prefill_shared` at the turn's uncached tokens."""


def model_figures(facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None, workload: Workload,
                  settings: Settings, constants: SpeedConstants, prefix: tuple[bool, str]) -> ModelFigures:
    """The model's `ModelFigures`: one memo record per model in a ranking (`facts` is read for its model,
    and for the decode inputs whose weights' fields each build replaces; `prefix`: prefix caching on and
    why, by the plan's caveats)."""
    return once(("model figures", id(facts.model), id(recipe), id(hardware), nodes, id(workload), id(settings),
                 id(constants), prefix), _model_figures, facts, hardware, nodes, recipe, workload, settings,
                constants, prefix)


def _model_figures(facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None, workload: Workload,
                   settings: Settings, constants: SpeedConstants, prefix: tuple[bool, str]) -> ModelFigures:
    split = split_and_terms(facts, hardware, nodes, recipe, settings, constants.engine)
    tp, pp, _, kv_cache_dtype, _ = split
    context = workload.context_tokens
    per_request = pool_per_request(facts, recipe, kv_cache_dtype, tp, pp, context, prefix, settings.max_model_len,
                                   settings.batched_tokens)
    shape, read = per_request[1], per_request[4]
    pass_terms = (shared_decode(facts, recipe, tp, pp, read, workload.streams,
                                decode_mode(recipe, settings.enforce_eager), constants) if shape is not None else None)
    return ModelFigures(split, per_request, pass_terms, prefill_shared(
        facts.model, recipe, nodes, context, uncached_tokens(workload, prefix[0]), kv_cache_dtype, constants,
        settings.batched_tokens, pp))
