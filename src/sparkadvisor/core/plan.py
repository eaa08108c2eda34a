"""One estimator behind every view: a build on a cluster for a workload, as a `Plan`.

The TUI, the CLI, the exporter and the probe all read plans made here; none of them
computes a number of its own. `evaluate` runs the stages of `core.stages` on the build's
facts from the index and keeps each stage's record; the plan's other attributes are
shorthands for the figures views read most.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from sparkadvisor.core.caveats import on_engine, slow_route
from sparkadvisor.core.index import ENGINE, BuildFacts, CatalogIndex, default_engine, runs_on
from sparkadvisor.core.memory import LAYER_SPLIT_ENGINES, LAYER_SPLIT_SOURCES, Weights
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build, Capability, Caveat, DecodeRead, Hardware, Model, Recipe
from sparkadvisor.core.shared import model_figures
from sparkadvisor.core.speed.constants import SpeedConstants
from sparkadvisor.core.speed.decode import read_under
from sparkadvisor.core.stages.decode import DecodeSpeed, decode_at, decode_speed
from sparkadvisor.core.stages.first_token import FirstToken, first_token, prefill
from sparkadvisor.core.stages.fit import Fit, fit_on, short_bytes
from sparkadvisor.core.stages.kv_pool import KvPool, kv_pool_for
from sparkadvisor.core.stages.recipe import measured, measured_ttft, plan_recipe, prefix_caching
from sparkadvisor.core.targets import (
    Status,
    TargetCheck,
    UsableContext,
    check_targets,
    judge_targets,
    usable_context,
    within_pool,
)
from sparkadvisor.core.workload import DEFAULT_SETTINGS, Settings, Workload

__all__ = ["ENGINE", "Cluster", "Plan", "evaluate", "measured"]


@record(kw_only=False)
class Cluster:
    """`nodes` of one hardware profile."""

    hardware: Hardware
    nodes: int

    @property
    def label(self) -> str:
        """"2 x DGX Spark"."""
        return f"{self.nodes} x {self.hardware.name}"

    @property
    def usable_gib(self) -> float:
        """Memory a serving engine can use across the cluster, in GiB."""
        return self.nodes * self.hardware.usable_memory_gib


@record(kw_only=False)
class Plan:
    """Everything the advisor knows about one build on one cluster for one workload."""

    build: Build
    model: Model
    cluster: Cluster
    workload: Workload
    recipe: Recipe | None
    """The community recipe used for these nodes, if any."""
    weights: Weights
    """What the build holds (per-build fact)."""
    fit: Fit
    pool: KvPool
    speed: DecodeSpeed
    first: FirstToken
    caveats: tuple[Caveat, ...]
    """The build's caveats, then the recipe's."""
    disqualified_by: Caveat | None
    """A caveat that rules the build out for this workload."""
    constants: SpeedConstants
    """The calibrated speed constants the estimates used."""
    turn_s: float | None
    """First token plus the answer at the decode speed a turn is costed at (`turn_seconds`)."""
    no_engine: str | None = None
    """Why no engine is known to serve the build on this hardware (`engine_gap`), or None when one is."""
    drafter_off: bool = False
    """The recipe speculates, and the settings run it without its drafter (`stages.recipe.without_drafter`)."""
    served_draft_tokens: int | None = None
    """The tokens a served vLLM's drafter proposes a pass, where they differ from the recipe's and the plan
    follows them (`stages.recipe.drafting`); None otherwise."""
    statuses: tuple[Status, ...] = ()
    """Each of the workload's targets (`core.targets.TARGET_KEYS`): met, missed or unknown. Judged on
    the plan's own figures when the plan is made."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "statuses", judge_targets(self))

    @property
    def targets(self) -> tuple[TargetCheck, ...]:
        """Each target with its status and, in words, why (written when a view asks)."""
        return check_targets(self)

    # Shorthands for the figures views read most; each is one stage's field.
    tp = property(lambda self: self.fit.tp)
    pp = property(lambda self: self.fit.pp)
    parallel_reason = property(lambda self: self.fit.parallel_reason)
    budget = property(lambda self: self.fit.budget)
    fits = property(lambda self: self.fit.fits)
    runs = property(lambda self: self.fit.fits and self.no_engine is None,
                    doc="It fits and an engine is known to serve it here: its figures describe a server.")
    fit_by_recipe = property(lambda self: self.fit.fit_by_recipe)
    nodes_needed = property(lambda self: self.fit.nodes_needed)
    kv_cache_dtype = property(lambda self: self.fit.kv_cache_dtype)
    kv = property(lambda self: self.pool.shape)
    kv_basis = property(lambda self: self.pool.basis)
    kv_bytes_per_token = property(lambda self: self.pool.bytes_per_token)
    kv_pool_tokens = property(lambda self: self.pool.pool_tokens)
    kv_pool_measured = property(lambda self: self.pool.measured)
    sessions = property(lambda self: self.pool.sessions)
    decode = property(lambda self: self.speed.estimate)
    decode_measured = property(lambda self: self.speed.measured)
    decode_tok_s = property(lambda self: self.speed.tok_s)
    prefix_caching = property(lambda self: self.first.prefix_caching)
    prefix_caching_note = property(lambda self: self.first.prefix_caching_note)
    uncached_tokens = property(lambda self: self.first.uncached_tokens)
    prefill_tok_s = property(lambda self: self.first.prefill_tok_s)
    prefill_basis = property(lambda self: self.first.prefill_basis)
    prefill_measured = property(lambda self: self.first.prefill_measured)
    ttft_s = property(lambda self: self.first.ttft_s)
    ttft_measured = property(lambda self: self.first.ttft_measured)

    @property
    def decode_bound(self) -> bool:
        """The speed a turn is costed at is an upper bound, not a prediction: no measurement at these streams, and
        the estimate is a bound (`DecodeEstimate.bound`: a per-token table whose bytes are unpublished is left out,
        or a caveat reports the route far slower). A target it seems to meet is unknown (`core.targets`); one it
        misses is missed."""
        d = self.speed.estimate
        return self.speed.measured is None and d is not None and d.bound

    @property
    def slow_route(self) -> str:
        """The caveat (its cite) reporting the plan's engine far slower than what the build reads and computes
        (`caveats.slow_route`), "" for none."""
        return slow_route(self.caveats, self.constants.engine) if self.caveats else ""

    @property
    def first_token_bound(self) -> bool:
        """The first token is a lower bound on its time, not a prediction: no measured prefill or first token, on a
        route a caveat reports far slower (`slow_route`). A target it seems to meet is unknown."""
        return bool(self.first_token_bound_reason(self.slow_route))

    def first_token_bound_reason(self, slow: str) -> str:
        """Why the first token is a bound on an engine the caveat `slow` (its cite, "" for none) reports far slower,
        in a clause; "" where a prefill or first token was measured, or no caveat says so."""
        if not slow or self.first.prefill_measured is not None or self.first.ttft_measured is not None:
            return ""
        return f"{slow} reports this engine far slower than what the model computes"

    @property
    def turn_bound(self) -> bool:
        """A turn is a lower bound on its time, not a prediction: its decode is an upper bound (`decode_bound`) or
        its first token a lower one (`first_token_bound`)."""
        return self.decode_bound or self.first_token_bound

    @property
    def measured_against(self) -> tuple[float, float, float] | None:
        """(expected, low, high) tok/s the model gives at the decode measurement's own context, streams and mode, on
        the measurement's footing (per stream for a per-stream figure): what `show` and the table's mark hold it
        against. None without a measurement or an estimate."""
        m, d = self.speed.measured, self.speed.estimate
        if m is None or d is None:
            return None
        own = decode_at(self.model, self.build.format, self.weights, self.recipe, self.tp, self.pp, self.pool,
                        self.cluster.hardware, self.constants, m, self.decode_read) or d
        per = m.streams if m.metric == "decode_tok_s" else 1
        return own.expected_tok_s / per, own.low_tok_s / per, own.high_tok_s / per

    @property
    def measured_side(self) -> Literal["inside", "above", "below"] | None:
        """Where the decode measurement falls against `measured_against`'s range; None without one, or where the
        model's figure is a bound (no range to fall outside)."""
        against, m, d = self.measured_against, self.speed.measured, self.speed.estimate
        if against is None or m is None or d is None or d.bound:
            return None
        _, low, high = against
        return "above" if m.value > high else "below" if m.value < low else "inside"

    @property
    def decode_read(self) -> DecodeRead | None:
        """What a decode token reads, counted tensor by tensor: the recipe's, where its launch loads another
        layout than the checkpoint's, else the build's; None when nobody counted it."""
        return read_under(self.build, self.recipe)

    @property
    def usable_context(self) -> UsableContext:
        """The longest prompt plus answer the server accepts: the max-model-len the pool is sized for, the
        native context cut to what the pool holds of one request (`targets.within_pool`)."""
        return within_pool(usable_context(self.model, self.recipe, self.pool.inputs.limit), self.kv_pool_tokens)

    @property
    def streams_tables(self) -> bool:
        """The recipe keeps the per-token tables on disk."""
        return bool(self.recipe and self.recipe.streams_tables)

    @property
    def weights_per_node(self) -> float:
        """Bytes of weights each node holds in memory."""
        return self.fit.budget.weights_bytes

    @property
    def short_bytes(self) -> float:
        """How far the whole build, split over the nodes, exceeds each node's usable memory."""
        return short_bytes(self.weights, self.fit)

    @property
    def cold_ttft_s(self) -> float | None:
        """First token for the whole prompt computed from scratch (no prefix reuse): measured at
        this context when a bench run did, else from the prefill rate."""
        context = self.workload.context_tokens
        cold = measured_ttft(self.recipe, context, context)
        if cold is not None:
            return cold.value
        inputs = self.pool.inputs
        rate, _, _, _ = prefill(self.model, self.recipe, self.cluster.nodes, context, context, self.constants,
                                self.build.format, self.weights.transformer_bytes, self.fit.kv_cache_dtype,
                                batched=inputs.batched_tokens if inputs.batched_set else None, stages=self.pp)
        return context / rate if rate else None

    @property
    def efficiency(self) -> float | None:
        """Measured decode / bandwidth ceiling."""
        if self.speed.measured is None or self.speed.estimate is None:
            return None
        return self.speed.measured.value / self.speed.estimate.ceiling_tok_s

    @property
    def target_misses(self) -> tuple[str, ...]:
        """The workload's targets this plan misses, in words."""
        return tuple(t.text for t in self.targets if t.status == "missed")

    @property
    def unknowns(self) -> tuple[str, ...]:
        """The targets nobody can evaluate for this plan, in words."""
        return tuple(t.text for t in self.targets if t.status == "unknown")

    def source_ids(self, score: Capability | None = None) -> list[str]:
        """The sources of every table the plan's figures come from (the build's counted read and the
        measurements its steps quote among them), once each, in reading order;
        with the capability `score` the ranking used, its table's source too (and the reference's own
        source when the reference comes from another table)."""
        model, build = self.model, self.build
        serving = self.cluster.hardware.serving if self.no_engine is not None else None
        shown = (self.kv_pool_measured, self.decode_measured, self.prefill_measured, self.ttft_measured)
        counted = self.decode_read if self.decode is not None and self.decode.read_bound_tok_s is not None else None
        tables = (model, model.params, model.attention, model.context, score, build, build.size, counted,
                  self.recipe, *shown, *self.caveats, serving)
        refs = [ref for table in tables if table is not None
                for ref in (*_refs(table.source), *_refs(getattr(table, "reference_source", None) or ()))]
        if self.budget.kv_pinned_bytes is None and self.fit.fits:
            refs += self.budget.reserve.source_ids  # the reserve's parts, when they size the KV cache
        if self.recipe is None and self.fit.pp > 1 and self.constants.engine in LAYER_SPLIT_ENGINES:
            # Why the nodes hold layers, one after another; and, where each node is a machine, how they reach it.
            refs += LAYER_SPLIT_SOURCES if self.cluster.hardware.unified_memory else LAYER_SPLIT_SOURCES[:1]
        return list(dict.fromkeys(refs))

    @property
    def meets_targets(self) -> bool:
        """Fits, an engine serves it here, no caveat rules it out for the workload, and every target is known to be
        met: an unknown is not a pass."""
        return self.runs and self.disqualified_by is None and all(status == "met" for status in self.statuses)


def _refs(source: str | tuple[str, ...]) -> tuple[str, ...]:
    return (source,) if isinstance(source, str) else source


def evaluate(index: CatalogIndex, build: Build, cluster: Cluster, workload: Workload,
             settings: Settings = DEFAULT_SETTINGS) -> Plan:
    """The plan for one build on one cluster for one workload."""
    facts = index.facts[build.id]
    hardware, nodes = cluster.hardware, cluster.nodes
    recipe, drafter_off, served_tokens = plan_recipe(facts, hardware, nodes, settings)
    engine = recipe.engine if recipe else _engine(build, settings, hardware)
    constants = index.speed_constants(hardware, engine)
    caveats = _caveats(index, facts, recipe, engine, drafter_off)
    shared = model_figures(facts, hardware, nodes, recipe, workload, settings, constants,
                           prefix_caching(recipe, caveats))
    fit = fit_on(facts=facts, hardware=hardware, nodes=nodes, recipe=recipe, settings=settings, split=shared.split,
                 engine=engine)
    pool = kv_pool_for(facts=facts, hardware=hardware, recipe=recipe, fit=fit, workload=workload,
                       per_request=shared.per_request, settings=settings)
    speed = decode_speed(facts=facts, hardware=hardware, recipe=recipe, fit=fit, pool=pool, workload=workload,
                         constants=constants, eager=settings.enforce_eager, pass_terms=shared.pass_terms)
    slow = slow_route(caveats, engine) if caveats else ""
    if slow and speed.estimate is not None:  # the defect it reports is no rate: the reads only bound the speed
        speed = replace(speed, estimate=replace(speed.estimate, slow_route=slow))
    first = first_token(model=facts.model, recipe=recipe, nodes=nodes, caveats=caveats, workload=workload,
                        constants=constants, weight_format=build.format,
                        weight_bytes=facts.weights.transformer_bytes, kv_cache_dtype=fit.kv_cache_dtype,
                        model_prefill=shared.prefill, batched=settings.batched_tokens, stages=fit.pp)
    # A ranking makes several records a build, so they are made positionally, in their fields' order: a
    # keyword call to a class packs the keywords into a dict first, which doubles what making one costs.
    # build, model, cluster, workload, recipe, weights, fit, pool, speed, first, caveats, disqualified_by,
    # constants, turn_s.
    return Plan(build, facts.model, cluster, workload, recipe, facts.weights, fit, pool, speed, first, caveats,
                _disqualifier(caveats, workload), constants, turn_seconds(first, speed, workload),
                None if recipe else engine_gap(build, hardware, engine, settings.engine is not None, nodes),
                drafter_off, served_tokens)


def turn_seconds(first: FirstToken, speed: DecodeSpeed, workload: Workload) -> float | None:
    """First token plus the answer at the decode speed a turn is costed at."""
    tok_s, ttft = speed.tok_s, first.ttft_s
    if ttft is None or not tok_s:
        return None
    return ttft + workload.output_tokens / tok_s


def _disqualifier(caveats: tuple[Caveat, ...], workload: Workload) -> Caveat | None:
    for caveat in caveats:
        if workload.kind in caveat.disqualifies:
            return caveat
    return None


def _engine(build: Build, settings: Settings, hardware: Hardware) -> str:
    """The engine a build without a recipe is costed on: the setting, else the build's default here."""
    return settings.engine or default_engine(build, hardware)


SINGLE_HOST_ENGINES = frozenset({"ollama"})
"""Engines that serve a model from one machine only: Ollama splits layers over the GPUs of its host but has no way
to reach another host's memory (llama.cpp's RPC backend is not in its builds). A unified-memory node (a DGX Spark,
a Mac, a Ryzen AI Max) is a whole machine, so a cluster of several has no engine for it (`engine_gap`); discrete
GPUs can share one host."""


def engine_gap(build: Build, hardware: Hardware, engine: str, chosen: bool, nodes: int = 1) -> str | None:
    """Why no engine is known to serve `build` on `nodes` of `hardware` when costed on `engine` (`chosen`:
    the --engine setting picked it), or None when `engine` runs there."""
    if runs_on(hardware, engine):
        if nodes > 1 and engine in SINGLE_HOST_ENGINES and hardware.unified_memory:
            return (f"{engine} serves a model from one machine only, and each {hardware.name} is a machine of its "
                    "own; on 1 node it runs")
        return None
    which = f"the engine setting, {engine}," if chosen else f"its engines ({', '.join(build.engines or (ENGINE,))})"
    return f"{which} {'is' if chosen else 'are'} not known to run on {hardware.name}; {engines_here(hardware)}"


def engines_here(hardware: Hardware) -> str:
    """"engines known here: llama.cpp, ollama", or that the catalog names none for this hardware."""
    if hardware.serving is None:
        return "the catalog names no engine for it"
    return f"engines known here: {', '.join(hardware.serving.engines)}"


DRAFTER_KINDS = frozenset({"spec-decode-cache-miss"})
"""Caveat kinds a drafter brings: a recipe run without its drafter (`drafter_off`) does not have them."""


def _caveats(index: CatalogIndex, facts: BuildFacts, recipe: Recipe | None, engine: str,
             drafter_off: bool = False) -> tuple[Caveat, ...]:
    """The caveats of the build and the recipe that concern a plan on `engine` (`caveats.on_engine`)."""
    caveats = index.caveats_of(facts, recipe, DRAFTER_KINDS if drafter_off else frozenset())
    return on_engine(caveats, engine) if caveats else caveats
