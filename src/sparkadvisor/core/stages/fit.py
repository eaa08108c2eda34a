"""The first stage, `fit_on` -> `Fit`: the parallelism, one node's memory budget, and whether the
build fits (by the arithmetic, or by a measured recipe).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparkadvisor.core.kv import indexed_ratio
from sparkadvisor.core.memory import (
    Budget,
    Reserve,
    Weights,
    node_budget,
    node_fits,
    runtime_reserve,
    valid_parallelism,
)
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware, Recipe
from sparkadvisor.core.stages.recipe import _window, measured, plan_recipe
from sparkadvisor.core.units import GB, GiB
from sparkadvisor.core.workload import Settings

if TYPE_CHECKING:
    from sparkadvisor.core.index import BuildFacts


@record(kw_only=False)
class Fit:
    """Does the build run on these nodes, and what does each node's memory hold?"""

    tp: int
    pp: int
    parallel_reason: str
    """Why this split: the recipe's, or what the head counts allow."""
    budget: Budget
    """One node's memory: engine share, weights, reserve, KV cache."""
    fits: bool
    """The build runs here: by the arithmetic or, failing that, by a measured recipe."""
    fit_by_recipe: bool
    """Only a measured recipe shows it runs (the arithmetic says it is short)."""
    nodes_needed: int | None
    """Smallest cluster that fits by the same rule, or None beyond max_nodes."""
    kv_cache_dtype: str
    """--kv-cache-dtype in force: the user's override, else the recipe's, else auto."""


def fit_on(*, facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None, settings: Settings,
           split: Split | None = None, engine: str = "vllm") -> Fit:
    """The fit on `nodes` of `hardware` under `engine`; `nodes_needed` asks the same question of each size.
    `split`: the model's `split_and_terms`, when already worked out."""
    tp, pp, reason, kv_cache_dtype, terms = split or split_and_terms(facts, hardware, nodes, recipe, settings, engine)
    budget = node_budget(hardware, terms.weights_per_node(facts.weights), terms.utilization, terms.kv_pinned_gib,
                         terms.reserve, terms.weights_loaded_gib is not None)
    # A recipe's measured decode proves it runs only with the recipe's own memory settings.
    by_recipe = not budget.fits and terms.runs_as_measured
    fits = budget.fits or by_recipe
    needed = _nodes_needed(facts, hardware, settings, nodes, fits, budget)
    return Fit(tp, pp, reason, budget, fits, by_recipe, needed, kv_cache_dtype)  # positional: see plan.evaluate


@record(kw_only=False)
class NodeTerms:
    """What a node's budget is drawn up with beside the build's own weights, under one recipe, split and
    the user's settings: the same for every build of a model (a ranking works it out once per model)."""

    ranks: int
    """tp x pp."""
    utilization: float
    """--gpu-memory-utilization in force (`utilization`)."""
    kv_pinned_gib: float | None
    """The recipe's pinned KV cache per node, unless the user sets the utilization."""
    reserve: Reserve
    """What vLLM keeps beside weights and KV (`reserve_for`)."""
    weights_loaded_gib: float | None
    """The recipe's logged weights per rank, when it splits over exactly these ranks."""
    streams_tables: bool
    """The recipe keeps the per-token tables on disk."""
    runs_as_measured: bool
    """A measured decode shows the recipe runs, with its own memory settings (no override)."""

    def weights_per_node(self, weights: Weights) -> float:
        """The weights a node holds: the recipe's logged per-rank figure when it has one, else the stored share."""
        loaded = self.weights_loaded_gib
        return loaded * GiB if loaded is not None else weights.resident_bytes(self.streams_tables) / self.ranks


def node_terms(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings,
               ranks: int) -> NodeTerms:
    """The budget's terms on `ranks` under `recipe` (`facts` is read for its model only)."""
    return NodeTerms(ranks, utilization(settings, recipe, hardware),
                     recipe.kv_cache_gib if recipe and settings.gpu_memory_utilization is None else None,
                     reserve_for(facts, recipe, settings, ranks), _loaded_gib(recipe, ranks),
                     bool(recipe and recipe.streams_tables), _runs_as_measured(recipe, settings))


Split = tuple[int, int, str, str, NodeTerms]
"""(tp, pp, why, --kv-cache-dtype in force, the budget's terms): `split_and_terms`."""


def split_and_terms(facts: BuildFacts, hardware: Hardware, nodes: int, recipe: Recipe | None,
                    settings: Settings, engine: str = "vllm") -> Split:
    """(tp, pp, why, --kv-cache-dtype in force, the budget's terms) of a fit: what the model, the recipe,
    the engine and the settings decide whatever the build's weights."""
    tp, pp, reason = valid_parallelism(facts.model, nodes, recipe, engine, hardware.unified_memory)
    kv_cache_dtype = settings.kv_cache_dtype or (recipe.kv_cache_dtype if recipe else "auto")
    return tp, pp, reason, kv_cache_dtype, node_terms(facts, hardware, recipe, settings, tp * pp)


def _fits_at(facts: BuildFacts, hardware: Hardware, recipe: Recipe | None, settings: Settings, ranks: int) -> bool:
    """Whether the build fits on `ranks` under `recipe`, as `fit_on` judges it, without the budget record."""
    terms = node_terms(facts, hardware, recipe, settings, ranks)
    return (node_fits(hardware, terms.weights_per_node(facts.weights), terms.utilization, terms.kv_pinned_gib,
                      terms.reserve) or terms.runs_as_measured)


def _loaded_gib(recipe: Recipe | None, ranks: int) -> float | None:
    """The recipe's logged weights per rank, when it splits over exactly these ranks."""
    return recipe.weights_loaded_gib if recipe is not None and recipe.tp * recipe.pp == ranks else None


def _runs_as_measured(recipe: Recipe | None, settings: Settings) -> bool:
    """A measured decode shows the recipe runs, with its own memory settings (no override)."""
    return settings.gpu_memory_utilization is None and measured(recipe, "decode_tok_s") is not None


def _nodes_needed(facts: BuildFacts, hardware: Hardware, settings: Settings, nodes: int, fits: bool,
                  budget: Budget) -> int | None:
    """The smallest size that fits by the rule the plan's own fit on `nodes` followed (`budget` is
    that plan's node budget): when it fits there, no size above `nodes` is tried."""
    if not any(not r.benchmark for r in facts.recipes_on(hardware)):
        # No recipe to follow at any size (a benchmark's configuration is followed only when named): only the
        # weights' share changes with the size; the utilization and the reserve (no drafter, so no share of
        # one) are the plan's own budget's, and nothing is pinned.
        # The share grows as the size shrinks, so when `nodes` is short no smaller size is tried either.
        resident = facts.weights.resident_bytes(False)
        for size in range(1, nodes) if fits else range(nodes + 1, hardware.max_nodes + 1):
            if node_fits(hardware, resident / size, budget.utilization, None, budget.reserve):
                return size
        return nodes if fits else None
    # One GPU per node: tp x pp is the node count, a recipe's too (check_references enforces it).
    for size in range(1, nodes if fits else hardware.max_nodes + 1):
        if _fits_at(facts, hardware, plan_recipe(facts, hardware, size, settings)[0], settings, size):
            return size
    return nodes if fits else None


def reserve_for(facts: BuildFacts, recipe: Recipe | None, settings: Settings, ranks: int) -> Reserve:
    """What vLLM keeps beside weights and KV in this recipe's mode (the user's --eager/--cuda-graphs
    first): the profile run (the recipe's logged one, else the general figure), CUDA graphs unless eager,
    a drafter's graphs and weights when it speculates, an indexer's prefill buffer at the max-model-len
    the pool is sized for."""
    eager = settings.enforce_eager if settings.enforce_eager is not None else bool(recipe and recipe.enforce_eager)
    spec = recipe.speculative if recipe else None
    draft = (spec.draft_size_gb or 0.0) * GB / ranks if spec else 0.0
    attention = facts.model.attention
    has_indexer = bool(attention.indexer_head_dim) if attention else facts.model.sparse_indexer is not None
    indexed = (_window(facts, recipe, settings.max_model_len) or 0) // indexed_ratio(attention) if has_indexer else 0
    logged = recipe.reserve if recipe is not None else None
    return runtime_reserve(eager, spec is not None, draft, indexed, logged)  # positional: lru_cache keys them faster


def utilization(settings: Settings, recipe: Recipe | None, hardware: Hardware) -> float:
    """--gpu-memory-utilization in force: the user's, else the recipe's, else the hardware default."""
    if settings.gpu_memory_utilization is not None:
        return settings.gpu_memory_utilization
    if recipe is not None and recipe.gpu_memory_utilization is not None:
        return recipe.gpu_memory_utilization
    return hardware.gpu_memory_utilization


def short_bytes(weights: Weights, fit: Fit) -> float:
    """How far the whole build, split over the ranks, exceeds each node's usable memory."""
    return max(0.0, weights.total_bytes / (fit.tp * fit.pp) - fit.budget.usable_bytes)
