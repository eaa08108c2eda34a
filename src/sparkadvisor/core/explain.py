"""The arithmetic of a plan, step by step, in sentences generated from its numbers.

Each step says whether its figure is stated by a source, derived from stated figures,
measured by someone, estimated by the speed model, assumed, or unknown. The TUI's
detail pane, `sparkadvisor show` and the Markdown report all print these steps.
"""

from __future__ import annotations

from typing import Literal

from sparkadvisor.core.caveats import badge, by_severity
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import BLOCK_ALIGNMENT, FP8_DS_MLA_BYTES, FP8_DS_MLA_ROPE, VLLM_BATCHED_TOKENS, KvShape
from sparkadvisor.core.memory import INDEXER_BUFFER_BYTES_PER_TOKEN, PROFILE_PEAK_GIB, Reserve
from sparkadvisor.core.plan import Plan, default_engine
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, DecodeRead, Measurement, Severity
from sparkadvisor.core.speed.decode import counted_gb_per_pass, drafter_key, weight_class
from sparkadvisor.core.speed.prefill import (
    GGML_ENGINES,
    indexer_keys_per_token,
    prefill_chunk,
    prefill_cost,
    prefill_precision,
    prefill_range,
)
from sparkadvisor.core.stages.decode import DEFAULT_DECODE_CONTEXT, decode_at
from sparkadvisor.core.stages.first_token import measured_attended
from sparkadvisor.core.targets import context_needed, usable_context
from sparkadvisor.core.units import GiB, fmt_seconds, fmt_size, fmt_tokens, plural

Basis = Literal["stated", "derived", "measured", "estimated", "assumed", "unknown"]


@record(kw_only=False)
class Step:
    """One line of the arithmetic."""

    key: str
    """Stable id: cluster, weights, parallelism, budget, kv, pool, ceiling, expected, ..."""
    title: str
    """A few words."""
    text: str
    """The sentence, with the numbers and their units."""
    basis: Basis
    """How the figure is known."""
    severity: Severity | None = None
    """For caveat steps: critical, warning or info (views colour it)."""


def explain(plan: Plan) -> tuple[Step, ...]:
    """Every step of the plan's arithmetic, in reading order."""
    steps = [_cluster(plan), _weights(plan), _parallelism(plan), _budget(plan), _kv(plan), _pool(plan),
             _context(plan)]
    steps += _decode(plan) + _first_token(plan)
    steps += [_turn(plan), _targets(plan), _capability(plan)]
    steps += [Step("caveat", f"caveat: {badge(c)}", f"{c.explanation} ({c.severity})", "stated", c.severity)
              for c in by_severity(plan.caveats)]
    if plan.no_engine is not None:
        steps.insert(1, _no_engine(plan))
    if not plan.runs:
        steps = [_as_if_it_fit(s, plan) if s.key in _SPEED_STEPS else s for s in steps]
    return tuple(s for s in steps if s is not None)


_SPEED_STEPS = frozenset({"ceiling", "expected", "ttft", "turn"})
"""The figures a build has only once it loads: the table shows - for them where it does not fit."""


def _no_engine(plan: Plan) -> Step:
    serving = plan.cluster.hardware.serving
    note = f" {serving.note}" if serving is not None and serving.note else ""
    return Step("engine", "engine", f"No engine is known to serve it here: {plan.no_engine}.{note}", "stated")


def _as_if_it_fit(step: Step, plan: Plan) -> Step:
    if plan.no_engine is not None:
        return Step(step.key, step.title, f"Not here: no engine serves it on {plan.cluster.hardware.name}. If one "
                    f"did: {step.text}", step.basis, step.severity)
    nodes = plural(plan.cluster.nodes, "node")
    return Step(step.key, step.title, f"Not here: it does not fit on {nodes}. If it did: {step.text}", step.basis,
                step.severity)


def _context(plan: Plan) -> Step:
    usable, needed, w = usable_context(plan.model, plan.recipe), context_needed(plan.workload), plan.workload
    check = next(t for t in plan.targets if t.key == "context")
    verdict = {"met": "enough", "missed": "too short: the workload's prompts would be refused",
               "unknown": "unknown, so the context target is not met"}[check.status]
    text = (f"Usable context {usable.describe(plan.model)} against {needed:,} tokens needed "
            f"({w.context_tokens:,} prompt + {w.output_tokens:,} answer): {verdict}.")
    return Step("context", "context window", text, "unknown" if usable.tokens is None else "stated")


def _targets(plan: Plan) -> Step:
    w = plan.workload
    marks = {"met": "met", "missed": "MISSED", "unknown": "unknown"}
    parts = "; ".join(f"{t.text} ({marks[t.status]})" for t in plan.targets)
    if plan.meets_targets:
        head = f"Meets the {w.kind} targets"
    elif plan.target_misses:
        head = f"Misses the {w.kind} targets"
    else:
        head = f"The {w.kind} targets are unknown (an unknown is not a pass)"
    return Step("targets", "targets", f"{head}: {parts}.", "unknown" if plan.unknowns else "derived")


def _capability(plan: Plan) -> Step:
    from sparkadvisor.core.ranking import CAPABILITY_STEP, capability_for

    cap, kind = capability_for(plan.model, plan.workload), plan.workload.kind
    if cap is None:
        note = plan.model.capability_none_published
        text = (f"Unknown: no score beside a frontier reference ({note})" if note
                else "Unknown: no sourced score in the catalog")
        return Step("capability", "capability", text + f"; it ranks after the {kind} builds with a score.",
                    "unknown")
    harness = f" in {cap.harness}" if cap.harness else ""
    if cap.reference_source is None:
        against = f"{cap.reference_model}'s {cap.reference_score:g} on the same table ({cap.reported_by}, {cap.date})"
    else:
        ref = cap.reference_source
        refs = ref if isinstance(ref, str) else ", ".join(ref)
        against = (f"{cap.reference_model}'s {cap.reference_score:g} from ANOTHER table ({refs}), as the model's "
                   f"own table ({cap.reported_by}, {cap.date}) has no frontier column; settings may differ")
    return Step("capability", "capability", f"{cap.score:g} on {cap.benchmark}{harness} against {against}: "
                f"{cap.score / cap.reference_score:.0%}, compared in {CAPABILITY_STEP:.0%} steps.", "stated")


def _cluster(plan: Plan) -> Step:
    hw, n = plan.cluster.hardware, plan.cluster.nodes
    total = f"{n} x {hw.usable_memory_gib:g} GiB = {plan.cluster.usable_gib:.1f} GiB usable" if n > 1 \
        else f"{hw.usable_memory_gib:g} GiB usable"
    return Step("cluster", "cluster", f"{plan.cluster.label}: {total}, {hw.memory_bandwidth_gb_s:g} GB/s "
                f"of rated memory bandwidth per node.", "stated")


def _weights(plan: Plan) -> Step:
    w, build = plan.weights, plan.build
    other = "GiB" if w.unit == "GB" else "GB"
    parts = [f"{build.repo} ({FORMATS[build.format].label}) weighs {fmt_size(w.total_bytes, w.unit)} "
             f"({fmt_size(w.total_bytes, other)})"]
    if w.stated:
        parts.append("as its source states")
        basis: Basis = "stated"
    else:
        parts.append(f"derived from {_params_text(plan)} at {w.stored_bits:g} stored bits per weight")
        basis = "derived"
    if plan.build.size and plan.build.size.note:
        parts.append(f"({plan.build.size.note})")
    text = " ".join(parts) + "."
    if plan.streams_tables:
        text += (f" The recipe keeps the {fmt_size(w.table_bytes, 'GiB')} of per-token tables on disk and reads "
                 f"rows on demand: {fmt_size(w.resident_bytes(True), 'GiB')} stay resident.")
    return Step("weights", "weights", text, basis)


def _params_text(plan: Plan) -> str:
    p = plan.model.params
    text = f"{p.total_b:g}B parameters"
    for table in plan.model.tables:
        text += f" + a {table.params_b:g}B {table.kind.upper()} table"
    return text


def _parallelism(plan: Plan) -> Step:
    split = plan.tp * plan.pp
    per_node = fmt_size(plan.weights_per_node, "GiB")
    if plan.budget.weights_loaded:
        per_node = fmt_size(plan.weights.resident_bytes(plan.streams_tables) / split, "GiB") + " as stored"
    if split == 1:
        text = f"One node holds all of it: {per_node}."
    else:
        text = f"TP={plan.tp}, PP={plan.pp}, {plan.parallel_reason}: each node holds 1/{split}, {per_node}."
    if plan.budget.weights_loaded:
        text += (f" The recipe logs {plan.budget.weights_bytes / GiB:.2f} GiB per rank as loaded (measured); "
                 "the budget uses that.")
    return Step("parallelism", "per node", text, "derived")


def _on_ggml(plan: Plan) -> bool:
    """The plan runs on llama.cpp or Ollama, whose memory is not vLLM's: no gpu-memory-utilization."""
    return plan.constants.engine in GGML_ENGINES


def _ggml_budget_text(plan: Plan) -> str:
    """The budget in llama.cpp's words: what it allocates, and that vLLM's rules size it here."""
    b, engine = plan.budget, plan.constants.engine
    text = (f"{engine} allocates the weights, the KV cache for its context (--ctx-size) and its compute buffers "
            f"in the node's {b.usable_bytes / GiB:g} GiB. Sized here by vLLM's rules as a stand-in ({engine}'s "
            f"compute buffers are not modelled): {b.engine_bytes / GiB:.1f} GiB for the engine, ")
    if b.left_bytes < 0:
        return text + f"which the {b.weights_bytes / GiB:.1f} GiB of weights exceed by {-b.left_bytes / GiB:.1f} GiB."
    return text + (f"{b.weights_bytes / GiB:.1f} GiB of weights, {b.reserve_bytes / GiB:.1f} GiB kept for "
                   f"activations, so {b.kv_bytes / GiB:.1f} GiB goes to the KV cache.")


def _budget(plan: Plan) -> Step:
    b = plan.budget
    if _on_ggml(plan):
        short = " " + _shortfall(plan) if plan.short_bytes > 0 else ""
        return Step("budget", "fit", f"{_ggml_budget_text(plan)}{short} {_verdict(plan)}", "derived")
    usable = b.usable_bytes / GiB
    text = (f"At gpu-memory-utilization {b.utilization:g}, vLLM takes {b.utilization:g} x {usable:g} = "
            f"{b.engine_bytes / GiB:.1f} GiB per node; ")
    if b.left_bytes < 0:
        text += f"the {b.weights_bytes / GiB:.1f} GiB of weights exceed that by {-b.left_bytes / GiB:.1f} GiB."
    else:
        text += (f"after {b.weights_bytes / GiB:.1f} GiB of weights, {b.left_bytes / GiB:.1f} GiB is left for the "
                 "KV cache and activations.")
        if b.kv_pinned_bytes is not None:
            text += (f" The recipe pins the KV cache at {b.kv_pinned_bytes / GiB:g} GiB per node, so vLLM skips its "
                     "profile run; activations come out of what is left.")
        elif b.kv_bytes > 0:
            text += (f" vLLM keeps {b.reserve_bytes / GiB:.1f} GiB beside them, its profile run's peak and its CUDA "
                     "graph estimate (gpu_worker.determine_available_memory; the estimate on by default since "
                     f"v0.21) and what its rules size ({_reserve_text(plan)}), so {b.kv_bytes / GiB:.1f} GiB goes "
                     f"to the KV cache.{_logged_note(plan)}")
    if plan.short_bytes > 0:
        text += " " + _shortfall(plan)
    return Step("budget", "fit", f"{text} {_verdict(plan)}", "derived")


def _reserve_text(plan: Plan) -> str:
    """The reserve's parts, each with its basis: the recipe's own logged boot, the one recipe a general
    figure was measured on (assumed here), or vLLM's sizing rule."""
    r, inputs = plan.budget.reserve, plan.pool.inputs
    batched = inputs.batched_tokens if inputs is not None else VLLM_BATCHED_TOKENS
    parts = [_profile_text(r, batched), *_graph_texts(r)]
    if r.draft_weights_bytes:
        parts.append(f"{r.draft_weights_bytes / GiB:.2f} GiB drafter weights: its stated size over the TP ranks")
    if r.indexer_bytes:
        tokens = r.indexer_bytes / INDEXER_BUFFER_BYTES_PER_TOKEN
        parts.append(f"{r.indexer_bytes / GiB:.2f} GiB indexer prefill buffer: 40 x {tokens:,.0f} tokens of "
                     "max-model-len x 132 B (vLLM's get_max_prefill_buffer_size; DeepSeek-V4.1-Flash's recipe "
                     "confirms it)")
    return "; ".join(parts)


def _profile_text(r: Reserve, batched: int) -> str:
    """The profile run: activations at max-num-batched-tokens and non-torch memory, and whose log it is."""
    text = f"{r.profile_bytes / GiB:.2f} GiB profile run, activations at max-num-batched-tokens and non-torch memory: "
    logged = r.logged
    if logged is None:
        drafter = ", with its drafter's share" if r.profile_bytes > PROFILE_PEAK_GIB * GiB + 1 else ""
        return text + f"GLM-5.3-Flash TP2's log at 8,192 batched tokens, less its indexer buffer{drafter}, assumed here"
    text += "this recipe's own logged boot" if logged.boots == 1 else \
        f"the mean of {logged.boots} of this recipe's own logged boots"
    if logged.batched_tokens and logged.batched_tokens != batched:
        more = "more" if batched > logged.batched_tokens else "less"
        text += (f", at {logged.batched_tokens:,} batched tokens where the recipe runs {batched:,} (which needs "
                 f"{more}, by an amount no log gives)")
    return text


def _graph_texts(r: Reserve) -> list[str]:
    """CUDA graphs: vLLM captures them once while profiling and keeps the estimate out of the KV cache."""
    if not r.graph_bytes:
        return ["no CUDA graphs (eager)"]
    if r.graphs_logged:
        boots = r.logged.boots if r.logged is not None else 1
        own = "this model's own log" if boots == 1 else f"the same {boots} boots"
        return [f"{r.graph_bytes / GiB:.2f} GiB CUDA graphs of target and drafter: {own}"]
    texts = [f"{r.graph_bytes / GiB:.2f} GiB CUDA graphs: DeepSeek-V4.1-Flash TP4's log (FULL_AND_PIECEWISE), "
             "assumed here"]
    if r.draft_graph_bytes:
        texts.append(f"{r.draft_graph_bytes / GiB:.2f} GiB drafter graphs: same log, assumed here")
    return texts


def _logged_note(plan: Plan) -> str:
    """Which boot the recipe's own reserve figures come from, and how."""
    logged = plan.budget.reserve.logged
    return f" The recipe's own figures: {logged.note}." if logged is not None and logged.note else ""


def _shortfall(plan: Plan) -> str:
    unit = plan.weights.unit
    split = plan.tp * plan.pp
    whole = fmt_size(plan.weights.total_bytes / split, unit)
    usable = fmt_size(plan.budget.usable_bytes, unit)
    short = fmt_size(plan.short_bytes, unit)
    if split == 1:
        return f"As a whole the build is {short} short: {whole} against {usable} usable."
    return f"Split {split} ways, each share is {whole} against {usable} usable: {short} short per node."


def _verdict(plan: Plan) -> str:
    if plan.fit_by_recipe and plan.recipe is not None:
        return f"The arithmetic says it does not fit, yet the recipe ({plan.recipe.title}) runs it and measured it."
    if plan.fits:
        return "It fits."
    needed = plan.nodes_needed
    most = plan.cluster.hardware.max_nodes
    return f"It does not fit; it needs {plural(needed, 'node')}." if needed else \
        f"It does not fit on up to {plural(most, 'node')}." if most > 1 else "It does not fit on one node."


def _kv(plan: Plan) -> Step:
    if plan.kv is not None and plan.model.attention is not None:
        text = _kv_formula(plan.model.attention, plan)
        return Step("kv", "KV per token", text, "derived")
    if plan.kv_basis == "measured pool" and plan.kv_bytes_per_token:
        return Step("kv", "KV per token", f"the catalog holds no attention facts for this model (unpublished, or a "
                    "layout [models.attention] cannot express, such as cross-layer KV sharing); a recipe's measured "
                    "pool implies "
                    f"{plan.kv_bytes_per_token / 1024:.1f} KiB per token per node (assuming KV splits with TP).",
                    "derived")
    return Step("kv", "KV per token", "KV bytes per token are unknown: no config.json facts and no measured pool.",
                "unknown")


def _kv_formula(a: Attention, plan: Plan) -> str:
    dtype = plan.kv_cache_dtype
    kv = plan.kv
    assert kv is not None
    size = kv.element_bytes
    if a.design == "mla" and a.compressed:
        core = (f"MLA in vLLM's DeepSeek-V4 layout (FP8 whatever --kv-cache-dtype says): {a.kv_lora_rank} FP8 + "
                f"{a.qk_rope_head_dim or 0} x 2 B BF16 RoPE + {(a.kv_lora_rank or 0) // 64} scale bytes + 1 pad = "
                f"{kv.row_bytes:g} B per layer, kept whole on every TP rank")
    elif a.design == "mla" and kv.row_bytes == FP8_DS_MLA_BYTES and a.indexer_head_dim:
        core = ("MLA in vLLM's fp8_ds_mla layout: 656 B per layer (512 FP8 + 16 B of FP32 scales + 64 x 2 B BF16 "
                "RoPE, the page vLLM allocates whatever the latent's width), kept whole on every TP rank")
    elif a.design == "mla":
        core = f"MLA: ({a.kv_lora_rank} + {a.qk_rope_head_dim or 0}) x {size:g} B, kept whole on every TP rank"
        if a.indexer_head_dim and dtype.startswith("fp8") and (a.qk_rope_head_dim or 0) != FP8_DS_MLA_ROPE:
            core += (f" (the plain FP8 latent: vLLM's fp8_ds_mla layout needs a {FP8_DS_MLA_ROPE}-wide RoPE part, "
                     "\"pe_dim must be 64\", and this model has none)")
    elif kv.full_kv_heads_per_rank is not None:
        core = (f"{a.design.upper()}: 2 (K and V) x {kv.full_kv_heads_per_rank} KV heads per rank x "
                f"{a.global_head_dim or a.head_dim} x {size:g} B = {(kv.full_row_bytes or 0) / 1024:g} KiB per layer, "
                "the full-attention layers' own shape")
        if a.global_k_eq_v:
            core += " (attention_k_eq_v makes V from K's projection, but vLLM caches K and V apart, so both count)"
    else:
        core = f"{a.design.upper()}: 2 x {kv.kv_heads_per_rank} KV heads per rank x {a.head_dim} x {size:g} B"
    text = f"{core}, {_kv_layers_text(kv)}"
    if kv.draft_layers:
        text += (f" ({kv.full_layers - kv.draft_layers} + {kv.draft_layers} MTP: vLLM caches the drafter's layers "
                 "beside the target's)")
    if a.indexer_head_dim and kv.indexer_pool > 1:
        text += (f", plus {a.indexer_head_dim}-wide FP8 indexer keys, one {kv.indexer_row_bytes:g} B key per "
                 f"{kv.indexer_pool} tokens ({kv.indexer_row_bytes / kv.indexer_pool:g} B per token per layer: vLLM's "
                 "k-pool indexer cache stores one state per index_kpool tokens)")
    elif a.indexer_head_dim:
        text += f", plus {a.indexer_head_dim}-wide FP8 indexer keys"
    text += f" = {kv.bytes_per_token / 1024:.2f} KiB per token per node"
    if kv.window_tokens and kv.full_kv_heads_per_rank is not None:
        text += (f"; {kv.sliding_layers} sliding layers of 2 x {kv.kv_heads_per_rank} KV heads per rank x "
                 f"{a.head_dim} x {size:g} B = {kv.row_bytes / 1024:g} KiB per layer per token hold at most "
                 f"{kv.window_tokens:,} tokens ({kv.window_bytes_per_token * kv.window_tokens / 2**20:.1f} MiB "
                 "per sequence)")
    elif kv.window_tokens:
        text += (f"; {kv.sliding_layers} sliding layers hold at most {kv.window_tokens:,} tokens "
                 f"({kv.window_bytes_per_token * kv.window_tokens / 2**20:.1f} MiB per sequence)")
    if kv.state_bytes_per_sequence and a.linear is not None:
        recurrent = ("FP32 (vLLM keeps KDA's recurrent state in FP32)" if a.linear.kind == "kda"
                     else "FP32 (--mamba-ssm-cache-dtype)" if plan.pool.inputs and
                     plan.pool.inputs.ssm_cache_dtype in ("float32", "fp32") else "BF16 (the model dtype)")
        text += (f"; {kv.linear_layers} linear-attention layers keep {kv.state_bytes_per_layer / 2**20:.2f} MiB of "
                 f"state each per sequence ({kv.state_bytes_per_sequence / 2**20:.1f} MiB; recurrent state in "
                 f"{recurrent}, convolution state in BF16, {kv.conv_step_bytes / 1024:g} KiB more per speculative "
                 "token: vLLM widens it to conv_kernel - 1 + num_spec steps)")
    return text + f" (KV dtype {dtype})."


def _kv_layers_text(kv: KvShape) -> str:
    """Which layers keep each token: the full-attention layers, and a compressed design's rows (one per
    `ratio` tokens of each compressed layer, with its indexer key where the layer is indexed)."""
    if not kv.compressed:
        return f"on {kv.full_layers} full-attention layers per rank"
    groups = " and ".join(
        f"{layers:g} layers keeping one row per {ratio} tokens" + (" with its indexer key" if indexed else "")
        for layers, ratio, indexed in kv.compressed)
    full = f"{kv.full_layers} full-attention layers and " if kv.full_layers else ""
    return f"on {full}{groups} per rank ({kv.compressed_bytes_per_token:,.0f} B per token from the compressed rows)"


def _pool(plan: Plan) -> Step:
    pool, w, modelled = plan.kv_pool_tokens, plan.workload, plan.pool.modelled_sessions
    measured = plan.kv_pool_measured
    if not plan.fits and measured is None:
        text, basis = (f"None: the weights do not fit on {plural(plan.cluster.nodes, 'node')}, so vLLM has no "
                       "memory left for a KV cache."), "derived"
    elif pool is None:
        text, basis = "The KV pool is unknown.", "unknown"
    else:
        per_token = plan.kv_bytes_per_token or 0
        request = plan.pool.request_bytes
        inputs = plan.pool.inputs
        if request and inputs and inputs.max_model_len and _on_ggml(plan):
            text = (f"{plan.budget.kv_bytes / GiB:.2f} GiB / {request / GiB:.3f} GiB per {inputs.max_model_len:,}-"
                    f"token context = {fmt_tokens(pool)} tokens, by vLLM's per-request rule as a stand-in "
                    f"({plan.constants.engine} allocates its KV cache for --ctx-size tokens, shared by its --parallel "
                    f"slots). At {w.context_tokens:,} tokens per session, "
                    f"{plural(modelled or 0, 'concurrent session')} fit.")
        elif request and inputs and inputs.max_model_len:
            text = (f"{plan.budget.kv_bytes / GiB:.2f} GiB / {request / GiB:.3f} GiB per request x "
                    f"{inputs.max_model_len:,} = {fmt_tokens(pool)} tokens, the figure vLLM logs as \"GPU KV cache "
                    f"size\" (int(max concurrency x max_model_len)). {_request_text(plan)} At {w.context_tokens:,} "
                    f"tokens per session, {plural(modelled or 0, 'concurrent session')} fit (each holding "
                    "its blocks, window and state pages).")
        else:
            text = (f"{plan.budget.kv_bytes / GiB:.1f} GiB / {per_token / 1024:.2f} KiB = {fmt_tokens(pool)} tokens "
                    f"of KV pool; at {w.context_tokens:,} tokens per session, "
                    f"{plural(modelled or 0, 'concurrent session')} fit.")
        basis = "derived"
    if measured is not None:
        text += f" Measured: {_measurement(measured, fmt_tokens)} tokens ({_source(measured)}).{_at_logged(plan)}"
        if pool is not None and plan.fits:
            text += (f" The table shows the measured pool, and the sessions follow it: at the model's cost per "
                     f"session it holds {plural(plan.sessions or 0, 'concurrent session')} of "
                     f"{w.context_tokens:,} tokens.")
    return Step("pool", "KV pool", text, basis)  # type: ignore[arg-type]


def _at_logged(plan: Plan) -> str:
    """The measured pool beside the model's at the KV memory the run logged, which sets the reserve's
    error apart from the per-request cost's."""
    m, request, inputs = plan.kv_pool_measured, plan.pool.request_bytes, plan.pool.inputs
    if m is None or not m.kv_gib or not request or inputs is None or not inputs.max_model_len \
            or plan.kv_basis != "config":
        return ""
    at_logged = m.kv_gib * GiB / request * inputs.max_model_len
    kept = plan.budget.engine_bytes - plan.budget.weights_bytes - m.kv_gib * GiB
    return (f" In the {m.kv_gib:g} GiB of KV per node the run logged, one request's {request / GiB:.3f} GiB give "
            f"{fmt_tokens(at_logged)} tokens ({(at_logged - m.value) / m.value:+.0%}): the rest of the gap is in "
            f"what vLLM keeps beside the KV, {kept / GiB:.1f} GiB there against {plan.budget.reserve_bytes / GiB:.1f} "
            "GiB here.")


def _request_text(plan: Plan) -> str:
    """What vLLM reserves for one request of max_model_len on one rank, part by part, with the origin
    of each engine setting (vLLM's kv_cache_interface.py rules)."""
    kv, inputs = plan.kv, plan.pool.inputs
    assert kv is not None and inputs is not None and inputs.max_model_len
    length = inputs.max_model_len
    block = kv.block_tokens(inputs.block_tokens, inputs.speculative_tokens)
    blocks = -(-length // block)
    rows = " and ".join(n for n, has in (("full-attention", kv.full_layer_share), ("compressed", kv.compressed),
                                          ("indexer", kv.indexer_row_bytes)) if has) or "full-attention"
    padded = " (layer types padded to whole KV-cache groups)" if kv.padded_bytes_per_token > kv.bytes_per_token else ""
    parts = [f"{rows} rows {kv.padded_bytes_per_token / 1024:.2f} KiB{padded} x {blocks:,} "
             f"blocks of {block:,} tokens = {kv.padded_bytes_per_token * blocks * block / GiB:.3f} GiB"]
    if kv.window_tokens:
        kept = min(kv.window_tokens - 1 + inputs.batched_tokens, length)
        window_blocks = -(-kept // block) + 1
        parts.append(f"sliding layers {kv.window_bytes_per_token * kv.sliding_pad / 1024:.2f} KiB x "
                     f"{window_blocks:,} blocks (window {kv.window_tokens:,} - 1 + {inputs.batched_tokens:,} "
                     f"batched tokens, plus one) = "
                     f"{kv.window_bytes_per_token * kv.sliding_pad * window_blocks * block / GiB:.3f} GiB")
    spec = inputs.speculative_tokens
    if kv.linear_slots:
        parts.append(_states_text(plan, block))
    if kv.tail_groups:
        parts.append(f"k-pool tail {kv.tail_groups} group x {kv.group_size} slots x "
                     f"{kv.slot_bytes(inputs.block_tokens, spec) / 2**20:.2f} MiB (one block id per request, "
                     f"vLLM 0.1.dev20051's KpoolTailSpec) = {kv.tail_bytes(inputs.block_tokens, spec) / GiB:.3f} GiB")
    origins = inputs.origins
    step = max(inputs.block_tokens or 0, BLOCK_ALIGNMENT)
    settings = (f"max-model-len {length:,} ({origins[0]}), block {block:,} tokens ({origins[1]}"
                + (f", grown in steps of {step:,} so one page holds a layer's state" if block != (
                    inputs.block_tokens or block) or (kv.linear_slots and not inputs.block_tokens) else "") + ")")
    if kv.window_tokens:
        settings += f", max-num-batched-tokens {inputs.batched_tokens:,} ({origins[2]})"
    if kv.linear_slots:
        settings += f", {spec} speculative tokens ({origins[3]}), {origins[5]}"
    return f"One request: {'; '.join(parts)}; with {settings}.{_draft_kv_text(plan)}"


def _states_text(plan: Plan, block: int) -> str:
    """The linear layers' state pages of one request: slots x (page + the indexer pages every block id
    reserves) x pages per request."""
    kv, inputs = plan.kv, plan.pool.inputs
    assert kv is not None and inputs is not None
    spec, pp = inputs.speculative_tokens, plan.fit.pp
    page = kv.page_bytes(inputs.block_tokens, spec)
    # Under pipeline parallelism the pool is sized by the most-loaded stage: its share of the whole
    # model's slots (layer types taken as spread evenly), said as a fraction.
    whole = kv.linear_slots * pp / kv.stage_over_average
    slots = f"{whole:g} layer slots (layers padded to whole KV-cache groups)" + (
        f", {kv.linear_slots:.2f} on the most-loaded of {pp} pipeline stages" if pp > 1 else "")
    keys = kv.slot_indexer_bytes_per_token * block
    beside = (f" + {keys / 2**20:.2f} MiB of indexer-key pages each block id also reserves"
              if keys else "")
    pages = kv.state_pages(spec, inputs.prefix_caching)
    why = (f"{'2' if inputs.prefix_caching else '1'} + {spec} speculative tokens"
           + (": prefix caching keeps one more, vLLM's \"align\" mode" if inputs.prefix_caching else ""))
    total = kv.linear_slots * kv.slot_bytes(inputs.block_tokens, spec) * pages
    return (f"linear-attention states {slots} x ({page / 2**20:.2f} MiB pages{beside}) x {pages} pages ({why}) = "
            f"{total / GiB:.3f} GiB")


def _draft_kv_text(plan: Plan) -> str:
    """A separate draft model's own KV cache, which the pool does not count."""
    spec = plan.recipe.speculative if plan.recipe else None
    if spec is None or spec.method == "mtp" or not spec.draft_size_gb:
        return ""  # MTP layers are counted with the full-attention layers
    text = " Not counted: the draft model's own KV cache (its layers and window are not in the catalog)"
    if spec.method == "dflash":
        text += ("; tonyd2wild's DFlash2 port gives its 5 sliding-window layers a group that shares the MLA "
                 "tensors and takes about 6 block ids per request, which would make the pool about 6% smaller")
    return text + "."


def _measurement(m: Measurement, fmt: object) -> str:
    render = fmt if callable(fmt) else str
    if m.low is not None and m.high is not None and render(m.low) != render(m.high):
        return f"{render(m.low)}-{render(m.high)}"
    text = render(m.value)
    return f"{text} ± {render(m.spread)}" if m.spread else str(text)


def _source(m: Measurement) -> str:
    return m.note or "recipe measurement"


def _decode(plan: Plan) -> list[Step]:
    d, p = plan.decode, plan.model.params
    if d is None:
        return [Step("ceiling", "decode ceiling", "Active parameters are unpublished: the decode ceiling is unknown.",
                     "unknown")]
    bits = d.ceiling_bits
    per_token = p.active_b * bits / 8 if p.active_b else 0
    hw = plan.cluster.hardware
    ceiling = Step("ceiling", "decode ceiling",
                   f"{p.active_b:g}B active x {bits:.3g} bits = {per_token:.1f} GB per token; / {plan.tp} = "
                   f"{per_token / plan.tp:.2f} GB per node; {hw.memory_bandwidth_gb_s:g} GB/s / "
                   f"{per_token / plan.tp:.2f} GB = {d.ceiling_tok_s:.0f} tok/s ceiling (bandwidth only)."
                   + _counted_text(plan), "derived")
    steps = [ceiling, Step("expected", "expected decode", _expected_text(plan), "estimated"),
             Step("constants", "whose constants", _constants_text(plan), "estimated")]
    if plan.tp > 1:
        steps.append(Step("nodes", "what the nodes buy", _nodes_text(plan), "estimated"))
    if plan.decode_measured is not None:
        steps.append(Step("measured", "measured decode", _measured_text(plan, plan.decode_measured), "measured"))
    return steps


def _counted_text(plan: Plan) -> str:
    """The build's read counted tensor by tensor, when someone counted it: the bound a step without
    speculation cannot pass, beside what the expected step counts."""
    d, read = plan.decode, plan.build.decode_read
    if d is None or d.read_bound_tok_s is None or read is None:
        return ""
    per_rank = read.per_rank_gb(plan.tp)
    return (f" Counted tensor by tensor ({read.note}), a token reads {read.split_gb:.2f} GB split {plan.tp} ways "
            f"+ {read.replicated_gb:.2f} GB every rank keeps whole = {per_rank:.2f} GB per node: "
            f"{plan.cluster.hardware.memory_bandwidth_gb_s:g} GB/s / {per_rank:.2f} GB = {d.read_bound_tok_s:.0f} "
            f"tok/s without speculative decoding (active x average stored bits would say {plan.speed.active_gb_per_node:.2f} GB per "
            f"node). The expected step below reads these counted bytes" + _union_text(plan, read) + ".")


def _union_text(plan: Plan, read: DecodeRead) -> str:
    """How a pass of several tokens grows the counted routed experts to the union they route to."""
    d, per_token = plan.decode, plan.model.params.experts_per_token
    if d is None or not read.routed_gb or not per_token or d.experts_read <= per_token:
        return ""
    return (f"; a pass of several tokens reads the union of the experts they route to, {d.experts_read:.1f} of "
            f"{plan.model.params.routed_experts} per layer, so the routed {read.routed_gb:.2f} GB grows "
            f"{d.experts_read / per_token:.1f}x")


def _speculates(plan: Plan) -> bool:
    return bool(plan.recipe and plan.recipe.speculative)


def _speculation_text(plan: Plan) -> str:
    """The speculative configuration a step assumes: the recipe's method and tokens, whose acceptance, and
    whether the recipe's source states it or it is assumed from the checkpoint's default."""
    spec = plan.recipe.speculative if plan.recipe else None
    if spec is None:
        return ""
    c = plan.constants
    if spec.acceptance is not None:
        rate, whose = spec.acceptance, "the recipe's published acceptance"
    else:
        key = drafter_key(plan.recipe.build, spec.method, spec.draft_repo) if plan.recipe else ""
        rate = c.acceptance_for(key)
        whose = c.basis.get(f"acceptance:{key}" if key in c.drafter_acceptance else "acceptance", "assumed")
    text = f"{spec.method} with {spec.tokens_per_pass} tokens per pass at {rate:.0%} accepted ({whose})"
    if spec.assumed:
        text += f"; assumed, not stated by the recipe's source: {spec.assumed}"
    return text


def _constants_text(plan: Plan) -> str:
    """Which engine's constants the estimates used, in which mode, and how many measurements fitted them."""
    c = plan.constants
    mode = _mode(plan, "eager (no CUDA graphs)")
    origin = _engine_origin(plan)
    fitted = (f"fixed costs {c.basis.get('fixed_ms')}; the rates shared by all engines "
              f"{c.basis.get('kv_ms_per_gb')} on this hardware"
              if c.decode_measurements or "fitted" in c.basis.get("fixed_ms", "") else
              f"{c.basis.get('engine') or c.basis.get('fixed_ms', 'assumed')}")
    return (f"{c.engine} ({origin}), {mode}, on {plan.cluster.hardware.name}: {fitted}; prefill "
            f"{c.basis.get('prefill_ms_per_gflop', 'assumed')}. `sparkadvisor fidelity` shows how these constants "
            "predict each measurement left out of the fit.")


def _mode(plan: Plan, eager: str) -> str:
    """The execution mode the fixed costs are taken for: `eager` or CUDA graphs, or, on hardware
    without CUDA, the CUDA-graph costs standing in for its own."""
    if not plan.cluster.hardware.cuda:
        return "no CUDA here: CUDA-graph costs stand in"
    return eager if plan.speed.eager else "CUDA graphs"


def _engine_origin(plan: Plan) -> str:
    """Why the estimates use this engine: the recipe's, the build's default, or the --engine setting."""
    if plan.recipe:
        return "the recipe's engine"
    if plan.constants.engine == default_engine(plan.build, plan.cluster.hardware):
        return "the build's default engine: no recipe for this cluster; --engine picks another"
    return "the --engine setting: no recipe for this cluster"


def _measured_text(plan: Plan, m: Measurement) -> str:
    """The measurement beside the model's prediction at the measurement's own context, streams and mode."""
    d = plan.decode
    assert d is not None
    own = decode_at(plan.model, plan.build.format, plan.weights, plan.recipe, plan.tp, plan.pp, plan.pool,
                    plan.cluster.hardware, plan.constants, m, plan.build.decode_read) or d
    per = m.streams if m.metric == "decode_tok_s" else 1
    expected, low, high = own.expected_tok_s / per, own.low_tok_s / per, own.high_tok_s / per
    where = "inside" if low <= m.value <= high else "OUTSIDE"
    eager = m.enforce_eager if m.enforce_eager is not None else bool(plan.recipe and plan.recipe.enforce_eager)
    conditions = (f"{m.context_tokens or DEFAULT_DECODE_CONTEXT:,} tokens"
                  f"{'' if m.context_tokens else ' (assumed: not stated)'}, {m.streams} stream"
                  f"{'s' if m.streams > 1 else ''}, {'eager' if eager else 'CUDA graphs'}")
    head = f"Measured {_measurement(m, lambda v: f'{v:g}')} tok/s ({_source(m)}) at its own conditions ({conditions}); "
    if d.tables:
        return (head + f"the model's {expected:.0f} there leaves out the {d.tables} table every token reads (its bytes "
                f"per token are unpublished), so it is a bound, not a prediction: unknown, and `sparkadvisor "
                f"fidelity` lists this row apart, never as a pass; {plan.efficiency:.0%} of the ceiling.")
    text = (head + f"the model predicts {expected:.0f} there, range {low:.0f}-{high:.0f}: {where} the "
            f"predicted range; {plan.efficiency:.0%} of the ceiling.")
    bound = d.read_bound_tok_s
    above = bound is not None and m.streams == 1 and m.value > bound
    spec = plan.recipe.speculative if plan.recipe else None
    if above and spec is None:
        text += (f" It is above the {bound:.0f} tok/s a step without speculation can reach reading the counted "
                 f"bytes at rated bandwidth, so the measured stack decodes speculatively; the recipe states no "
                 f"speculative configuration, so the model predicts it without one.")
    elif spec is not None and spec.assumed:
        reach = (f" It is above the {bound:.0f} tok/s a step without speculation can reach reading the counted "
                 f"bytes at rated bandwidth, so the measured stack decodes speculatively." if above else "")
        text += (f"{reach} The recipe's source states no speculative configuration: the model assumes "
                 f"{spec.method} with {spec.tokens_per_pass} tokens ({spec.assumed}).")
    return text


def _expected_text(plan: Plan) -> str:
    d, c = plan.decode, plan.constants
    assert d is not None
    eager = plan.speed.eager
    mode = _mode(plan, "eager")
    layers = plan.model.attention.layers if plan.model.attention else 0
    per_layer = c.layer_ms + (c.eager_ms_per_layer if eager else 0.0)
    fixed_note = (f"{mode}: {c.fixed_ms:.1f} ms + {layers} layers x {per_layer:.2f} ms, {c.engine} constants "
                  f"{c.basis.get('fixed_ms')}" + (f"; eager {c.basis.get('eager_ms_per_layer')}" if eager else ""))
    penalty = c.weight_penalty.get(weight_class(plan.build.format), 0.0)
    read = plan.build.decode_read if d.read_bound_tok_s is not None else None
    what = (f"{counted_gb_per_pass(read, plan.tp, d.experts_read, plan.model.params.experts_per_token):.2f} GB "
            "counted per node" if read is not None else f"{plan.weights.stored_bits:.2f} stored bits")
    parts = [("weights", d.weights_ms, f"{what} at {c.bandwidth_fraction:.0%} "
              f"of rated bandwidth, {c.basis.get('bandwidth_fraction')}"
              + (f", +{penalty:.0%} dequantization ({c.basis.get('weight_penalty')})" if penalty else "")),
             ("KV", d.kv_ms, f"what attention reads at {plan.workload.context_tokens:,} tokens"
              f"{' x ' + str(d.streams) + ' streams' if d.streams > 1 else ''}, {c.basis.get('kv_ms_per_gb')}"),
             ("draft", d.draft_ms, ""),
             ("compute", d.compute_ms,
              f"the GEMMs of the tokens one pass verifies, {c.basis.get('compute_ms_per_gflop')}"),
             ("fixed", d.fixed_ms, fixed_note),
             ("speculation", d.spec_ms, c.basis.get("spec_ms_per_step", "")),
             ("all-reduce", d.allreduce_ms, _allreduce_note(plan))]
    shown = [(name, ms, note) for name, ms, note in parts
             if ms > 0 or name in ("weights", "fixed") or (name == "speculation" and d.tokens_per_pass > 1)]
    terms = " + ".join(f"{name} {ms:.1f} ms" + (f" ({note})" if note else "") for name, ms, note in shown)
    text = f"One step: {terms} = {d.step_ms:.1f} ms"
    if d.tables:
        text += f", plus the per-token {d.tables} table, unknown (its bytes per token are unpublished)"
    if d.tokens_per_pass > 1:
        text += f"; it yields {d.tokens_per_pass:.2f} tokens (speculative decoding: {_speculation_text(plan)})"
    shares = ", ".join(f"{name} {ms / d.step_ms:.0%}" for name, ms, _ in shown if ms / d.step_ms >= 0.005)
    if d.streams > 1:
        return (text + f": {d.expected_tok_s:.0f} tok/s expected across {d.streams} streams, "
                f"{d.per_stream_tok_s:.1f} each (range {d.low_tok_s:.0f}-{d.high_tok_s:.0f} in all: "
                f"{c.basis.get('aggregate_band')}). Where the step goes: {shares}.")
    return (text + f": {d.expected_tok_s:.0f} tok/s expected, {d.expected_tok_s / d.ceiling_tok_s:.0%} of the "
            f"ceiling (range {d.low_tok_s:.0f}-{d.high_tok_s:.0f}: {c.basis.get('decode_band')}). "
            f"Where the step goes: {shares}.")


def _allreduce_note(plan: Plan) -> str:
    layers = plan.model.attention.layers if plan.model.attention else None
    if plan.tp == 1:
        return "no tensor parallelism" if plan.pp > 1 else "one node"
    if layers is None:
        return "layer count unknown: not counted"
    return f"2 x {layers} layers across {plan.tp} nodes, {plan.constants.basis.get('allreduce_us')}"


def _nodes_text(plan: Plan) -> str:
    d = plan.decode
    assert d is not None
    one_node_ms = d.weights_ms * plan.tp
    return (f"TP={plan.tp} cuts the weights each node reads per step from {one_node_ms:.1f} ms (one node) to "
            f"{d.weights_ms:.1f} ms, and costs {d.allreduce_ms:.1f} ms of all-reduces on the link; the fixed and "
            f"speculation costs ({d.fixed_ms + d.spec_ms:.1f} ms) do not shrink with more nodes.")


def _prefill_terms(plan: Plan, precision: str, tflops: float) -> str:
    """Where one prompt token's time goes, each term with its physical quantity, rate and basis."""
    c, p = plan.constants, plan.first.prefill_inputs
    cost = prefill_cost(p, c) if p is not None else None
    if p is None or cost is None:
        return "no rate for its tensor path"
    experts = f", experts at {c.expert_prefill_factor:g}x the cost" if p.expert_params else ""
    per_node = " per node" if p.nodes > 1 else ""
    terms = [f"GEMM {cost.gemm_ms:.3f} ms ({cost.gemm_gflop:.1f} GFLOP{per_node}{experts}, at {tflops:.0f} "
             f"TFLOPS on the {precision} tensor path {c.engine} takes for {plan.build.format}: "
             f"{c.basis.get(f'prefill:{precision}') or c.basis.get('prefill_ms_per_gflop')})"]
    if cost.attention_gflop:
        rate = c.prefill_attention_ms_per_gflop
        terms.append(f"attention FLOPs {cost.attention_ms:.3f} ms ({cost.attention_gflop:.2f} GFLOP attending to "
                     f"~{p.attended_tokens:,.0f} tokens, at {1 / rate if rate else 0:.0f} TFLOPS: "
                     f"{c.basis.get('prefill_attention', 'assumed')})")
    if cost.indexer_gflop:
        a = p.attention
        assert a is not None
        pool = f" (one key per {a.indexer_pool} tokens)" if a.indexer_pool > 1 else ""
        terms.append(f"indexer scoring {cost.indexer_ms:.3f} ms ({cost.indexer_gflop:.2f} GFLOP per node: "
                     f"{indexer_keys_per_token(a, p.attended_tokens):,.0f} earlier keys{pool} summed over its "
                     f"layers x {a.indexer_heads} heads x {a.indexer_head_dim}, FP8 in vLLM and replicated on every "
                     f"rank; at the attention rate, no FP8 speed-up assumed) + its FP32 logits {cost.logits_ms:.3f} ms "
                     f"({cost.logits_gb * 1e3:.1f} MB written and read back, at the read test)")
    elif cost.indexer_unknown:
        terms.append("indexer scoring unknown (index_n_heads is not in the catalog): not counted, so this rate "
                     "is optimistic at depth")
    if p.kv_gb:
        terms.append(f"K/V stream {cost.kv_ms:.3f} ms ({p.kv_gb:.2f} GB attended, read once per tile of queries, "
                     f"at {c.prefill_kv_ms_per_gb:.3f} ms/GB: {c.basis.get('prefill_kv', 'assumed')})")
    if p.chunk_tokens:
        terms.append(f"weights {cost.weights_ms:.3f} ms ({p.weight_gb * p.chunk_tokens:.1f} GB{per_node} read "
                     f"once per {p.chunk_tokens:,}-token chunk, at {c.prefill_weight_ms_per_gb:.2f} ms/GB: "
                     f"{c.basis.get('prefill_weight', 'the read test')})")
    else:
        terms.append("weights per chunk not counted (the engine's prefill chunk is unknown)")
    if cost.link_ms:
        terms.append(f"link {cost.link_ms:.3f} ms (two all-reduces per layer)")
    return f"per prompt token {cost.total_ms:.3f} ms = " + " + ".join(terms)


def _chunks(m: Measurement, plan: Plan) -> str:
    """", chunk X tokens here vs Y there" when the prefill chunks differ."""
    here = plan.first.prefill_inputs.chunk_tokens if plan.first.prefill_inputs else None
    recipe = plan.recipe
    there = prefill_chunk(plan.constants.engine, recipe.extra_args if recipe else (), m.context_tokens,
                          m.chunk_tokens)
    return f", {here:,}-token chunks vs {there:,} measured" if here and there and here != there else ""


def _after(depth: int | None) -> str:
    return f" after {depth:,} cached tokens" if depth else ""


def _first_token(plan: Plan) -> list[Step]:
    w = plan.workload
    if plan.prefix_caching:
        reuse = (f"Prefix caching works: {w.prefix_reuse:.0%} of the {w.context_tokens:,}-token prompt is reused, "
                 f"{plan.uncached_tokens:,} {'token is' if plan.uncached_tokens == 1 else 'tokens are'} computed "
                 "per turn.")
    else:
        reuse = (f"Prefix caching is OFF ({plan.prefix_caching_note}): every turn recomputes all "
                 f"{w.context_tokens:,} tokens.")
    steps = [Step("prefix", "prefix caching", reuse, "stated" if not plan.prefix_caching else "assumed")]
    if plan.prefill_tok_s is None:
        steps.append(Step("ttft", "first token", "Prefill speed is unknown, so the first token is too.", "unknown"))
        return steps
    if plan.prefill_measured is not None:
        m = plan.prefill_measured
        rate = f"measured prefill {_measurement(m, lambda v: f'{v:,.0f}')} tok/s ({_source(m)})"
        basis: Basis = "measured"
        depth = measured_attended(m)
        if plan.prefill_basis == "scaled" and depth is not None and plan.first.prefill_inputs is not None:
            scale, here = plan.prefill_tok_s / m.value, plan.first.prefill_inputs.attended_tokens
            factor = f"{scale:.2f}" if scale >= 0.01 else f"{scale:.2g}"
            rate = (f"{plan.prefill_tok_s:,.0f} tok/s derived: the {rate} holds at its own depth (a "
                    f"{m.context_tokens:,}-token prompt{_after(m.depth_tokens)}, ~{depth:,.0f} attended tokens per "
                    f"prompt token); the model's own rate at this depth (~{here:,.0f}"
                    f" attended{_chunks(m, plan)}) over its rate there scales it x{factor} (depth moves the "
                    f"attention and indexer FLOPs and the K/V read; the chunk moves the weights read per token)")
            basis = "derived"
        elif depth is None:
            rate += ("; its prompt length is unstated, so its depth is unknown and it is used as measured at "
                     "this depth, unscaled")
    else:
        low, high = prefill_range(plan.prefill_tok_s, plan.constants)
        c = plan.constants
        precision = prefill_precision(plan.build.format, c.engine)
        rate_ms = c.prefill_ms_per_gflop.get(precision)
        tflops = 1 / rate_ms if rate_ms else 0.0
        rate = (f"estimated prefill {plan.prefill_tok_s:,.0f} tok/s (range {low:,.0f}-{high:,.0f}: "
                f"{c.basis.get('prefill_band', 'assumed')}; "
                f"{_prefill_terms(plan, precision, tflops)})")
        basis = "estimated"
    text = f"{plan.uncached_tokens:,} token{'' if plan.uncached_tokens == 1 else 's'} / {rate} = {fmt_seconds(plan.uncached_tokens / plan.prefill_tok_s)} " \
           "to the first token."
    if plan.ttft_measured is not None:
        m = plan.ttft_measured
        text = (f"Measured {_measurement(m, fmt_seconds)} to the first token ({_source(m)}) with {m.cached_tokens:,} "
                f"of {w.context_tokens:,} prompt tokens from the prefix cache; the arithmetic gives: {text}")
        basis = "measured"
    cold_s = plan.cold_ttft_s
    if plan.prefix_caching and cold_s is not None:
        text += f" Uncached (a cold {w.context_tokens:,}-token prompt): {fmt_seconds(cold_s)}."
    steps.append(Step("ttft", "first token", text, basis))
    return steps


def _turn(plan: Plan) -> Step:
    if plan.turn_s is None or plan.ttft_s is None or not plan.decode_tok_s:
        return Step("turn", "time per turn", "Time per turn is unknown.", "unknown")
    w = plan.workload
    return Step("turn", "time per turn",
                f"{fmt_seconds(plan.ttft_s)} + {w.output_tokens:,} tokens / {plan.decode_tok_s:.1f} tok/s = "
                f"{fmt_seconds(plan.turn_s)} per turn.", "derived")

