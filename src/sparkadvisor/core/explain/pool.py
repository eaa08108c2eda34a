"""The KV pool step: the pool vLLM logs, one request's cost part by part, and the logged pool beside it."""

from __future__ import annotations

from sparkadvisor.core.explain.memory import on_ggml
from sparkadvisor.core.explain.step import Step, measurement_text, source_text
from sparkadvisor.core.kv import BLOCK_ALIGNMENT
from sparkadvisor.core.kvpacked import PackedLayout
from sparkadvisor.core.plan import Plan
from sparkadvisor.core.stages.kv_pool import PoolInputs
from sparkadvisor.core.stages.recipe import measured as measured_as
from sparkadvisor.core.units import GiB, fmt_tokens, plural


def pool_step(plan: Plan) -> Step:
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
        if request and inputs and inputs.max_model_len and on_ggml(plan):
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
        text += (f" Measured: {measurement_text(measured, fmt_tokens)} tokens ({source_text(measured)})."
                 f"{_at_logged(plan)}")
        if pool is not None and plan.fits:
            text += (f" The table shows the measured pool, and the sessions follow it: at the model's cost per "
                     f"session it holds {plural(plan.sessions or 0, 'concurrent session')} of "
                     f"{w.context_tokens:,} tokens.")
    elif plan.pool.set_aside and (logged := measured_as(plan.recipe, "kv_pool_tokens")) is not None:
        aside = plan.pool.set_aside
        text += (f" The recipe logged {measurement_text(logged, fmt_tokens)} tokens ({source_text(logged)}) at its "
                 f"own settings; {aside} {'size' if ', ' in aside else 'sizes'} this pool otherwise, so that figure "
                 "is not compared here.")
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
            f"GiB here.{_cold_compile(plan)}")


def _cold_compile(plan: Plan) -> str:
    """Why a cold start's logged pool sits below the prediction, for a recipe whose launch keeps no compile
    cache (`Recipe.cold_compile`)."""
    if not (plan.recipe and plan.recipe.cold_compile):
        return ""
    return (" That run compiled cold (its launch keeps no vLLM compile cache), and vLLM charges a cold "
            "torch.compile's temporary memory to the profile run, shrinking the KV cache until a restart finds the "
            "cache filled (vllm #54122); no source gives that charge for this model, so it is not predicted: the "
            "pool here is a warm start's, as an export from sparkadvisor gets (it keeps the cache on a volume).")


def _request_text(plan: Plan) -> str:
    """What vLLM reserves for one request of max_model_len on one rank, part by part, with the origin
    of each engine setting (vLLM's kv_cache_interface.py rules)."""
    kv, inputs = plan.kv, plan.pool.inputs
    assert kv is not None and inputs is not None and inputs.max_model_len
    if kv.packed is not None:
        return _packed_text(kv.packed, kv.block_tokens(inputs.block_tokens), inputs)
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


def _packed_text(layout: PackedLayout, block: int, inputs: PoolInputs) -> str:
    """One request in DeepSeek-V4's packed layout: the block ids it takes in each group, at the stride."""
    assert inputs.max_model_len
    length, origins, batched = inputs.max_model_len, inputs.origins, inputs.batched_tokens
    stride, split = layout.groups(block)
    full, sliding = layout.request_blocks(length, block, batched)
    ids = layout.request_ids(length, block, batched)
    pages = " + ".join(f"{layers} x {page:,} B" for layers, page in layout.full_pages(block))
    parts = [f"{full:,} for the compressed rows and indexer keys (blocks of {block:,} tokens)"]
    for (family, groups, _), (_, taken) in zip(split, sliding, strict=True):
        parts.append(f"{f'{groups} x ' if groups > 1 else ''}{taken:,} for the {family.name} ({family.window:,} - 1 + "
                     f"{batched:,} batched tokens in blocks of {family.block}, plus one"
                     f"{f'; {groups} groups' if groups > 1 else ''})")
    return (f"One request: DeepSeek-V4's caches share one slab in vLLM, where a block id costs the largest "
            f"group's pages, {stride:,} B ({pages}, its rows and keys); a request takes {'; '.join(parts)} = "
            f"{ids:,} ids x {stride:,} B = {layout.request_bytes(length, block, batched) / GiB:.3f} GiB; with "
            f"max-model-len {length:,} ({origins[0]}), block {block:,} tokens "
            f"({origins[1] if inputs.block_tokens else 'its backend default'}), max-num-batched-tokens "
            f"{batched:,} ({origins[2]}, one batch in flight).")


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
        return ""  # the target's MTP layers are counted; a separate mtp draft (Gemma 4's assistant) reads its KV
    text = " Not counted: the draft model's own KV cache (its layers and window are not in the catalog)"
    if spec.method == "dflash":
        text += ("; tonyd2wild's DFlash2 port gives its 5 sliding-window layers a group that shares the MLA "
                 "tensors and takes about 6 block ids per request, which would make the pool about 6% smaller")
    return text + "."
