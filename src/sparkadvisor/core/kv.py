"""KV cache bytes by attention design, per rank after the tensor-parallel split.

- GQA/MHA: 2 (K and V) x kv_heads x head_dim x dtype bytes per full layer per token;
  TP splits the KV heads, and vLLM keeps at least one per rank (max(1, kv_heads // tp)).
- MLA: (kv_lora_rank + qk_rope_head_dim) x dtype bytes per layer per token; vLLM keeps
  the latent whole on every TP rank.
- Sliding-window layers hold at most the window per sequence.
- Full-attention layers may cache another shape than the sliding ones (Gemma 4's global layers:
  num_global_key_value_heads x global_head_dim); each layer type counts its own K and V. Gemma 4's
  attention_k_eq_v (V made from K's projection) still caches two tensors in vLLM, so it counts 2.
- Linear-attention (Gated DeltaNet, KDA) and Mamba-2 layers hold a fixed state per sequence.
- A sparse-attention indexer (DeepSeek DSA) caches an FP8 key per token per full layer
  with one FP32 scale per 128 values (vLLM's indexer cache: head_dim + head_dim/128 x 4 bytes).
  GLM-5.x's k-pool indexer keeps one such key per `indexer_pool` tokens (index_kpool): vLLM's
  Glm5NextIndexerCache (models/glm5next/common/attention.py) sets tokens_per_state = index_kpool on
  its MLAAttentionSpec, which "shrinks the cache allocation [to] store one state per index_kpool
  tokens" (132 / 4 = 33 B per token per layer for GLM-5.3-Flash).
- Compressed layers (DeepSeek-V4's CSA and HCA) cache one row per `ratio` tokens, and an
  indexer key per row where an indexer picks among them.
- Feed-forward-only blocks (Nemotron-H's MoE blocks) keep nothing.
- `fp8_ds_mla` (vLLM's DeepSeek sparse-MLA layout) stores the latent in FP8 with one FP32
  scale per 128 values and the RoPE part in BF16: 512 + 16 + 128 = 656 bytes, the page vLLM's
  MLAAttentionSpec allocates per token whatever the latent's width (kv_cache_interface.py). The
  layout hardcodes DeepSeek's 64-wide RoPE part (csrc/cache_kernels.cu concat_and_cache_mla: "pe_dim
  must be 64 for fp8_ds_mla"), so a NoPE sparse-MLA model (GLM-5.3-Flash, qk_rope_head_dim 0) asked
  for FP8 keeps the plain FP8 latent: kv_lora_rank x 1 B (tonyd2wild's SM121 image runs FlashInfer's
  FA2 FP8 MLA path; its DFlash2 notes give "MLA 512 B/token, indexer 33 B/token").
- DeepSeek-V4's attention (compressed layers) is stored FP8 whatever --kv-cache-dtype says:
  NoPE in FP8, RoPE in BF16, one scale byte per 64 NoPE values and one pad byte
  (deepseek_v4_attention.py head_bytes: 448 + 128 + 7 + 1 = 584 bytes for V4-Flash).
- Linear-attention states at the dtypes vLLM keeps them (mamba_utils.py MambaStateDtypeCalculator):
  convolution state at the model dtype; KDA's recurrent state always FP32; Gated DeltaNet's and
  Mamba-2's recurrent state at --mamba-ssm-cache-dtype (default: the model dtype).
Pipeline parallelism gives each rank its stage's layers: vLLM splits num_hidden_layers into pp
stages of L // pp, the remainder one more each on the stages before the last (get_pp_indices), so
the most-loaded stage holds ceil(L / pp). Each stage sizes its own pool from its own layers, and
vLLM then cuts every rank to the smallest block count among them (kv_cache_utils.py
get_kv_cache_configs: "Change the num_blocks of each rank to the smallest among all ranks"), so the
pool follows the most-loaded stage: of each layer type of n layers, ceil(n / pp) (the layer types taken
as spread evenly over the stages, so the bound is the stage holding most of each). A decode step still
reads each stage's own KV in turn (the per-stage average, `full_layer_share`, times pp).

What one request costs in vLLM's pool (`request_bytes`, the divisor of the "GPU KV cache size"
log line, which is int(max concurrency x max_model_len)) follows kv_cache_interface.py: a
full layer holds cdiv(max_model_len, block) blocks; a sliding layer min(window - 1 +
max_num_batched_tokens, max_model_len) tokens in blocks, plus one; a linear layer one page per
request plus one per speculative token (MambaSpec with num_speculative_blocks), and one more when
prefix caching is on (mamba_cache_mode "align", vLLM's default with prefix caching: MambaSpec
max_memory_usage_bytes = (2 + num_speculative_blocks) pages), its state padded to the attention
page, and each layer type padded to a whole number of KV-cache groups (kv_cache_utils.py: the group
size is the smallest layer count, or the largest when that is under 1.5 times the smallest). The
attention block grows until its page holds the state, in steps of the larger of the kernel's
alignment and --block-size (platforms/interface.py _align_hybrid_block_size: kernel_block_alignment_size
= max(backend minimum, cache_config.block_size)); the state's convolution part is widened by one step
per speculative token (mamba_utils.py: conv width conv_kernel_size - 1 + num_spec).
Every KV tensor holds num_blocks pages, so a block id, whichever group takes it, costs a page in every
tensor: a linear group's block id also reserves the indexer keys' pages beside the attention pages it
shares (GLM-5.3-Flash: 11 MLA tensors of 4,608 x 512 B that the 34 KDA layers share, plus 11 indexer
tensors of 4,608 x 33 B; tonyd2wild's three logged pools at 3, 4 and 6 GiB are whole numbers of such
27.6 MB block ids). GLM-5.x's k-pool indexer adds a tail cache group that takes one block id per
request (vLLM 0.1.dev20051 KpoolTailSpec: max_admission_blocks_per_request 1). DeepSeek-V4 has a
layout of its own (`kvpacked`): its compressed rows and indexer keys, its sliding windows and its
compressors' states overlay one slab, a block id costs the largest group's pages, and the windows
and states cost a request a fixed share (about 3.1 GiB per rank for V4-Flash at 8,192 batched
tokens) whatever its length.

What a decode step reads is bounded where the attention is: a top-k sparse layer reads at most
`sparse_topk` rows (plus every indexer key, which is how it chooses them), a sliding layer its
window, a compressed layer its rows, a linear layer its state.
"""

from __future__ import annotations

import math

from sparkadvisor.core.formats import kv_dtype_bytes
from sparkadvisor.core.kvpacked import BLOCK_TOKENS as PACKED_BLOCK_TOKENS
from sparkadvisor.core.kvpacked import PackedLayout, packed_layout
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Attention, LinearAttention

STATE_BYTES = 2
"""Convolution states, and recurrent states by default, are kept in the model dtype (bf16) in vLLM."""

FP32_BYTES = 4
"""KDA's recurrent state, which vLLM always keeps in FP32, and --mamba-ssm-cache-dtype float32."""

FP8_DS_MLA_BYTES = 656
"""vLLM's page per token for the fp8_ds_mla layout (MLAAttentionSpec.real_page_size_bytes)."""

VLLM_BLOCK_TOKENS = 16
"""vLLM's default --block-size on CUDA."""

VLLM_BATCHED_TOKENS = 8192
"""vLLM's default --max-num-batched-tokens for the API server on a GPU with 70 GiB or more
(engine/arg_utils.py get_batch_defaults); GB10 reports about 120 GiB."""

BLOCK_ALIGNMENT = 16
"""The smallest token multiple vLLM rounds a hybrid model's attention block to when it grows the block
so one page holds a linear layer's state (the attention backends' MultipleOf(16)); a recipe's larger
--block-size is the step instead (platforms/interface.py _align_hybrid_block_size). Kernels that need a
coarser multiple are not modelled."""

FP8_DS_MLA_ROPE = 64
"""The RoPE width fp8_ds_mla is laid out for (csrc/cache_kernels.cu: "pe_dim must be 64 for fp8_ds_mla")."""


@record(kw_only=False)
class KvShape:
    """What one sequence costs in KV memory on one rank."""

    bytes_per_token: float
    """Per token of context, full-attention layers plus indexer keys."""
    window_bytes_per_token: float
    """Per token of context up to the window, for the sliding-window layers."""
    window_tokens: int
    """The sliding window (0 when there is none)."""
    state_bytes_per_sequence: float
    """Fixed linear-attention / Mamba state per sequence."""
    full_layers: int
    """Layers on this rank that keep every token."""
    sliding_layers: int
    """Layers on this rank that keep the window."""
    linear_layers: int
    """Layers on this rank that keep a fixed state."""
    element_bytes: float
    """Bytes per cached element at the KV dtype."""
    kv_heads_per_rank: int
    """GQA/MHA: KV heads each rank keeps (0 for MLA, whose latent is whole on every rank)."""
    row_bytes: float = 0.0
    """One token's K and V (or latent) in one layer on this rank."""
    full_row_bytes: float | None = None
    """One token's K and V in one full-attention layer when that differs from `row_bytes`
    (Gemma 4's global layers); None: `row_bytes`."""
    full_kv_heads_per_rank: int | None = None
    """KV heads each rank keeps in a full-attention layer when that differs (None: kv_heads_per_rank)."""
    indexer_row_bytes: float = 0.0
    """One indexer key (per `indexer_pool` tokens of a full layer, per row of an indexed compressed layer)."""
    indexer_pool: int = 1
    """Tokens of a full layer that share one indexer key (GLM-5.x index_kpool; 1: a key per token)."""
    sparse_topk: int | None = None
    """Rows a sparse layer reads per query (None: every row)."""
    full_layer_share: float = 0.0
    """The target's full-attention layers on this rank (fractional under pipeline parallelism): what a
    decode step reads, an MTP drafter's layers aside."""
    sliding_layer_share: float = 0.0
    """Sliding-window layers on this rank."""
    compressed: tuple[tuple[float, int, bool], ...] = ()
    """(layers on this rank, ratio, indexed) of each compressed group."""
    state_bytes_per_layer: float = 0.0
    """One linear layer's state for one sequence on this rank (0 without linear layers)."""
    linear_slots: float = 0.0
    """Linear layers on this rank after vLLM pads each layer type to whole KV-cache groups."""
    full_pad: float = 1.0
    """Padded over real full-attention layers (vLLM's group padding; 1 when none is added)."""
    sliding_pad: float = 1.0
    """Padded over real sliding layers."""
    compressed_bytes_per_token: float = 0.0
    """The compressed layers' rows and indexer keys in `bytes_per_token` (DeepSeek-V4)."""
    packed: PackedLayout | None = None
    """DeepSeek-V4's caches as vLLM packs them (`kvpacked`): a request's bytes follow its layout."""
    stage_over_average: float = 1.0
    """Linear layers on the pipeline stage holding most of them (what the pool is sized by) over the stages'
    average (what a decode step reads per stage); 1 without pipeline parallelism."""
    conv_step_bytes: float = 0.0
    """One step of one linear layer's convolution state on this rank: vLLM widens the state by one step
    per speculative token (mamba_utils.py: conv width conv_kernel_size - 1 + num_spec)."""
    slot_indexer_bytes_per_token: float = 0.0
    """Indexer-key bytes per token that each group slot's block id also reserves (the indexer tensors
    sit beside the attention tensors the linear layers share): indexed full layers over the group size
    x one key per `indexer_pool` tokens."""
    tail_groups: int = 0
    """Cache groups that take one block id per request whatever its length (GLM-5.x's k-pool tail)."""
    group_size: int = 0
    """Layers per KV-cache group (vLLM's hybrid grouping); 0 without a hybrid layout."""
    draft_layers: int = 0
    """An MTP drafter's layers counted among the full-attention layers (0 without one)."""

    def request_bytes(self, max_model_len: int, block_tokens: int | None = None,
                      batched_tokens: int = VLLM_BATCHED_TOKENS, speculative_tokens: int = 0,
                      prefix_caching: bool = False) -> float:
        """Bytes vLLM reserves for one request of `max_model_len` on this rank when it sizes its pool
        (the module docstring gives the rules and their sources)."""
        block = self.block_tokens(block_tokens, speculative_tokens)
        if self.packed is not None:
            return self.packed.request_bytes(max_model_len, block, batched_tokens)
        full = self.padded_bytes_per_token * math.ceil(max_model_len / block) * block
        window = 0.0
        if self.window_tokens:
            kept = min(self.window_tokens - 1 + batched_tokens, max_model_len)
            window = self.window_bytes_per_token * self.sliding_pad * (math.ceil(kept / block) + 1) * block
        state = self.linear_slots * self.slot_bytes(block_tokens, speculative_tokens) * self.state_pages(
            speculative_tokens, prefix_caching)
        return full + window + state + self.tail_bytes(block_tokens, speculative_tokens)

    def block_id_bytes(self, block_tokens: int | None = None, speculative_tokens: int = 0) -> float:
        """What one of vLLM's num_gpu_blocks costs on this rank: every KV tensor holds a page per block
        id, so the KV memory vLLM holds is num_gpu_blocks times this. One group of every layer (a page
        of `block` tokens in each: `block` x the bytes per token), a hybrid's group_size tensors (a
        slot's page each, with the indexer pages beside them), DeepSeek-V4's packed stride."""
        block = self.block_tokens(block_tokens, speculative_tokens)
        if self.packed is not None:
            return self.packed.groups(block)[0]
        if self.group_size:
            return self.group_size * self.slot_bytes(block_tokens, speculative_tokens)
        return block * self.padded_bytes_per_token

    def state_pages(self, speculative_tokens: int = 0, prefix_caching: bool = False) -> int:
        """Pages a linear layer holds per request: one, one per speculative token, and one more in vLLM's
        "align" mode, the default with prefix caching (MambaSpec.max_memory_usage_bytes)."""
        return (2 if prefix_caching else 1) + speculative_tokens

    def slot_bytes(self, block_tokens: int | None = None, speculative_tokens: int = 0) -> float:
        """What one group slot's page costs per block id: the page, plus the indexer keys' pages that
        every block id reserves beside it."""
        block = self.block_tokens(block_tokens, speculative_tokens)
        return self.page_bytes(block_tokens, speculative_tokens) + self.slot_indexer_bytes_per_token * block

    def tail_bytes(self, block_tokens: int | None = None, speculative_tokens: int = 0) -> float:
        """The k-pool tail groups' block ids of one request (one each)."""
        if not self.tail_groups:
            return 0.0
        return self.tail_groups * self.group_size * self.slot_bytes(block_tokens, speculative_tokens)

    @property
    def padded_bytes_per_token(self) -> float:
        """`bytes_per_token` with each layer type padded to whole KV-cache groups, as a request pays it."""
        return self.bytes_per_token * self.full_pad

    def block_tokens(self, block_tokens: int | None = None, speculative_tokens: int = 0) -> int:
        """The attention block vLLM uses: the recipe's --block-size (else 16; 256 for DeepSeek-V4's
        backend), grown for a hybrid until one attention page holds a linear layer's state, in steps of
        the larger of the two."""
        if self.packed is not None:
            return block_tokens or PACKED_BLOCK_TOKENS
        block = block_tokens or VLLM_BLOCK_TOKENS
        row = self._page_row()
        state = self.linear_state_bytes(speculative_tokens)
        if state and row:
            step = max(BLOCK_ALIGNMENT, block)
            block = max(block, step * math.ceil(state / (step * row)))
        return block

    def linear_state_bytes(self, speculative_tokens: int = 0) -> float:
        """One linear layer's state for one sequence with its convolution widened per speculative token."""
        return self.state_bytes_per_layer + speculative_tokens * self.conv_step_bytes if self.state_bytes_per_layer \
            else 0.0

    def page_bytes(self, block_tokens: int | None = None, speculative_tokens: int = 0) -> float:
        """One linear layer's page: its state padded to one attention block of one layer."""
        row = self._page_row()
        return max(self.linear_state_bytes(speculative_tokens),
                   self.block_tokens(block_tokens, speculative_tokens) * row)

    def _page_row(self) -> float:
        return self.row_bytes if self.full_row_bytes is None else self.full_row_bytes

    def bytes_per_sequence(self, context_tokens: int) -> float:
        """KV bytes one sequence of `context_tokens` occupies on this rank."""
        window = min(context_tokens, self.window_tokens)
        return (
            context_tokens * self.bytes_per_token
            + window * self.window_bytes_per_token
            + self.state_bytes_per_sequence
        )

    def bytes_read(self, context_tokens: int) -> float:
        """KV and state bytes one decode step reads for one sequence at `context_tokens` on this rank."""
        ctx = context_tokens
        full_row = self.row_bytes if self.full_row_bytes is None else self.full_row_bytes
        full = self.full_layer_share * (self._picked(ctx) * full_row + self._indexed(ctx))
        window = self.sliding_layer_share * min(ctx, self.window_tokens) * self.row_bytes
        compressed = 0.0
        for layers, ratio, indexed in self.compressed:
            rows = ctx / ratio
            picked = min(rows, self.sparse_topk) if indexed and self.sparse_topk else rows
            compressed += layers * (picked * self.row_bytes + (rows * self.indexer_row_bytes if indexed else 0.0))
        return full + window + compressed + self.state_bytes_per_sequence / self.stage_over_average

    def _picked(self, ctx: int) -> float:
        return min(ctx, self.sparse_topk) if self.sparse_topk else ctx

    def _indexed(self, ctx: int) -> float:
        return ctx / self.indexer_pool * self.indexer_row_bytes


def kv_shape(attention: Attention, kv_cache_dtype: str, tp: int, pp: int,
             ssm_cache_dtype: str = "auto", draft_layers: int = 0) -> KvShape | None:
    """KV cost per rank for a model, or None when config.json lacks what is needed. A sparse MLA
    model (an indexer) asked for an FP8 cache gets vLLM's fp8_ds_mla layout, the only FP8 layout
    its sparse kernels read; DeepSeek-V4's compressed attention always gets its own FP8 layout.
    `ssm_cache_dtype` is --mamba-ssm-cache-dtype; `draft_layers` are an MTP drafter's layers, which vLLM
    caches beside the target's as more full-attention layers (kv_cache_utils.py groups "speculative decoding
    drafters that add extra layers to one attention type", e.g. gpt-oss-20b + EAGLE: 12 sliding + 13 full)."""
    if attention.compressed and attention.design == "mla":
        kv_cache_dtype = "fp8_ds_v4"
    elif (attention.design == "mla" and attention.indexer_head_dim and kv_cache_dtype.startswith("fp8")
          and (attention.qk_rope_head_dim or 0) == FP8_DS_MLA_ROPE):
        kv_cache_dtype = "fp8_ds_mla"
    element = 1.0 if kv_cache_dtype == "fp8_ds_v4" else kv_dtype_bytes(kv_cache_dtype)
    per_layer = _per_layer_token_bytes(attention, element, tp, kv_cache_dtype)
    if per_layer is None:
        return None
    full_heads = _global_kv_heads_per_rank(attention, tp)
    full_row = (2 * full_heads * (attention.global_head_dim or attention.head_dim or 0) * element
                if full_heads is not None else per_layer)
    linear_layers = attention.linear.layers if attention.linear else 0
    # An MTP drafter's layers are cached like the target's full-attention layers (`draft_layers`), but
    # DeepSeek-V4's keeps only a sliding window: its compress_ratios entry (the one after the last
    # decoder layer's) is 0, which vLLM's deepseek_v4 attention reads as no compression.
    packed_draft = draft_layers if kv_cache_dtype == "fp8_ds_v4" else 0
    full_draft = draft_layers - packed_draft
    full_layers = attention.layers - attention.sliding_layers - linear_layers - attention.ffn_layers + full_draft
    indexer = _indexer_bytes(attention.indexer_head_dim)
    ssm_bytes = FP32_BYTES if ssm_cache_dtype in ("float32", "fp32") else STATE_BYTES
    state = _linear_state_bytes(attention.linear, tp, ssm_bytes) if attention.linear else 0.0
    conv_step = _conv_channels(attention.linear, tp) * STATE_BYTES if attention.linear else 0.0
    packed = _packed(attention, per_layer, pp, packed_draft) if kv_cache_dtype == "fp8_ds_v4" else None
    # DeepSeek-V4's caches follow their own packed layout; the other hybrids pad each layer type to groups.
    counts = [full_layers, attention.sliding_layers, linear_layers] if packed is None else []
    pads, group = _group_pads(counts) + [1.0] * (3 - len(counts)), _group_size(counts)
    # A k-pool indexer (GLM-5.x) keeps its keys in tensors of their own beside the full layers', and a
    # tail cache group per full-layer group (one block id per request).
    slot_indexer = (indexer / attention.indexer_pool * full_layers / group
                    if linear_layers and group and full_layers else 0.0)
    tails = math.ceil(full_layers / group) if attention.indexer_pool > 1 and group and full_layers else 0
    full_pad, sliding_pad, linear_pad = pads[:3]
    window = attention.sliding_window or 0 if attention.sliding_layers else 0
    compressed = tuple((c.layers / pp, c.ratio, c.indexed) for c in attention.compressed)
    stage = stage_share(attention.layers, pp)
    compressed_per_token = sum(c.layers * stage / c.ratio * (per_layer + (indexer if c.indexed else 0.0))
                               for c in attention.compressed)
    # Each layer type on the stage that holds most of it: ceil(n / pp) of its n layers, the count `show` prints.
    full_stage, sliding_stage, linear_stage = (stage_share(n, pp) for n in (full_layers, attention.sliding_layers,
                                                                             linear_layers))
    return KvShape(
        bytes_per_token=full_layers * (full_row + indexer / attention.indexer_pool) * full_stage
        + compressed_per_token,
        window_bytes_per_token=attention.sliding_layers * per_layer * sliding_stage,
        window_tokens=window,
        state_bytes_per_sequence=linear_layers * state * linear_stage,
        full_layers=math.ceil(full_layers / pp),
        sliding_layers=math.ceil(attention.sliding_layers / pp),
        linear_layers=math.ceil(linear_layers / pp),
        element_bytes=element,
        kv_heads_per_rank=_kv_heads_per_rank(attention, tp),
        row_bytes=per_layer,
        full_row_bytes=full_row if full_heads is not None else None,
        full_kv_heads_per_rank=full_heads,
        indexer_row_bytes=indexer,
        indexer_pool=attention.indexer_pool,
        sparse_topk=attention.sparse_topk,
        full_layer_share=(full_layers - full_draft) / pp,  # a decode step reads the target's layers
        sliding_layer_share=attention.sliding_layers / pp,
        compressed=compressed,
        state_bytes_per_layer=state,
        linear_slots=linear_layers * linear_pad * linear_stage,
        full_pad=full_pad,
        sliding_pad=sliding_pad,
        compressed_bytes_per_token=compressed_per_token,
        packed=packed,
        stage_over_average=(linear_stage if linear_layers else stage) * pp,
        conv_step_bytes=conv_step,
        slot_indexer_bytes_per_token=slot_indexer,
        tail_groups=tails,
        group_size=group,
        draft_layers=full_draft,
    )


def indexed_ratio(attention: Attention | None) -> int:
    """Tokens per indexer key in the prefill buffer: DeepSeek-V4's indexer keys its ratio-compressed rows
    (models/deepseek_v4/attention.py divides get_max_prefill_buffer_size by compress_ratio); 1 elsewhere."""
    return next((c.ratio for c in attention.compressed if c.indexed), 1) if attention else 1


def stage_share(layers: int, pp: int) -> float:
    """Share of the layers on the pipeline stage that bounds vLLM's pool: ceil(layers / pp) / layers
    (1 without pipeline parallelism)."""
    if pp <= 1 or layers <= 0:
        return 1.0
    return math.ceil(layers / pp) / layers


def _packed(attention: Attention, row_bytes: float, pp: int, draft_layers: int) -> PackedLayout:
    """DeepSeek-V4's layout on the most-loaded pipeline stage (every cache is whole on each TP rank), an
    MTP drafter's window-only layers among the sliding ones."""
    stage = stage_share(attention.layers, pp)
    compressed = [(math.ceil(c.layers * stage), c.ratio, c.indexed) for c in attention.compressed]
    sliding = math.ceil(attention.sliding_layers * stage) + draft_layers
    return packed_layout(compressed, sliding, attention.sliding_window or 0, attention.head_dim or 0,
                         int(row_bytes), attention.indexer_head_dim, int(_indexer_bytes(attention.indexer_head_dim)))


def _group_pads(counts: list[int]) -> list[float]:
    """Padded over real layers of each layer type (1 for a type with none) by vLLM's hybrid grouping
    (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): every type is cut into groups of one
    size, the smallest type's layer count (the largest's when that is under 1.5 times the smallest),
    the last group of a type padded, and every group costs a request its blocks. The types are the
    layers' distinct cache specs: full attention, sliding window and linear state (DeepSeek-V4's own
    layout is `kvpacked`'s)."""
    size = _group_size(counts)
    if not size:
        return [1.0] * len(counts)
    return [math.ceil(n / size) * size / n if n else 1.0 for n in counts]


def _group_size(counts: list[int]) -> int:
    """Layers per KV-cache group by the rule `_group_pads` applies (0 with fewer than two layer types)."""
    present = [n for n in counts if n > 0]
    if len(present) < 2:
        return 0
    size = min(present)
    return max(present) if max(present) < 1.5 * size else size


def _kv_heads_per_rank(attention: Attention, tp: int) -> int:
    if attention.design == "mla" or attention.kv_heads is None:
        return 0
    return max(1, attention.kv_heads // tp)


def _global_kv_heads_per_rank(attention: Attention, tp: int) -> int | None:
    """KV heads per rank of a full-attention layer whose shape differs from the sliding layers', else None."""
    if attention.design == "mla" or (attention.global_kv_heads is None and attention.global_head_dim is None):
        return None
    return max(1, (attention.global_kv_heads or attention.kv_heads or 1) // tp)


def _per_layer_token_bytes(attention: Attention, dtype_bytes: float, tp: int,
                           kv_cache_dtype: str = "auto") -> float | None:
    if attention.design == "mla":
        if attention.kv_lora_rank is None:
            return None
        rope = attention.qk_rope_head_dim or 0
        if kv_cache_dtype == "fp8_ds_mla":
            return FP8_DS_MLA_BYTES
        if kv_cache_dtype == "fp8_ds_v4":
            return attention.kv_lora_rank + rope * 2 + attention.kv_lora_rank // 64 + 1
        return (attention.kv_lora_rank + rope) * dtype_bytes
    if attention.kv_heads is None or attention.head_dim is None:
        return None
    return 2 * _kv_heads_per_rank(attention, tp) * attention.head_dim * dtype_bytes


def _indexer_bytes(indexer_head_dim: int | None) -> float:
    if not indexer_head_dim:
        return 0.0
    return indexer_head_dim + math.ceil(indexer_head_dim / 128) * 4


def _conv_channels(linear: LinearAttention, tp: int) -> float:
    """Channels of one linear layer's convolution state on one rank (one step of it per token of width)."""
    # Gated DeltaNet / KDA: q and k over the key heads, v over the value heads; Mamba-2: x plus B and C
    # of each group (the same count with its names).
    value_heads = linear.num_value_heads / tp
    key_heads = (linear.num_key_heads or linear.num_value_heads) / tp
    return 2 * key_heads * linear.key_head_dim + value_heads * linear.value_head_dim


def _linear_state_bytes(linear: LinearAttention, tp: int, ssm_bytes: float = STATE_BYTES) -> float:
    """Recurrent state plus convolution state of one layer, one sequence, one rank, each at the
    dtype vLLM keeps it in (KDA's recurrent state is FP32; the others' at `ssm_bytes`)."""
    # Gated DeltaNet / KDA: value heads x key dim x value dim; Mamba-2: heads x head_dim x state.
    recurrent = linear.num_value_heads / tp * linear.key_head_dim * linear.value_head_dim
    conv = (linear.conv_kernel - 1) * _conv_channels(linear, tp)
    recurrent_bytes = FP32_BYTES if linear.kind == "kda" else ssm_bytes
    return recurrent * recurrent_bytes + conv * STATE_BYTES


def sequence_bytes(shape: KvShape, context_tokens: int, block_tokens: int | None = None,
                   speculative_tokens: int = 0, prefix_caching: bool = False) -> float:
    """What vLLM allocates a running request of `context_tokens` on one rank: its blocks, its window
    plus one block, its state pages (one more per speculative token, one more with prefix caching)."""
    return shape.request_bytes(context_tokens, block_tokens, 1, speculative_tokens, prefix_caching)


def sessions_of(budget_bytes: float, per_sequence_bytes: float) -> int:
    """How many sequences of `per_sequence_bytes` each (`sequence_bytes`) fit in `budget_bytes` on one rank."""
    if budget_bytes <= 0 or per_sequence_bytes <= 0:
        return 0
    return int(budget_bytes // per_sequence_bytes)


SHAPES_KEPT = 4096
"""Shapes `shape_for` keeps before it starts afresh (a catalog has a few dozen attention designs)."""

_shapes: dict[tuple[int, str, int, int, str, int], tuple[Attention, KvShape | None]] = {}


def shape_for(attention: Attention, kv_cache_dtype: str, tp: int, pp: int,
              ssm_cache_dtype: str = "auto", draft_layers: int = 0) -> KvShape | None:
    """`kv_shape`, computed once per attention design, dtype, split and state dtype (a ranking
    asks for the same few designs twice per build). Kept by the record's identity: hashing a
    whole `Attention` costs about as much as a lookup saves; each entry holds its record, so
    an identity is never reused while its entry lives."""
    key = (id(attention), kv_cache_dtype, tp, pp, ssm_cache_dtype, draft_layers)
    kept = _shapes.get(key)
    if kept is not None:
        return kept[1]
    shape = kv_shape(attention, kv_cache_dtype, tp, pp, ssm_cache_dtype, draft_layers)
    if len(_shapes) >= SHAPES_KEPT:
        _shapes.clear()
    _shapes[key] = (attention, shape)
    return shape
