"""The memory steps: cluster, weights, split, budget and KV per token (the pool is `pool`'s)."""

from __future__ import annotations

from sparkadvisor.core.explain.step import Basis, Step
from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.kv import FP8_DS_MLA_BYTES, FP8_DS_MLA_ROPE, VLLM_BATCHED_TOKENS, KvShape, indexed_ratio
from sparkadvisor.core.memory import (
    INDEXER_BUFFER_BYTES_PER_TOKEN,
    PROFILE_BATCHED_TOKENS,
    PROFILE_PEAK_GIB,
    Reserve,
    SizeCheck,
)
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.schema import Attention
from sparkadvisor.core.speed.chunks import GGML_ENGINES
from sparkadvisor.core.stages.recipe import recipe_batched_tokens
from sparkadvisor.core.units import GiB, fmt_size, plural


def cluster_step(plan: Plan) -> Step:
    hw, n = plan.cluster.hardware, plan.cluster.nodes
    total = f"{n} x {hw.usable_memory_gib:g} GiB = {plan.cluster.usable_gib:.1f} GiB usable" if n > 1 \
        else f"{hw.usable_memory_gib:g} GiB usable"
    return Step("cluster", "cluster", f"{plan.cluster.label}: {total}, {hw.memory_bandwidth_gb_s:g} GB/s "
                f"of rated memory bandwidth per node.", "stated")


def weights_step(plan: Plan) -> Step:
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
    text = " ".join(parts) + "." + _size_check_text(w.check, build.format)
    if plan.streams_tables:
        text += (f" The recipe keeps the {fmt_size(w.table_bytes, 'GiB')} of per-token tables on disk and reads "
                 f"rows on demand: {fmt_size(w.resident_bytes(True), 'GiB')} stay resident.")
    return Step("weights", "weights", text, basis)


def _size_check_text(check: SizeCheck | None, weight_format: str) -> str:
    """How far the derived-size rule came out from the stated sizes of the format's other builds."""
    if check is None:
        return ""
    against = (f" For the {plural(check.builds, 'build')} of {FORMATS[weight_format].label} whose size a source "
               "states, the same rule comes out")
    if check.high < -0.05:
        return (f"{against} {-check.high:.0%} to {-check.low:.0%} below the stated sizes (what a quantizer leaves "
                "out, such as the embeddings, the LM head or attention, is stored at 16 bits), so read this size as a "
                "floor.")
    if check.low > 0.05:
        return f"{against} {check.low:.0%} to {check.high:.0%} above the stated sizes, so read this size as a ceiling."
    if check.builds == 1:
        return f"{against} {check.low:+.1%} from its stated size."
    return f"{against} within {check.low:+.0%} to {check.high:+.0%} of the stated sizes."


def _params_text(plan: Plan) -> str:
    p = plan.model.params
    text = f"{p.total_b:g}B parameters"
    for table in plan.model.tables:
        text += f" + a {table.params_b:g}B {table.kind.upper()} table"
    return text


def parallelism_step(plan: Plan) -> Step:
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


def on_ggml(plan: Plan) -> bool:
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


def budget_step(plan: Plan) -> Step:
    b = plan.budget
    if on_ggml(plan):
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
    whose = "this plan" if inputs is not None and inputs.batched_set else "the recipe"
    parts = [_profile_text(r, batched, recipe_batched_tokens(plan.recipe) or VLLM_BATCHED_TOKENS, whose),
             *_graph_texts(r)]
    if r.draft_weights_bytes:
        parts.append(f"{r.draft_weights_bytes / GiB:.2f} GiB drafter weights: its stated size over the TP ranks")
    if r.indexer_bytes:
        tokens, ratio = r.indexer_bytes / INDEXER_BUFFER_BYTES_PER_TOKEN, indexed_ratio(plan.model.attention)
        length = f" {inputs.max_model_len:,}" if inputs is not None and inputs.max_model_len else ""
        keyed = (f"{tokens:,.0f} keys (one per {ratio}-token compressed row of max-model-len{length})" if ratio > 1
                 else f"{tokens:,.0f} tokens of max-model-len")
        parts.append(f"{r.indexer_bytes / GiB:.2f} GiB indexer prefill buffer: 40 x {keyed} x 132 B (vLLM's "
                     "get_max_prefill_buffer_size, reserved once in the profile run)")
    return "; ".join(parts)


def _profile_text(r: Reserve, batched: int, recipe_batched: int, whose: str) -> str:
    """The profile run: activations at max-num-batched-tokens and non-torch memory, and whose log it is, with
    the batched tokens it was logged at where `whose` ("the recipe" or "this plan") runs another `batched`
    (`recipe_batched`: the recipe's own, which its logged boots ran unless they say otherwise)."""
    text = f"{r.profile_bytes / GiB:.2f} GiB profile run, activations at max-num-batched-tokens and non-torch memory: "
    logged = r.logged
    if logged is None:
        drafter = ", with its drafter's share" if r.profile_bytes > PROFILE_PEAK_GIB * GiB + 1 else ""
        text += (f"GLM-5.3-Flash TP2's log at {PROFILE_BATCHED_TOKENS:,} batched tokens, less its indexer "
                 f"buffer{drafter}, assumed here")
        return text + _other_batch(PROFILE_BATCHED_TOKENS, batched, whose)
    text += "this recipe's own logged boot" if logged.boots == 1 else \
        f"the mean of {logged.boots} of this recipe's own logged boots"
    at = logged.batched_tokens or recipe_batched
    return text + (f" at {at:,} batched tokens" if at != batched else "") + _other_batch(at, batched, whose)


def _other_batch(logged: int, batched: int, whose: str) -> str:
    """What a profile logged at `logged` batched tokens leaves out where `whose` runs `batched`."""
    if logged == batched:
        return ""
    more = "more" if batched > logged else "less"
    return f", where {whose} runs {batched:,} (which needs {more}, by an amount no log gives)"


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
    # Beside the engine's share above: what no gpu-memory-utilization would make room for.
    if split == 1:
        return f"Even with all {usable} of the node, the {whole} build is {short} short."
    return f"Even with all {usable} of a node, each of the {split} shares of {whole} is {short} short."


def _verdict(plan: Plan) -> str:
    if plan.fit_by_recipe and plan.recipe is not None:
        return f"The arithmetic says it does not fit, yet the recipe ({plan.recipe.title}) runs it and measured it."
    if plan.fits:
        return "It fits."
    needed = plan.nodes_needed
    most = plan.cluster.hardware.max_nodes
    return f"It does not fit; it needs {plural(needed, 'node')}." if needed else \
        f"It does not fit on up to {plural(most, 'node')}." if most > 1 else "It does not fit on one node."


def kv_step(plan: Plan) -> Step:
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
