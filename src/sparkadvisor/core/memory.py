"""Weights, parallelism and the per-node memory budget: does a build fit at all?

vLLM takes gpu_memory_utilization x the node's memory, loads its share of the weights,
profiles activations, and gives the rest to the KV cache, or exactly
--kv-cache-memory-bytes when a recipe pins it (DOMAIN.md; vLLM gpu_worker.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build, Hardware, Model, Recipe
from sparkadvisor.core.units import GiB, to_bytes

RUNTIME_RESERVE_GIB = 5.0
"""Activations, CUDA graphs and NCCL buffers per node, beside weights and KV. The
article's GLM recipe leaves ~11 GiB per node at 0.85 and pins 6 GiB of KV, keeping
~5 GiB for the rest; the same share is assumed elsewhere until a recipe says more."""


@record(kw_only=False)
class Weights:
    """How many bytes a build holds and how that is known."""

    total_bytes: float
    """All shards, MTP heads and per-token tables included."""
    unit: str
    """The unit its source printed (GB or GiB); derived sizes are printed in GB."""
    stated: bool
    """True when the size comes from the repo or card, False when derived."""
    table_bytes: float
    """Bytes of per-token tables (PLE, Engram) inside total_bytes, when known."""
    mtp_bytes: float
    """Bytes of MTP heads inside total_bytes, when known."""
    stored_bits: float
    """Average stored bits per transformer weight (tables and MTP heads set aside)."""

    def resident_bytes(self, streams_tables: bool) -> float:
        """Bytes held in memory: all of it, or all but the tables a recipe streams from disk."""
        return self.total_bytes - (self.table_bytes if streams_tables else 0.0)


def build_weights(build: Build, model: Model) -> Weights:
    """Weights of a build: as stated by its source, else parameters x stored bits."""
    info = FORMATS[build.format]
    table_params = sum(t.params_b for t in model.tables) * 1e9
    mtp_params = (model.mtp.params_b or 0.0) * 1e9 if model.mtp else 0.0
    transformer_params = model.params.total_b * 1e9
    all_params = transformer_params + table_params + mtp_params
    if build.size is None:
        bits = build.bits_per_weight or info.stored_bits
        return Weights(all_params * bits / 8, "GB", False, table_params * bits / 8, mtp_params * bits / 8, bits)
    size = build.size
    total = to_bytes(size.value, size.unit)
    average_bits = total * 8 / all_params
    tables = to_bytes(size.tables, size.unit) if size.tables is not None else table_params * average_bits / 8
    mtp = to_bytes(size.mtp, size.unit) if size.mtp is not None else mtp_params * average_bits / 8
    transformer_bits = max(total - tables - mtp, 0.0) * 8 / transformer_params
    return Weights(total, size.unit, True, tables, mtp, transformer_bits)


def valid_parallelism(model: Model, nodes: int, recipe: Recipe | None) -> tuple[int, int, str]:
    """(tp, pp, why) for one GPU per node. TP must divide the attention and KV heads."""
    if recipe is not None:
        return recipe.tp, recipe.pp, f"as the recipe sets it ({recipe.title})"
    attention = model.attention
    return _split(attention.heads if attention else None, attention.kv_heads if attention else None, nodes)


@lru_cache(maxsize=1024)
def _split(heads: int | None, kv_heads: int | None, nodes: int) -> tuple[int, int, str]:
    """`valid_parallelism` without a recipe: a few head counts cover every model, so each is worked out once."""
    if nodes == 1:
        return 1, 1, "one node"
    counts = [h for h in (heads, kv_heads) if h]
    if counts and all(h % nodes == 0 for h in counts):
        return nodes, 1, f"{nodes} divides the {'/'.join(map(str, counts))} attention/KV heads"
    if not counts and nodes & (nodes - 1) == 0:
        return nodes, 1, "head counts unknown (powers of two divide every published model)"
    if not counts:
        return 1, nodes, f"head counts unknown and {nodes} is not a power of two, so the layers are split instead"
    return 1, nodes, f"{nodes} does not divide the heads, so the layers are split instead"


@record(kw_only=False)
class Budget:
    """One node's memory at a given gpu-memory-utilization."""

    usable_bytes: float
    """Usable memory per node."""
    utilization: float
    """gpu-memory-utilization in force."""
    weights_bytes: float
    """This node's share of the weights."""
    reserve_bytes: float
    """Activations and runtime (RUNTIME_RESERVE_GIB)."""
    kv_pinned_bytes: float | None
    """--kv-cache-memory-bytes, when pinned."""
    engine_bytes: float
    """What vLLM may take: utilization x usable memory."""
    left_bytes: float
    """What is left after the weights, for KV and activations."""
    kv_bytes: float
    """The KV cache: the pinned size, or what is left after the reserve."""
    fits: bool
    """Weights, reserve and KV fit inside the engine's share."""

    @property
    def free_bytes(self) -> float:
        """What neither the weights, the KV cache nor the runtime reserve take of the usable memory."""
        return max(self.usable_bytes - self.weights_bytes - max(self.kv_bytes, 0.0) - self.reserve_bytes, 0.0)


def node_budget(
    hardware: Hardware, weights_per_node: float, utilization: float, kv_pinned_gib: float | None
) -> Budget:
    """The memory budget of one node."""
    return Budget(*_budget(hardware, weights_per_node, utilization, kv_pinned_gib))


def node_fits(hardware: Hardware, weights_per_node: float, utilization: float, kv_pinned_gib: float | None) -> bool:
    """`node_budget(...).fits`, without the record (the search for the nodes a build needs asks it often)."""
    return _budget(hardware, weights_per_node, utilization, kv_pinned_gib)[-1]


def _budget(hardware: Hardware, weights_per_node: float, utilization: float,
            kv_pinned_gib: float | None) -> tuple[float, float, float, float, float | None, float, float, float, bool]:
    """The figures of a `Budget`, in its order."""
    usable = hardware.usable_memory_gib * GiB
    reserve = RUNTIME_RESERVE_GIB * GiB
    pinned = kv_pinned_gib * GiB if kv_pinned_gib is not None else None
    engine = utilization * usable
    left = engine - weights_per_node
    kv = pinned if pinned is not None else left - reserve
    # One byte of slack: kv is engine - weights - reserve, and adding them back can round up.
    fits = kv > 0 and weights_per_node + reserve + kv <= engine + 1
    return usable, utilization, weights_per_node, reserve, pinned, engine, left, kv, fits


def nodes_needed(weights: Weights, hardware: Hardware, utilization: float) -> int | None:
    """The smallest cluster whose nodes each hold their share with room left for KV, or None."""
    room_per_node = utilization * hardware.usable_memory_gib * GiB - RUNTIME_RESERVE_GIB * GiB
    if room_per_node <= 0:
        return None
    nodes = math.floor(weights.total_bytes / room_per_node) + 1
    return nodes if nodes <= hardware.max_nodes else None
