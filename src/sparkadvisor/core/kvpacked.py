"""vLLM's packed KV layout for DeepSeek-V4, and what one request costs in it.

Read from vLLM's source at one commit (zyongye/vllm @ 91a893de, which carries the upstream history
to 2026-08-20; file and line references are at that commit):
- Every cache is a layer of its own (models/deepseek_v4): each compressed layer keeps its rows at
  --block-size tokens per block (256 by default: DeepseekSparseSWABackend.get_preferred_block_size),
  one row per `ratio` tokens; a ratio-4 layer's indexer keeps a key per row (132 B: 128 FP8 and one
  FP32 scale); every layer keeps a sliding window of 128 raw rows in blocks of 64 (sparse_swa.py); and
  each compressed layer's compressor keeps its running state in FP32, state_dim = 2 x coff x head_dim
  (coff 2 at ratio 4, 1 at ratio 128), as a sliding cache of coff x ratio tokens in blocks of 4 (ratio 4)
  or 8 (ratio 128) (compressor.py CompressorStateCache), the indexer's compressor likewise at its own
  head_dim. Pages are rounded up to 576 B, the fp8_ds_mla layout's alignment, the one SM12x runs.
- The caches that keep every token form one group; the sliding caches are grouped by (block, window)
  and each such family is cut into ceil(layers / n) groups of "layer tuples", n the chunk that pads
  the families' tuple counts least, at least the full group's (kv_cache_utils.py
  _get_kv_cache_groups_uniform_groups, _approximate_gcd).
- The groups overlay one slab: a block id costs the largest group's summed pages, whichever group
  takes it (_get_packed_kv_cache_layout; num_blocks = available memory // block stride).
- A request of max_model_len L takes cdiv(L, block) ids for the full group and, in each sliding
  group, cdiv(min(window - 1 + in-flight tokens, L), its block) + 1 (SlidingWindowSpec
  max_admission_blocks_per_request); vLLM's "GPU KV cache size" is num_blocks over the ids a request
  takes, times L (get_max_concurrency_for_kv_cache_config, get_kv_cache_capacity).
The in-flight tokens are --max-num-batched-tokens, one batch. vLLM since #47728 (2026-07-08) counts
max_concurrent_batches batches, two under async scheduling; but every public DeepSeek-V4-Flash boot log
on two Sparks fits one batch, MiaAI-Lab's with the mp executor and --async-scheduling among them
(18.08 GiB -> 2,493,464 tokens at L 1,048,576, 8,192 batched tokens, block 256: one batch predicts
2.73M, two 1.89M), so the images these recipes run count one.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

from sparkadvisor.core.records import record

BLOCK_TOKENS = 256
"""DeepSeek-V4's attention block when the recipe sets none (DeepseekSparseSWABackend)."""

WINDOW_BLOCK_TOKENS = 64
"""The sliding-window cache's block (DeepseekV4SWACache.block_size)."""

STATE_BLOCK_TOKENS = {4: 4, 128: 8}
"""The compressor state cache's block by compression ratio (CompressorStateCache)."""

PAGE_ALIGNMENT = 576
"""Bytes every page is rounded up to in the fp8_ds_mla paged layout."""

COMPRESSOR_STATE_BYTES = 4
"""The compressor state's FP32."""


@record(kw_only=False)
class Family:
    """Sliding caches of one block and window, the layer types in them, e.g. every compressed layer's
    ratio-4 compressor state with its indexer's."""

    name: str
    block: int
    """Tokens per block."""
    window: int
    """Tokens the cache keeps."""
    types: tuple[tuple[int, int], ...]
    """(layers on this rank, page bytes) of each layer type."""


@record(kw_only=False)
class PackedLayout:
    """DeepSeek-V4's caches on one rank, as vLLM packs them (the module docstring gives the rules)."""

    rows: tuple[tuple[int, int, int], ...]
    """(layers on this rank, tokens per row, bytes per row) of each cache that keeps every token:
    each ratio's compressed rows and the indexer keys."""
    families: tuple[Family, ...]
    """The sliding caches: the raw window and each ratio's compressor states."""

    def full_pages(self, block: int) -> tuple[tuple[int, int], ...]:
        """(layers, page bytes) of each full cache at `block` tokens per block."""
        return tuple((layers, _aligned(max(1, block // per_row) * row)) for layers, per_row, row in self.rows)

    def groups(self, block: int) -> tuple[int, tuple[tuple[Family, int, int], ...]]:
        """(bytes one block id costs, ((family, its groups, bytes of its largest group), ...))."""
        return _groups(self, block)

    def request_blocks(self, max_model_len: int, block: int, in_flight: int) -> tuple[int, list[tuple[Family, int]]]:
        """(block ids a request of `max_model_len` takes in the full group, [(family, ids in each of its groups)])."""
        _, split = self.groups(block)
        sliding = [(f, math.ceil(min(f.window - 1 + in_flight, max_model_len) / f.block) + 1) for f, _, _ in split]
        return math.ceil(max_model_len / block), sliding

    def request_ids(self, max_model_len: int, block: int, in_flight: int) -> int:
        """Block ids one request of `max_model_len` takes across every group (vLLM's num_blocks_per_request)."""
        _, split = self.groups(block)
        full, sliding = self.request_blocks(max_model_len, block, in_flight)
        return full + sum(count * ids for (_, count, _), (_, ids) in zip(split, sliding, strict=True))

    def request_bytes(self, max_model_len: int, block: int, in_flight: int) -> float:
        """Bytes one request of `max_model_len` holds: its block ids at the stride."""
        return self.groups(block)[0] * self.request_ids(max_model_len, block, in_flight)


def packed_layout(compressed: list[tuple[int, int, bool]], sliding_layers: int, window: int, head_dim: int,
                  row_bytes: int, indexer_head_dim: int | None, key_bytes: int) -> PackedLayout:
    """The layout of a DeepSeek-V4 model from its config: `compressed` is (layers on this rank, ratio,
    indexed) of each ratio, `row_bytes` one compressed or raw row in the fp8_ds_mla layout, `key_bytes`
    one indexer key (128 FP8 values and an FP32 scale: 132)."""
    rows = [(layers, ratio, row_bytes) for layers, ratio, _ in compressed]
    rows += [(layers, ratio, key_bytes) for layers, ratio, indexed in compressed if indexed and indexer_head_dim]
    families = [Family("sliding window", WINDOW_BLOCK_TOKENS, window,
                       ((sliding_layers, _aligned(WINDOW_BLOCK_TOKENS * row_bytes)),))]
    for layers, ratio, indexed in compressed:
        coff = 2 if ratio == 4 else 1
        block = STATE_BLOCK_TOKENS.get(ratio, 8)
        types = [(layers, _aligned(block * 2 * coff * head_dim * COMPRESSOR_STATE_BYTES))]
        if indexed and indexer_head_dim:
            types.append((layers, _aligned(block * 2 * coff * indexer_head_dim * COMPRESSOR_STATE_BYTES)))
        families.append(Family(f"ratio-{ratio} compressor state", block, coff * ratio, tuple(types)))
    return PackedLayout(tuple(rows), tuple(f for f in families if f.types[0][0]))


@lru_cache(maxsize=64)
def _groups(layout: PackedLayout, block: int) -> tuple[int, tuple[tuple[Family, int, int], ...]]:
    """`PackedLayout.groups`, worked out once per layout and block (a ranking asks for it per build)."""
    full = layout.full_pages(block)
    tuples = _approximate_gcd([_tuples(full), *(_tuples(f.types) for f in layout.families)], _tuples(full))
    split = []
    for family in layout.families:
        count = math.ceil(_tuples(family.types) / tuples)
        split.append((family, count, math.ceil(_tuples(family.types) / count) * _tuple_bytes(family.types)))
    stride = max([sum(layers * page for layers, page in full), *(largest for _, _, largest in split)])
    return stride, tuple(split)


def _aligned(size: int) -> int:
    return math.ceil(size / PAGE_ALIGNMENT) * PAGE_ALIGNMENT


def _tuples(types) -> int:
    """Layer tuples of a group: the most layers of one page size (vLLM's get_num_layer_tuples)."""
    counts: Counter[int] = Counter()
    for layers, page in types:
        counts[page] += layers
    return max(counts.values())


def _tuple_bytes(types) -> int:
    """One layer tuple: a page of each page size."""
    return sum({page for _, page in types})


def _approximate_gcd(values: list[int], lower_bound: int) -> int:
    """The chunk that pads `values` least when each is rounded up to a multiple of it, from
    `lower_bound` up; ties go to the larger (kv_cache_utils.py _approximate_gcd)."""
    best, best_pad = lower_bound, None
    for d in range(max(1, lower_bound), max(values) + 1):
        pad = sum(-x % d for x in values)
        if best_pad is None or pad <= best_pad:
            best, best_pad = d, pad
    return best
