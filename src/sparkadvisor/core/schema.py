"""The catalog schema: hardware, models, builds, recipes, caveats and their sources.

This file is the one definition of each catalog field. Each table is a frozen stdlib
dataclass (`@record`); limits go in `checked(...)` (gt, ge, lt, le, min_length, pattern),
cross-field rules in `__post_init__` (raise ValueError). The runtime index is built from
these classes without pydantic; `core.validation` has pydantic check a changed catalog
against the same classes, and unknown keys are refused there, so a misspelt key is an
error rather than a silently ignored line. Lists are tuples, so a record is immutable.

Every table that holds numbers names its `source` (an id from `[sources]`); a figure
nobody has published is left out, and the app shows it as unknown. Sizes keep the unit
the source printed (GB = 10^9 bytes, GiB = 2^30 bytes), so the app can answer in the
unit the reader knows.
"""

from __future__ import annotations

import re
from typing import Literal

from sparkadvisor.core.formats import FORMATS
from sparkadvisor.core.records import checked, record
from sparkadvisor.core.workload import WorkloadKind

_MONTH = r"(0[1-9]|1[0-2])"
DATE = rf"^\d{{4}}-{_MONTH}-(0[1-9]|[12]\d|3[01])$"
MONTH_OR_DATE = rf"^\d{{4}}-{_MONTH}(-(0[1-9]|[12]\d|3[01]))?$"
REPO_PATH = r"^[A-Za-z0-9._][A-Za-z0-9._/+-]*$"
CONTAINER_PATH = r"^/[A-Za-z0-9._/+-]+$"
SHORT_ID = r"^[a-z0-9][a-z0-9.-]*$"
GITHUB_REPO = r"^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"
COMMIT = r"^[0-9a-f]{40}$"
_IMAGE_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REF = (r"^(?:(?:[A-Za-z0-9-]+\.)+[A-Za-z0-9-]+(?::[0-9]+)?/|localhost(?::[0-9]+)?/)?"
             rf"{_IMAGE_PART}(?:/{_IMAGE_PART})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?$")
"""A container image reference as Docker parses one: [REGISTRY/]NAME[:TAG][@sha256:DIGEST], the registry a host name
with a dot or a port (or localhost), the name lower-case path components."""
PATTERN_WORDS = {
    DATE: "a date written YYYY-MM-DD, in quotes",
    MONTH_OR_DATE: "a date written YYYY-MM-DD or YYYY-MM, in quotes",
    REPO_PATH: "a path inside the repository (letters, digits, . _ / + -, not starting with /)",
    CONTAINER_PATH: "an absolute path (starting with /; letters, digits, . _ / + -)",
    SHORT_ID: "lower-case letters, digits, dots and dashes, starting with a letter or digit",
    GITHUB_REPO: "a GitHub repository URL, https://github.com/OWNER/NAME",
    COMMIT: "a full commit id: 40 lower-case hex digits",
    IMAGE_REF: "a container image reference, [REGISTRY/]NAME[:TAG], e.g. vllm/vllm-openai:v0.28.0",
}
"""What each pattern a field must match is, in words: a problem says these, never the pattern."""

HF_REPO_ID = r"^[A-Za-z0-9_](?:[-.]?[A-Za-z0-9_])*/[A-Za-z0-9_](?:[-.]?[A-Za-z0-9_])*$"
"""A Hugging Face repo id, OWNER/NAME: letters, digits, `_`, and single `-` or `.` between them
(the hub refuses `--`, `..` and a name that starts or ends with `-` or `.`)."""
REPO_FIELDS = ("repo", "draft_repo")
"""The fields that hold a Hugging Face repo id (`core.catalog` words their pattern error)."""
_HUB_URL = re.compile(r"^https?://(?:www\.)?huggingface\.co/(?!datasets/|spaces/)([^/?#\s]+/[^/?#\s]+)/?$")


def repo_id_problem(text: str) -> str:
    """Why `text` is not a Hugging Face repo id, and what to give instead, in one sentence."""
    shown = repr(text if len(text) <= 80 else text[:77] + "...")
    url = _HUB_URL.match(text)
    if url and re.match(HF_REPO_ID, url.group(1)):
        return f"{shown} is a hub address, not a repo id; give the id alone, {url.group(1)}"
    return (f"{shown} is not a Hugging Face repo id; give it as OWNER/NAME (letters, digits and '_', with "
            "single '-' or '.' between them), e.g. openai/gpt-oss-120b")

SourceRef = str | tuple[str, ...]
"""One source id, or several, from the catalog's `[sources]` table."""

SizeUnit = Literal["GB", "GiB"]

CaveatKind = Literal[
    "prefix-caching-disabled",
    "prefix-caching-unreliable",
    "tool-calls-corrupted",
    "swap-required",
    "page-cache-drop",
    "custom-image",
    "patch-required",
    "eager-only",
    "memory-utilization-limit",
    "spec-decode-cache-miss",
    "slow-cold-load",
    "quality-loss",
    "tool-calls-disputed",
    "output-garbled",
    "server-crash",
    "slow-engine",
    "slow-decode",
]
"""The fixed vocabulary of caveats; `core.caveats` gives each kind its badge and meaning.
The core acts on some kinds (prefix caching disabled is a target miss for agents and
changes the first-token arithmetic; tool calls corrupted disqualifies the build for
agents); the rest are shown and exported as warnings. There is no catch-all kind: a
new kind of problem gets its own name and badge."""

Severity = Literal["info", "warning", "critical"]
"""How much a caveat matters: critical (red) changes the decision, warning (amber) needs
an action or a choice, info (dim) is worth knowing."""

Format = Literal[
    "nvfp4-compressed-tensors",
    "nvfp4-modelopt",
    "nvfp4",
    "mxfp4",
    "fp8",
    "bf16",
    "int8",
    "awq-int4",
    "gptq-int4",
    "int4-w4a16",
    "gguf-q4_0",
    "gguf-q4_k_s",
    "gguf-q4_k_m",
    "gguf-iq4_xs",
    "gguf-q5_k_m",
    "gguf-q6_k",
    "gguf-q8_0",
    "gguf-ud-iq1_s",
    "gguf-ud-iq1_m",
    "gguf-ud-iq2_xxs",
    "gguf-ud-iq3_xxs",
    "gguf-ud-q2_k_xl",
    "gguf-ud-q3_k_xl",
    "gguf-ud-q4_k_xl",
    "gguf-ud-q5_k_xl",
    "gguf-ud-q6_k_xl",
    "gguf-ud-q8_k_xl",
    "exl3",
]
"""Weight formats the catalog knows. `core.formats` holds the bits each one stores."""


@record
class Source:
    """A document a reader can open to check a number."""

    title: str = checked(min_length=1)
    """How a reader would cite it, e.g. "vLLM issue #54150"."""
    url: str | None = None
    """Where to open it. Only the seed article has no public address."""
    kind: Literal[
        "article", "model-card", "config", "repo", "issue", "blog", "docs", "spec-sheet", "benchmark", "bench"
    ] = "docs"
    """What sort of document it is ("bench": a `sparkadvisor bench` run on the user's own cluster)."""
    note: str = ""
    """Anything a reader should know about it (date read, which table)."""


# --- hardware -----------------------------------------------------------------


@record
class ComputePeaks:
    """Tensor throughput of one node, by precision, in TFLOPS (10^12 FLOP/s)."""

    fp4_tflops: float | None = checked(default=None, gt=0)
    """Dense FP4 (NVFP4/MXFP4) peak."""
    fp8_tflops: float | None = checked(default=None, gt=0)
    """Dense FP8 peak."""
    bf16_tflops: float | None = checked(default=None, gt=0)
    """Dense BF16 peak."""
    sparse: bool = False
    """True when the vendor quotes these with 2:1 structured sparsity (twice the dense rate)."""
    source: SourceRef
    """Where these peaks are published."""


@record
class Link:
    """The interconnect between nodes of a cluster."""

    name: str
    """What it is, e.g. "ConnectX-7, QSFP cable port to port"."""
    bandwidth_gb_s: float = checked(gt=0)
    """Collective bandwidth in GB/s (10^9 bytes per second) as measured or rated."""
    latency_us: float | None = checked(default=None, gt=0)
    """One small all-reduce across the link, in microseconds; None when unpublished."""
    source: SourceRef
    """Where the figures come from."""


@record
class Serving:
    """The engines known to serve models on a hardware without CUDA."""

    engines: tuple[str, ...] = checked(min_length=1)
    """Engine names as builds and recipes give them, e.g. "llama.cpp"."""
    note: str = ""
    """How they run there (which backend), and what is left out."""
    source: SourceRef
    """Where each engine says it supports this hardware."""


@record
class Hardware:
    """One kind of node. A cluster is `nodes` of these joined by `link`."""

    id: str = checked(min_length=1)
    """Short id used on the command line, e.g. "dgx-spark"."""
    name: str
    """Name as sold."""
    accelerator: str = ""
    """The chip, e.g. "GB10 Grace Blackwell"."""
    memory_gb: float = checked(gt=0)
    """Memory as sold, in GB."""
    usable_memory_gib: float = checked(gt=0)
    """Memory a serving engine can use per node, in GiB."""
    memory_bandwidth_gb_s: float = checked(gt=0)
    """Rated memory bandwidth in GB/s."""
    measured_bandwidth_gb_s: float | None = checked(default=None, gt=0)
    """A published read-bandwidth measurement in GB/s, when one exists."""
    unified_memory: bool = False
    """True when CPU and GPU share one pool (offloading to host frees nothing)."""
    cuda: bool = True
    """An NVIDIA GPU, which runs vLLM's CUDA images; false for Apple and AMD boxes (exports refuse them)."""
    max_nodes: int = checked(default=4, ge=1, le=64)
    """Largest cluster the advisor sweeps."""
    gpu_memory_utilization: float = checked(default=0.85, gt=0, le=1)
    """Default vLLM --gpu-memory-utilization for this hardware."""
    max_gpu_memory_utilization: float = checked(default=0.92, gt=0, le=1)
    """Highest value that is safe here (on GB10 higher starves the OS)."""
    compute: ComputePeaks | None = None
    """Tensor peaks, when published."""
    link: Link | None = None
    """The node interconnect; None for single-node hardware."""
    serving: Serving | None = None
    """The engines known to serve here; None on an NVIDIA GPU, where every engine of the catalog runs
    (and, without CUDA, none is known to)."""
    source: SourceRef
    """Where memory and bandwidth are published."""

    def __post_init__(self) -> None:
        if self.gpu_memory_utilization > self.max_gpu_memory_utilization:
            raise ValueError(f"gpu_memory_utilization {self.gpu_memory_utilization:g} is above "
                             f"max_gpu_memory_utilization {self.max_gpu_memory_utilization:g}")


# --- models -------------------------------------------------------------------


@record
class Params:
    """Parameter counts in billions."""

    total_b: float = checked(gt=0, le=100_000)
    """All transformer parameters (every expert), excluding per-token tables and MTP heads."""
    active_b: float | None = checked(default=None, gt=0, le=100_000)
    """Parameters read for one token (shared part plus the routed experts per token).
    Equal to total_b for a dense model; None when unpublished."""
    routed_experts: int | None = checked(default=None, ge=1)
    """MoE: routed experts per layer (n_routed_experts / num_experts)."""
    experts_per_token: int | None = checked(default=None, ge=1)
    """MoE: routed experts each token uses (num_experts_per_tok)."""
    source: SourceRef
    """Model card or config.json."""

    def __post_init__(self) -> None:
        if self.active_b is not None and self.active_b > self.total_b:
            raise ValueError(f"active_b {self.active_b:g} is more than total_b {self.total_b:g}; the active "
                             "parameters are part of the total")
        if self.routed_experts and self.experts_per_token and self.experts_per_token > self.routed_experts:
            raise ValueError(f"experts_per_token {self.experts_per_token} is more than routed_experts "
                             f"{self.routed_experts}")


@record
class LinearAttention:
    """Layers that keep a fixed state per sequence instead of a KV entry per token."""

    kind: Literal["gated-deltanet", "kda", "mamba2"]
    """Gated DeltaNet (Qwen3-Next), Kimi Delta Attention (GLM-5.3-Flash) or Mamba-2 (Nemotron-H)."""
    layers: int = checked(ge=1)
    """How many decoder layers are of this kind."""
    num_key_heads: int | None = checked(default=None, ge=1)
    """Delta-rule kinds: linear_num_key_heads. Mamba-2: n_groups."""
    num_value_heads: int = checked(ge=1)
    """Gated DeltaNet: linear_num_value_heads. Mamba-2: mamba_num_heads."""
    key_head_dim: int = checked(ge=1)
    """Gated DeltaNet: linear_key_head_dim. Mamba-2: ssm_state_size."""
    value_head_dim: int = checked(ge=1)
    """Gated DeltaNet: linear_value_head_dim. Mamba-2: mamba_head_dim."""
    conv_kernel: int = checked(default=4, ge=1)
    """Width of the short convolution (its state holds kernel - 1 steps)."""
    source: SourceRef
    """config.json."""


@record
class CompressedLayers:
    """Layers that cache one compressed row per `ratio` tokens (DeepSeek-V4's CSA and HCA),
    beside the raw sliding window they may also keep (counted in `sliding_layers`)."""

    layers: int = checked(ge=1)
    """How many decoder layers compress at this ratio."""
    ratio: int = checked(ge=1)
    """Tokens folded into one cached row (compress_ratios in config.json)."""
    source: SourceRef
    """config.json or the model card."""
    indexed: bool = False
    """An indexer picks `sparse_topk` of the rows for each query and caches its own key per row."""


@record
class Attention:
    """What config.json says about attention: enough to compute KV bytes per token."""

    design: Literal["gqa", "mha", "mla"]
    """Grouped-query (or multi-head) attention, or DeepSeek-style multi-head latent attention."""
    layers: int = checked(ge=1)
    """All decoder layers (num_hidden_layers)."""
    hidden_size: int | None = checked(default=None, ge=1)
    """Width of the residual stream (what an all-reduce moves per token per layer)."""
    heads: int | None = checked(default=None, ge=1)
    """Query heads (num_attention_heads)."""
    kv_heads: int | None = checked(default=None, ge=1)
    """KV heads for GQA/MHA (num_key_value_heads)."""
    head_dim: int | None = checked(default=None, ge=1)
    """Per-head dimension of K and V for GQA/MHA; for MLA, v_head_dim (prefill arithmetic)."""
    kv_lora_rank: int | None = checked(default=None, ge=1)
    """MLA: width of the compressed latent cached per token."""
    qk_rope_head_dim: int | None = checked(default=None, ge=0)
    """MLA: width of the decoupled RoPE key cached beside the latent."""
    global_kv_heads: int | None = checked(default=None, ge=1)
    """KV heads of the full-attention layers when they differ from the sliding layers'
    (Gemma 4: num_global_key_value_heads); None: kv_heads on every layer."""
    global_head_dim: int | None = checked(default=None, ge=1)
    """Per-head dimension of the full-attention layers' K and V when it differs (Gemma 4:
    global_head_dim); None: head_dim on every layer."""
    global_k_eq_v: bool = False
    """The full-attention layers have no V projection: V is made from K's projection (Gemma 4:
    attention_k_eq_v). vLLM still caches K and V apart (K gets k_norm and RoPE, V only v_norm),
    so this halves no KV; it is recorded so the explanation can say so."""
    sliding_window: int | None = checked(default=None, ge=1)
    """Window of the sliding-window layers, in tokens."""
    sliding_layers: int = checked(default=0, ge=0)
    """How many layers use the sliding window (they hold at most the window)."""
    indexer_head_dim: int | None = checked(default=None, ge=1)
    """Sparse-attention indexer (DeepSeek DSA, GLM): key width cached per token per full layer."""
    sparse_topk: int | None = checked(default=None, ge=1)
    """Sparse attention: tokens each query attends to (index_topk), bounding prefill attention."""
    indexer_heads: int | None = checked(default=None, ge=1)
    """Sparse-attention indexer heads (index_n_heads): each query scores every earlier indexer key
    with this many heads of `indexer_head_dim`, the quadratic part of a sparse model's prefill.
    None: unpublished (the scoring is then not counted, and `show` says so)."""
    indexer_pool: int = checked(default=1, ge=1)
    """Tokens folded into one indexer key on the full-attention layers (GLM-5.x index_kpool: the
    indexer scores pools of adjacent tokens); 1: a key per token (DeepSeek-V3.2)."""
    linear: LinearAttention | None = None
    """Linear-attention or Mamba layers, when the model is a hybrid."""
    ffn_layers: int = checked(default=0, ge=0)
    """Blocks with only a feed-forward or MoE part and no token mixer (Nemotron-H's E and - blocks):
    they keep no KV and no state."""
    compressed: tuple[CompressedLayers, ...] = ()
    """Layers that cache compressed rows instead of (or beside) every token (DeepSeek-V4)."""
    source: SourceRef
    """config.json."""

    def __post_init__(self) -> None:
        if self.heads and self.kv_heads and self.kv_heads > self.heads:
            raise ValueError(f"kv_heads {self.kv_heads} is more than heads {self.heads}; each KV head serves "
                             "one or more query heads")
        global_shape = self.global_kv_heads is not None or self.global_head_dim is not None or self.global_k_eq_v
        if global_shape and self.design == "mla":
            raise ValueError("global_kv_heads, global_head_dim and global_k_eq_v describe GQA/MHA full-attention "
                             "layers; an MLA model caches its latent (kv_lora_rank) instead")
        if global_shape and (self.kv_heads is None or self.head_dim is None):
            raise ValueError("global_kv_heads, global_head_dim and global_k_eq_v need kv_heads and head_dim too "
                             "(the sliding layers' shape)")
        if self.heads and self.global_kv_heads and self.global_kv_heads > self.heads:
            raise ValueError(f"global_kv_heads {self.global_kv_heads} is more than heads {self.heads}; each KV head "
                             "serves one or more query heads")
        special = self.sliding_layers + (self.linear.layers if self.linear else 0) + self.ffn_layers
        if special > self.layers:
            raise ValueError(f"sliding_layers + linear.layers + ffn_layers = {special} but layers = {self.layers}; "
                             "the sliding, linear and feed-forward-only layers are part of all the layers")
        compressed = sum(c.layers for c in self.compressed)
        if compressed > self.layers:
            raise ValueError(f"compressed layers add up to {compressed} but layers = {self.layers}")


@record
class SparseIndexer:
    """A sparse-attention (DSA) lightning indexer, stated where `[models.attention]` cannot express the
    rest of the model's KV layout: vLLM still reserves the indexer's prefill buffer at max-model-len."""

    source: SourceRef
    """Where the indexer is stated (a config, a recipe's engine log or notes)."""


@record
class TokenTable:
    """A per-token lookup table (PLE, Engram) read on every token but not counted as active."""

    kind: Literal["ple", "engram"]
    """Per-layer embeddings or an n-gram memory table."""
    params_b: float = checked(gt=0)
    """Size in billions of parameters."""
    source: SourceRef
    """Where the size is published."""


@record
class MtpHead:
    """Multi-token-prediction layers shipped with the model for speculative decoding."""

    layers: int | None = checked(default=None, ge=1)
    """num_nextn_predict_layers, when known."""
    params_b: float | None = checked(default=None, gt=0)
    """Size in billions of parameters, when published."""
    source: SourceRef
    """config.json or model card."""


@record
class Context:
    """Context lengths in tokens."""

    native_tokens: int = checked(ge=1)
    """Trained context (max_position_embeddings without scaling)."""
    extended_tokens: int | None = checked(default=None, ge=1)
    """With RoPE scaling such as YaRN, when the card gives it; a recipe enables it by setting
    max_model_len above the native context."""
    extended_method: str | None = None
    """How the extended context is reached, e.g. "YaRN factor 4"."""
    source: SourceRef
    """config.json or model card."""

    def __post_init__(self) -> None:
        if self.extended_tokens is not None and self.extended_tokens <= self.native_tokens:
            raise ValueError(f"extended_tokens {self.extended_tokens} should be above native_tokens "
                             f"{self.native_tokens} (leave it out when there is no extension)")

    @property
    def longest_tokens(self) -> int:
        """The longest context the model can serve: extended when it has one, else native."""
        return self.extended_tokens or self.native_tokens


@record
class Capability:
    """A benchmark score set beside a frontier reference on the same table."""

    benchmark: str
    """Benchmark name and setting, e.g. "Code Bench inside Claude Code 2.1.207"."""
    score: float
    """The model's score."""
    reference_model: str
    """The frontier model it is compared with on the same table."""
    reference_score: float = checked(gt=0)
    """The reference model's score on that table."""
    workloads: tuple[WorkloadKind, ...] = ("agentic", "chat")
    """Workloads the benchmark speaks for."""
    harness: str | None = None
    """The agent harness the table was run in, e.g. "Claude Code 2.1.207" or "OpenHands". For the
    agentic (Claude Code) workload a score run inside Claude Code ranks first within a capability tier."""
    reported_by: Literal["developer", "leaderboard", "third-party"] = "developer"
    """Who ran it: the model's developer (its card or blog), a public leaderboard, or someone else."""
    date: str = checked(pattern=MONTH_OR_DATE)
    """When the table was published, YYYY-MM-DD (or YYYY-MM)."""
    source: SourceRef
    """The card, blog or leaderboard page holding the table."""
    reference_source: SourceRef | None = None
    """Set only when the model's own table has no frontier column: the separate table (a benchmark's
    official leaderboard, or the frontier vendor's own announcement for the same benchmark) that
    `reference_score` comes from. The share then compares numbers from two tables, and says so."""

    @property
    def reference_elsewhere(self) -> bool:
        """The reference score comes from another table than the model's score."""
        return self.reference_source is not None

    @property
    def in_claude_code(self) -> bool:
        """Run inside Claude Code, the harness the agentic workload is for."""
        return (self.harness or "").lower().startswith("claude code")


@record
class Model:
    """An open model, as its config.json and model card describe it."""

    id: str = checked(min_length=1)
    """Short id, e.g. "glm-5.3-flash"."""
    name: str
    """Display name."""
    family: str
    """Model family, e.g. "GLM", "Qwen3", "gpt-oss"."""
    repo: str | None = checked(default=None, pattern=HF_REPO_ID)
    """The original Hugging Face repo id, when one exists."""
    released: str | None = None
    """Release date, YYYY-MM-DD."""
    license: str | None = None
    """Licence name."""
    modalities: tuple[str, ...] = ("text",)
    """Input modalities."""
    params: Params
    """Parameter counts."""
    attention: Attention | None = None
    """Attention facts; None when config.json is not public (KV then comes from a measured pool)."""
    sparse_indexer: SparseIndexer | None = None
    """A DSA indexer stated apart from `attention` (set only where `attention` is None)."""
    tables: tuple[TokenTable, ...] = ()
    """Per-token tables (PLE, Engram)."""
    mtp: MtpHead | None = None
    """MTP heads, when the model ships them."""
    context: Context | None = None
    """Context lengths."""
    capability: tuple[Capability, ...] = ()
    """Sourced benchmark scores against a frontier reference."""
    capability_none_published: str | None = None
    """When no score is published: what was looked for and where, e.g. "the model card and
    the release blog give no coding or agentic benchmark (read 2026-09)"."""
    source: SourceRef
    """Where the name, licence and release facts come from."""


# --- builds -------------------------------------------------------------------


@record
class Size:
    """Size on disk as the source prints it."""

    value: float = checked(gt=0, le=1_000_000)
    """The number as printed."""
    unit: SizeUnit
    """GB (10^9 bytes) or GiB (2^30 bytes), as printed."""
    mtp: float | None = checked(default=None, ge=0)
    """Part of the size that is MTP heads, in the same unit, when a source splits it out."""
    tables: float | None = checked(default=None, ge=0)
    """Part of the size that is per-token tables (PLE, Engram), in the same unit."""
    note: str = ""
    """Where sources disagree, or how a part was converted."""
    source: SourceRef
    """The repo's file listing or model card."""

    def __post_init__(self) -> None:
        parts = (self.mtp or 0) + (self.tables or 0)
        if parts >= self.value:
            raise ValueError(f"mtp + tables = {parts:g} {self.unit} but value = {self.value:g} {self.unit}; the "
                             "parts are inside the whole size, so they must add up to less than it")


@record
class DecodeRead:
    """What one decode token reads, counted tensor by tensor (config.json shapes at the checkpoint's
    stored precisions), split the way an engine's tensor parallelism splits it. Where a build has one,
    the speed model's weights term reads it (on that engine) instead of active parameters x average
    stored bits; it also bounds what a step without speculation can reach, so a measurement above the
    bound must speculate."""

    split_gb: float = checked(gt=0)
    """GB per token that tensor parallelism divides across the ranks (column and row-parallel
    projections, routed experts, the vocabulary-parallel LM head)."""
    replicated_gb: float = checked(default=0.0, ge=0)
    """GB per token every rank reads whole (projections the engine keeps replicated)."""
    routed_gb: float | None = checked(default=None, gt=0)
    """Of `split_gb`, the routed experts one token reads (experts_per_token per layer), when counted
    apart: a pass verifying several tokens reads the union of the experts they route to. For a dense model,
    the projections stored in the build's quantized format (the part that pays its dequantization; every
    token reads all of it)."""
    engine: str = "vllm"
    """Whose model code decides which projections are split and which replicated."""
    note: str = ""
    """What the count includes, in a sentence."""
    source: SourceRef
    """config.json for the shapes, the checkpoint's quantization, the engine's model code."""

    def __post_init__(self) -> None:
        if self.routed_gb is not None and self.routed_gb > self.split_gb:
            raise ValueError(f"routed_gb {self.routed_gb:g} is more than split_gb {self.split_gb:g}")

    def per_rank_gb(self, tp: int) -> float:
        """GB one rank reads per token at tensor parallelism `tp`."""
        return self.split_gb / tp + self.replicated_gb


@record
class Build:
    """A real set of weights on the hub: one model in one format."""

    id: str = checked(min_length=1)
    """Short id, e.g. "glm-5.3-flash-nvfp4-redhat"."""
    model: str
    """Id of the model it is a build of."""
    repo: str = checked(pattern=HF_REPO_ID)
    """Hugging Face repo id."""
    format: Format
    """Weight format."""
    quantizer: str = ""
    """Who quantized it and with what tool, e.g. "NVIDIA ModelOpt"."""
    size: Size | None = None
    """Size on disk as published; None means the size is derived from parameters and format."""
    engines: tuple[str, ...] = ("vllm",)
    """Engines known to load it."""
    caveats: tuple[str, ...] = ()
    """Ids of caveats that apply to this build on every recipe."""
    bits_per_weight: float | None = checked(default=None, gt=0, le=32)
    """Average stored bits per weight when the build states it (EXL3 "4.0bpw")."""
    decode_read: DecodeRead | None = None
    """What a decode token reads, counted tensor by tensor, when someone has counted it."""
    source: SourceRef
    """The repo or its model card."""

    def __post_init__(self) -> None:
        if FORMATS[self.format].mix_varies_by_model and self.size is None and self.bits_per_weight is None:
            raise ValueError(f"format {self.format} picks its types per model, so no size can be derived; "
                             "give [builds.size] as the repo lists the file, or bits_per_weight")


# --- recipes ------------------------------------------------------------------


@record
class Speculative:
    """Speculative decoding as a recipe configures it."""

    method: str
    """vLLM method name: mtp, dflash, eagle3, draft_model, ngram, ..."""
    draft_repo: str | None = checked(default=None, pattern=HF_REPO_ID)
    """Draft model repo, when the method uses one."""
    draft_size_gb: float | None = checked(default=None, gt=0)
    """Draft model size in GB."""
    tokens_per_pass: int = checked(ge=1)
    """Tokens proposed per pass of the big model (num_speculative_tokens)."""
    acceptance: float | None = checked(default=None, gt=0, lt=1)
    """Measured share of proposed tokens accepted (vLLM's accepted / drafted), when the recipe reports it."""
    assumed: str = ""
    """Why speculation is assumed when the recipe's own source does not state it (e.g. the checkpoint's
    default serving mode); "" when the recipe states it."""
    source: SourceRef
    """The recipe, or the sources that establish the assumed mode."""


@record
class PatchFile:
    """One file a recipe bind-mounts over the image's own."""

    path: str = checked(pattern=REPO_PATH)
    """Where it lives in the recipe repository, relative to its root."""
    target: str = checked(pattern=CONTAINER_PATH)
    """The absolute path inside the container it replaces."""


@record
class Patch:
    """A patch to vLLM a recipe applies: where to get it and what breaks without it."""

    id: str = checked(pattern=SHORT_ID)
    """Short name, used in messages and file names."""
    title: str = checked(min_length=1)
    """What it is, in a few words."""
    repo: str = checked(pattern=GITHUB_REPO)
    """The recipe repository to clone."""
    commit: str | None = checked(default=None, pattern=COMMIT)
    """The commit the files were read at; None when nobody pinned one (the script then takes RECIPE_DIR as is)."""
    files: tuple[PatchFile, ...] = checked(min_length=1)
    """The files it bind-mounts."""
    env: dict[str, str] = checked(default_factory=dict)
    """Environment the patched code reads (e.g. a switch that turns it on)."""
    breaks: str = checked(min_length=1)
    """What happens without it, e.g. "the engine dies on any decode past ~24K context"."""
    fails_past_context_tokens: int | None = checked(default=None, ge=1)
    """Without it the engine fails once a sequence passes this many tokens (approximate, from the source)."""
    fit_depends: bool = False
    """The plan fits only with it (e.g. a table kept on disk instead of in memory)."""
    source: SourceRef
    """Where the patch and its failure are described."""

    def __post_init__(self) -> None:
        for name in self.env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"env name {name!r} is not a shell variable name")


@record
class Requirements:
    """What a recipe needs of the machine beyond vLLM itself."""

    swap: bool = False
    """Swap must be on (with swappiness=0) to survive the loading peak."""
    drop_page_cache: bool = False
    """`echo 3 > /proc/sys/vm/drop_caches` before loading."""
    patches: tuple[Patch, ...] = ()
    """Patches to vLLM or kernels the recipe applies."""


MetricName = Literal[
    "decode_tok_s",
    "aggregate_tok_s",
    "kv_pool_tokens",
    "prefill_tok_s",
    "cold_load_s",
    "ttft_s",
]


@record
class Measurement:
    """A figure someone measured running a recipe."""

    metric: MetricName
    """What was measured."""
    value: float = checked(gt=0)
    """The figure (a median or the midpoint of a published range)."""
    low: float | None = checked(default=None, gt=0)
    """Lower end of a published range."""
    high: float | None = checked(default=None, gt=0)
    """Upper end of a published range."""
    spread: float | None = checked(default=None, ge=0)
    """A published plus-or-minus (one sigma)."""
    streams: int = checked(default=1, ge=1)
    """Concurrent requests during the measurement."""
    context_tokens: int | None = checked(default=None, ge=1)
    """Context length during the measurement, when stated: for decode, the tokens in the cache while
    decoding; for prefill, the prompt length."""
    depth_tokens: int | None = checked(default=None, ge=0)
    """Tokens already cached before the measured prompt is prefilled (llama-bench `-d`): the prompt
    attends to these as well as to itself."""
    chunk_tokens: int | None = checked(default=None, ge=1)
    """Prompt tokens computed per forward pass during a prefill measurement, when its source states
    it (llama-bench `-ub`, vLLM `--max-num-batched-tokens`): each pass reads every weight once."""
    enforce_eager: bool | None = None
    """This run's execution mode when it differs from its recipe's (True: without CUDA graphs)."""
    acceptance: float | None = checked(default=None, gt=0, lt=1)
    """This run's measured share of drafted tokens accepted, when it differs from the recipe's
    (acceptance falls with concurrency and with less predictable prompts)."""
    kv_gib: float | None = checked(default=None, gt=0)
    """For a KV pool: the KV cache memory per node it was measured in, in GiB, when stated."""
    kv_pinned_gib: float | None = checked(default=None, gt=0)
    """For a KV pool: this run's --kv-cache-memory pin per node, in GiB, when it differs from its
    recipe's (the pool is then compared at this pin, not at the recipe's)."""
    cached_tokens: int | None = checked(default=None, ge=0)
    """For a first token (ttft_s): prompt tokens vLLM's prefix-cache counters say were reused."""
    note: str = ""
    """Conditions in a few words."""
    source: SourceRef
    """Where it was published."""

    def __post_init__(self) -> None:
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low {self.low:g} is above high {self.high:g}")
        if self.low is not None and self.value < self.low or self.high is not None and self.value > self.high:
            raise ValueError(f"value {self.value:g} lies outside low-high ({self.low}-{self.high})")
        if self.kv_pinned_gib is not None and self.metric != "kv_pool_tokens":
            raise ValueError("kv_pinned_gib is for a kv_pool_tokens measurement")


@record
class LoggedReserve:
    """What vLLM held per node beside the weights as loaded and the KV cache in logged boots of a recipe's
    mode (other boots than the one whose pool the recipe reports), in the parts vLLM's memory profiler
    adds: gpu_worker.determine_available_memory keeps the profile run's peak (activations and non-torch
    memory) and, since v0.21, its CUDA graph estimate out of gpu-memory-utilization x memory."""

    profile_gib: float = checked(gt=0)
    """The profile run's activations and non-torch memory per node: that boot's gpu-memory-utilization x
    memory - weights as loaded - its logged KV memory - the indexer's prefill buffer (vLLM's rule, added
    apart so it follows max-model-len) - the CUDA graphs below; with several boots, the mean of theirs."""
    cuda_graphs_gib: float | None = checked(default=None, ge=0)
    """CUDA graph memory per node (target and drafter) in the recipe's cudagraph mode, when a log of this
    model gives it (with several boots, the mean of theirs); else the general figure."""
    boots: int = checked(default=1, ge=1)
    """How many logged boots of the recipe's flags the figures are the mean of, each boot's profile run
    beside its own graphs (GB10 boots of the same flags differ: vLLM measures what it holds as drops in
    torch.cuda.mem_get_info(), which on a GB10 reports the host's MemFree, so the page cache moves them)."""
    batched_tokens: int | None = checked(default=None, ge=1)
    """--max-num-batched-tokens of the logged boot, when it differs from the recipe's (the profile run's
    activations grow with it, by an amount no log here gives)."""
    note: str = ""
    """Which boots, and their figures."""
    source: SourceRef
    """The logs."""


@record
class Recipe:
    """A community configuration that runs a build on a number of nodes."""

    id: str = checked(min_length=1)
    """Short id."""
    build: str
    """Id of the build it runs."""
    title: str
    """Who published it and what it is."""
    hardware: str = "dgx-spark"
    """Id of the hardware it was run on."""
    engine: str = "vllm"
    """Serving engine."""
    image: str | None = checked(default=None, pattern=IMAGE_REF)
    """Container image."""
    nodes: int = checked(ge=1)
    """Nodes it runs on."""
    tp: int = checked(default=1, ge=1)
    """Tensor-parallel size."""
    pp: int = checked(default=1, ge=1)
    """Pipeline-parallel size."""
    gpu_memory_utilization: float | None = checked(default=None, gt=0, le=1)
    """--gpu-memory-utilization."""
    kv_cache_gib: float | None = checked(default=None, gt=0)
    """KV cache pinned per node with --kv-cache-memory-bytes, in GiB."""
    weights_loaded_gib: float | None = checked(default=None, gt=0)
    """Weights per rank as the engine logged them after loading, in GiB, when the recipe publishes it
    (it differs from the stored size's share where layers are held at another precision, or a drafter
    or vision encoder loads beside the model)."""
    cold_compile: bool = False
    """The recipe's own launch keeps no vLLM compile cache between starts (a fresh container without
    VLLM_CACHE_ROOT on a volume), so every start compiles cold: vLLM then charges torch.compile's and
    Triton's temporary memory to its profile run and sizes the KV cache smaller by an amount no source gives
    per model (vllm-54122). Its logged pools are a cold start's; the pool predicted is a warm start's, which
    sparkadvisor's exports get (they keep the cache)."""
    reserve: LoggedReserve | None = None
    """What vLLM held beside weights and KV in other logged boots of this recipe's flags, when one is
    published (else the general figures)."""
    kv_cache_dtype: str = "auto"
    """--kv-cache-dtype."""
    max_model_len: int | None = checked(default=None, ge=1)
    """--max-model-len."""
    block_size: int | None = checked(default=None, ge=1)
    """--block-size."""
    enforce_eager: bool = False
    """--enforce-eager: no CUDA graphs, a launch cost on every kernel."""
    cudagraph_mode: str | None = None
    """compilation-config cudagraph_mode, e.g. FULL_DECODE_ONLY."""
    speculative: Speculative | None = None
    """Speculative decoding, when configured."""
    prefix_caching: bool = True
    """False when the recipe disables prefix caching."""
    benchmark: bool = False
    """A benchmark's test configuration rather than one to serve with (for example prefix caching off to time
    raw prefill, or a memory setting above the safe one): its measurements feed the speed model's fit,
    `fidelity` and `show`, but a plan follows it only where `--recipe` names it."""
    tool_call_parser: str | None = None
    """--tool-call-parser."""
    reasoning_parser: str | None = None
    """--reasoning-parser."""
    streams_tables: bool = False
    """The per-token tables are loaded in parts rather than held whole."""
    requires: Requirements = Requirements()
    """Machine requirements."""
    extra_args: tuple[str, ...] = ()
    """Other vllm serve arguments the recipe passes, verbatim."""
    decode_read: DecodeRead | None = None
    """What a decode token reads where this recipe's launch loads another layout than the checkpoint stores
    (an engine build that quantizes attention and the LM head at load, say); it stands for the build's
    `decode_read` under this recipe."""
    caveats: tuple[str, ...] = ()
    """Ids of caveats specific to this recipe."""
    measurements: tuple[Measurement, ...] = ()
    """What the author measured."""
    source: SourceRef
    """The recipe's README or repo."""


# --- caveats ------------------------------------------------------------------


@record
class Caveat:
    """A known problem that changes a decision."""

    id: str = checked(min_length=1)
    """Short id."""
    kind: CaveatKind
    """What kind of problem it is."""
    severity: Severity
    """How much it matters: critical, warning or info."""
    hurts: tuple[WorkloadKind, ...] = ()
    """Workloads it makes worse."""
    disqualifies: tuple[WorkloadKind, ...] = ()
    """Workloads for which it rules the build out."""
    explanation: str = checked(min_length=1)
    """One sentence a person can act on."""
    cite: str | None = None
    """How a reason line cites it in a few characters, e.g. "vLLM #54173"."""
    engines: tuple[str, ...] = ()
    """The engines it concerns, where it concerns some only: a plan on another engine does not carry it, and a
    slow-engine caveat makes the speeds of a plan on one of these bounds. Empty: every engine."""
    source: SourceRef
    """Issue, README or model card."""


@record
class Catalog:
    """The whole catalog: what `catalog.toml` and user catalogs hold."""

    schema_version: Literal[1] = 1
    """Format version of this file."""
    catalog_date: str | None = checked(default=None, pattern=DATE)
    """When the catalog was last curated, YYYY-MM-DD: `catalog info` shows it, and `catalog update`
    installs a downloaded catalog only when it is at least as new as the one in use."""
    sources: dict[str, Source] = checked(default_factory=dict)
    """Every document a number comes from, by id."""
    hardware: tuple[Hardware, ...] = ()
    """Node types."""
    models: tuple[Model, ...] = ()
    """Models."""
    builds: tuple[Build, ...] = ()
    """Builds of the models."""
    recipes: tuple[Recipe, ...] = ()
    """Community recipes for builds."""
    caveats: tuple[Caveat, ...] = ()
    """Known problems, referenced by builds and recipes."""
