"""Weights, parallelism and the per-node memory budget: does a build fit at all?

vLLM takes gpu_memory_utilization x the node's memory, loads its share of the weights,
profiles activations, and gives the rest to the KV cache, or exactly
--kv-cache-memory-bytes when a recipe pins it (DOMAIN.md; vLLM gpu_worker.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Build, Hardware, LoggedReserve, Model, Recipe
from sparkadvisor.core.speed.chunks import GGML_ENGINES
from sparkadvisor.core.units import GiB, to_bytes

PROFILE_PEAK_GIB = 3.62
"""What vLLM's profile run takes per node beside the weights, the indexer's prefill buffer and CUDA
graphs: activations at max-num-batched-tokens, the sampler's dummy batch, and the non-torch memory that
appears meanwhile (NCCL buffers, cuBLAS and attention workspaces). vLLM keeps gpu-memory-utilization x
memory - weights as loaded - this peak - its CUDA graph estimate for the KV cache
(gpu_worker.determine_available_memory). tonyd2wild-glm (GLM-5.3-Flash NVFP4, TP2, eager, 8,192 batched
tokens, gpu-memory-utilization 0.85, max-model-len 262,144, --block-size 2304, prefix caching on) logs a
965,166-token profiler-sized pool without a drafter. The pool is int(max concurrency x max_model_len),
and one request of 262,144 tokens costs 1.698 GiB per rank by vLLM's rules (`kv.KvShape.request_bytes`:
57 MLA blocks of 4,608 tokens, one k-pool tail block and 4 KDA groups x 2 state pages ("align" mode),
each block id 11 x 4,608 x (512 + 33) B), so the profiler left 965,166 / 262,144 x 1.698 = 6.25 GiB of
KV; 0.85 x 121.6 - 92.20 GiB of weights - 6.25 = 4.91 GiB, of which GLM's own indexer prefill buffer is
40 x 262,144 x 132 B = 1.29 GiB (INDEXER_BUFFER_BYTES_PER_TOKEN, added apart for every model that has an
indexer), leaving 3.62 GiB. tests/core/test_reserve.py redoes this from the catalog, so the figure
follows the KV model. The pool is the minimum over the ranks, and the README notes its worker rank
profiles 4-5 GiB less headroom than the head, so this is the tighter rank's figure. A recipe whose own
logs pin its profile run (`Recipe.reserve`) uses that instead; other builds are assumed to need GLM's."""

PROFILE_BATCHED_TOKENS = 8192
"""The --max-num-batched-tokens of the boot PROFILE_PEAK_GIB comes from (tonyd2wild-glm)."""

PROFILE_SOURCE = "tonyd2wild-glm"
"""The catalog source of PROFILE_PEAK_GIB and DRAFT_PROFILE_GIB."""

GRAPH_SOURCE = "tonyd2wild-ds41"
"""The catalog source of CUDA_GRAPH_GIB and DRAFT_GRAPH_GIB (and the check of INDEXER_BUFFER_BYTES_PER_TOKEN)."""

DRAFT_PROFILE_GIB = 0.0
"""What a speculative drafter adds to the profile run beside its own weights, taken as 0: the same
recipe's profiler-sized pool with its DFlash2 drafter (k = 7) is 581,040 tokens, and a request then
costs 2.418 GiB (seven more state pages per KDA group), so the KV was 581,040 / 262,144 x 2.418 =
5.36 GiB; 103.36 - 92.20 - 1.02 GiB of drafter weights (2.2 GB over TP2) - 5.36 - 3.62 - 1.29 GiB of
indexer buffer = -0.13 GiB.
The two profiler-sized pools differ by less than the drafter's own weights (and by less still with
the drafter's uncounted sliding-window block ids), so these logs cannot resolve a profile cost of the
drafter beyond its weights (the README's unexplained 4-5 GiB worker-rank asymmetry sits in both);
nothing is added for it rather than a negative figure. Applies to other drafters and MTP heads alike."""

CUDA_GRAPH_GIB = 1.99
"""CUDA graph memory of the target model per node, when graphs are captured (tonyd2wild-ds41, boot 10:
DeepSeek-V4.1-Flash TP4, FULL_AND_PIECEWISE, 15 capture sizes up to 48; boot 9 and boot 10's restore,
same flags, logged 1.85 and 1.29: vLLM measures the capture as a drop in free memory, which on a GB10
moves with the host's page cache, so one boot's figure is not a rule of the capture sizes). Assumed for builds
whose own logs do not give theirs (`Recipe.reserve`). vLLM estimates the graphs
by capturing them once during memory profiling and keeps the estimate out of the KV cache
(gpu_worker.determine_available_memory, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default since
v0.21.0: "CUDA graph memory profiling is enabled (default since v0.21.0)" in its startup log)."""

DRAFT_GRAPH_GIB = 0.55
"""CUDA graph memory of the drafter per node under speculative decoding with graphs (same boot 10 and its
restore log: the DSpark drafter at k=5); assumed for other drafters and MTP heads, unless a recipe's own
log gives its graphs (`Recipe.reserve`, target and drafter together)."""

INDEXER_BUFFER_BYTES_PER_TOKEN = 40 * 132
"""A sparse-attention indexer's prefill buffer per node, per token of max-model-len: vLLM sizes it
as 40 x max_model_len entries of 132 bytes (128 FP8 values and an FP32 scale;
v1/attention/backends/mla/indexer.py get_max_prefill_buffer_size), 5.16 GiB at 1M tokens, which
the DeepSeek-V4.1-Flash recipe's note (tonyd2wild-ds41: "about 5.2 GiB at 1M") agrees with. The profile
run reserves it once, as a workspace every layer shares (sparse_attn_indexer.py). DeepSeek-V4's indexer
keys its compressed rows, so it takes max-model-len / compress_ratio of them (models/deepseek_v4/
attention.py: get_max_prefill_buffer_size(vllm_config) // self.compress_ratio; zyongye/vllm @ 91a893de):
1.29 GiB at 1M tokens for V4-Flash's ratio 4."""


@record(kw_only=False)
class Reserve:
    """What vLLM keeps per node beside the weights and the KV cache, and why."""

    profile_bytes: float
    """Activations, sampler and non-torch memory of the profile run (the recipe's logged figure, else
    PROFILE_PEAK_GIB, plus DRAFT_PROFILE_GIB under speculation)."""
    graph_bytes: float
    """Target-model CUDA graphs (0 with --enforce-eager); with a logged figure, target and drafter together."""
    draft_graph_bytes: float
    """Drafter CUDA graphs (0 without speculation, with --enforce-eager, or inside a logged figure)."""
    draft_weights_bytes: float = 0.0
    """A separate draft model's weights on this node (its stated size over the TP ranks)."""
    indexer_bytes: float = 0.0
    """A sparse-attention indexer's prefill buffer at max-model-len (INDEXER_BUFFER_BYTES_PER_TOKEN)."""
    logged: LoggedReserve | None = None
    """The recipe's own logged profile run (and graphs, when it gives them), when it has one."""

    @property
    def total_bytes(self) -> float:
        """All of it."""
        return (self.profile_bytes + self.graph_bytes + self.draft_graph_bytes + self.draft_weights_bytes
                + self.indexer_bytes)

    @property
    def graphs_logged(self) -> bool:
        """The graph figure is the recipe's own model's (not DeepSeek-V4.1-Flash's)."""
        return self.logged is not None and self.logged.cuda_graphs_gib is not None and self.graph_bytes > 0

    @property
    def source_ids(self) -> tuple[str, ...]:
        """The catalog sources of the parts this reserve holds."""
        ref = self.logged.source if self.logged is not None else PROFILE_SOURCE
        own = (ref,) if isinstance(ref, str) else tuple(ref)
        general_graphs = (self.graph_bytes and not self.graphs_logged) or self.draft_graph_bytes
        return own + (GRAPH_SOURCE,) if general_graphs or self.indexer_bytes else own

    @property
    def profiled_bytes(self) -> float:
        """What a pinned KV cache does not keep free: vLLM allocates exactly the pin without a
        profile run, so only the graphs and the drafter's weights are set aside for certain."""
        return self.graph_bytes + self.draft_graph_bytes + self.draft_weights_bytes


@lru_cache(maxsize=256)
def runtime_reserve(eager: bool, speculative: bool, draft_weights_bytes: float = 0.0,
                    indexer_context_tokens: int = 0, logged: LoggedReserve | None = None) -> Reserve:
    """The reserve of one node: the profile peak, plus CUDA graphs unless eager, plus a drafter, plus
    an indexer's prefill buffer when the model has one (`indexer_context_tokens` = max-model-len). A
    recipe's `logged` profile run replaces the general one, and its graph figure (target and drafter
    together) the general graphs."""
    general = PROFILE_PEAK_GIB + (DRAFT_PROFILE_GIB if speculative else 0.0)
    profile = (logged.profile_gib if logged is not None else general) * GiB
    own_graphs = logged.cuda_graphs_gib if logged is not None else None
    graphs = 0.0 if eager else (own_graphs if own_graphs is not None else CUDA_GRAPH_GIB) * GiB
    draft = DRAFT_GRAPH_GIB * GiB if speculative and not eager and own_graphs is None else 0.0
    indexer = INDEXER_BUFFER_BYTES_PER_TOKEN * indexer_context_tokens
    return Reserve(profile, graphs, draft, draft_weights_bytes, indexer, logged)


DEFAULT_RESERVE = runtime_reserve(eager=False, speculative=False)
"""A build without a recipe: CUDA graphs on (vLLM's default), no speculation."""


@record(kw_only=False)
class SizeCheck:
    """The derived-size rule (parameters x the format's stored bits) against the builds of one format whose
    size a source states: how far it came out from each, as a share of the stated size."""

    builds: int
    """How many builds of the format state their size."""
    low: float
    """The lowest of the rule's errors, as a fraction of the stated size (negative: it fell short)."""
    high: float
    """The highest of them."""


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
    check: SizeCheck | None = None
    """For a derived size: how the same rule compares with the stated sizes of the catalog's other builds of
    the format (`size_checks`); None for a stated size, or when no build of the format states one."""

    @property
    def transformer_bytes(self) -> float:
        """The weights a forward pass multiplies with: all but the per-token tables and MTP heads."""
        return self.total_bytes - self.table_bytes - self.mtp_bytes

    def resident_bytes(self, streams_tables: bool) -> float:
        """Bytes held in memory: all of it, or all but the tables a recipe streams from disk."""
        return self.total_bytes - (self.table_bytes if streams_tables else 0.0)


def size_checks(builds: Iterable[Build], models: Mapping[str, Model]) -> dict[str, SizeCheck]:
    """For each format, the derived-size rule against every build of it whose size a source states (a build
    whose format picks its types per model, or that states its bits per weight, has no rule to check)."""
    errors: dict[str, list[float]] = {}
    for build in builds:
        model = models.get(build.model)
        if build.size is None or build.bits_per_weight or model is None \
                or FORMATS[build.format].mix_varies_by_model:
            continue
        derived = _derived_bytes(model, FORMATS[build.format].stored_bits)
        errors.setdefault(build.format, []).append(derived / to_bytes(build.size.value, build.size.unit) - 1)
    return {f: SizeCheck(len(e), min(e), max(e)) for f, e in errors.items()}


def _params(model: Model) -> tuple[float, float, float, float]:
    """(transformer, per-token tables, MTP heads, all) parameters, as counts."""
    table_params = sum(t.params_b for t in model.tables) * 1e9
    mtp_params = (model.mtp.params_b or 0.0) * 1e9 if model.mtp else 0.0
    transformer_params = model.params.total_b * 1e9
    return transformer_params, table_params, mtp_params, transformer_params + table_params + mtp_params


def _derived_bytes(model: Model, bits: float) -> float:
    """The derived-size rule: every parameter (tables and MTP heads included) at `bits` stored bits."""
    return _params(model)[3] * bits / 8


def build_weights(build: Build, model: Model, checks: Mapping[str, SizeCheck] | None = None) -> Weights:
    """Weights of a build: as stated by its source, else parameters x stored bits (with `checks`, the
    format's `size_checks` beside a derived size)."""
    info = FORMATS[build.format]
    transformer_params, table_params, mtp_params, all_params = _params(model)
    if build.size is None:
        bits = build.bits_per_weight or info.stored_bits
        check = (checks or {}).get(build.format) if build.bits_per_weight is None else None
        return Weights(_derived_bytes(model, bits), "GB", False, table_params * bits / 8, mtp_params * bits / 8,
                       bits, check)
    size = build.size
    total = to_bytes(size.value, size.unit)
    average_bits = total * 8 / all_params
    tables = to_bytes(size.tables, size.unit) if size.tables is not None else table_params * average_bits / 8
    mtp = to_bytes(size.mtp, size.unit) if size.mtp is not None else mtp_params * average_bits / 8
    transformer_bits = max(total - tables - mtp, 0.0) * 8 / transformer_params
    return Weights(total, size.unit, True, tables, mtp, transformer_bits)


LAYER_SPLIT_ENGINES = GGML_ENGINES
"""Engines that spread a model over devices by its layers only, the ggml ones: its default --split-mode layer, "split
layers and KV across GPUs (pipelined)" (its tensor mode is EXPERIMENTAL). llama.cpp reaches other hosts' devices through
its RPC backend, which spreads weights and KV over them (llamacpp-server-readme, llamacpp-rpc); Ollama has no
such backend, so on several nodes it has no plan at all (`plan.engine_gap`). A decoded token passes the stages in
turn; a prompt's micro-batches overlap across them (RPC devices advertise async compute and events, with which
llama.cpp's scheduler pipelines), so prefill keeps its share a node."""

LAYER_SPLIT_SOURCES = ("llamacpp-server-readme", "llamacpp-rpc")
"""The catalog sources of `LAYER_SPLIT_ENGINES`, which a plan split by layers lists (the second where each node is
a machine of its own, reached through the RPC backend)."""


def valid_parallelism(model: Model, nodes: int, recipe: Recipe | None, engine: str = "vllm",
                      machines: bool = False) -> tuple[int, int, str]:
    """(tp, pp, why) for one GPU per node. TP must divide the attention and KV heads; an engine that splits by
    layers only (`LAYER_SPLIT_ENGINES`) gets one pipeline stage a node. `machines`: each node is a machine of its
    own (unified memory), which llama.cpp reaches through its RPC backend."""
    if recipe is not None:
        return recipe.tp, recipe.pp, f"as the recipe sets it ({recipe.title})"
    if nodes > 1 and engine in LAYER_SPLIT_ENGINES:
        rpc = (" and reaches the other machines through its RPC backend, which its README calls a fragile proof of "
               "concept") if machines else ""
        return 1, nodes, (f"{engine} splits a model across devices by its layers and their KV (ggml's default "
                          f"--split-mode layer){rpc}, so one token passes the nodes one after another")
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
    """Activations, runtime and CUDA graphs (the parts in `reserve`)."""
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
    reserve: Reserve = DEFAULT_RESERVE
    """The reserve's parts."""
    weights_loaded: bool = False
    """weights_bytes is what the recipe's engine logged as loaded, not the stored size's share."""

    @property
    def runtime_bytes(self) -> float:
        """The runtime and activations as a view draws them: the reserve, except that beside a pinned KV
        cache vLLM skips its profile run and the activations come out of what the weights and the pin
        leave of its share (the fit step's words), so they never push vLLM past utilization x memory."""
        if self.kv_pinned_bytes is None or self.left_bytes < 0:
            return self.reserve_bytes
        return max(min(self.reserve_bytes, self.left_bytes - max(self.kv_bytes, 0.0)), 0.0)

    @property
    def free_bytes(self) -> float:
        """What neither the weights, the KV cache nor the runtime take of the usable memory."""
        return max(self.usable_bytes - self.weights_bytes - max(self.kv_bytes, 0.0) - self.runtime_bytes, 0.0)


def node_budget(hardware: Hardware, weights_per_node: float, utilization: float, kv_pinned_gib: float | None,
                reserve: Reserve = DEFAULT_RESERVE, weights_loaded: bool = False) -> Budget:
    """The memory budget of one node."""
    return Budget(*_budget(hardware, weights_per_node, utilization, kv_pinned_gib, reserve), reserve, weights_loaded)


def node_fits(hardware: Hardware, weights_per_node: float, utilization: float, kv_pinned_gib: float | None,
              reserve: Reserve = DEFAULT_RESERVE) -> bool:
    """`node_budget(...).fits`, without the record (the search for the nodes a build needs asks it often)."""
    return _budget(hardware, weights_per_node, utilization, kv_pinned_gib, reserve)[-1]


def _budget(hardware: Hardware, weights_per_node: float, utilization: float, kv_pinned_gib: float | None,
            reserve: Reserve) -> tuple[float, float, float, float, float | None, float, float, float, bool]:
    """The figures of a `Budget`, in its order."""
    usable = hardware.usable_memory_gib * GiB
    pinned = kv_pinned_gib * GiB if kv_pinned_gib is not None else None
    engine = utilization * usable
    left = engine - weights_per_node
    kept = reserve.total_bytes
    kv = pinned if pinned is not None else left - kept
    # A pin skips the profile run (the GB10 field report: pinning drops the activation reservation),
    # so only what is certainly allocated must fit beside it. One byte of slack: kv is engine -
    # weights - reserve, and adding them back can round up.
    needed = reserve.profiled_bytes if pinned is not None else kept
    fits = kv > 0 and weights_per_node + needed + kv <= engine + 1
    return usable, utilization, weights_per_node, kept, pinned, engine, left, kv, fits
