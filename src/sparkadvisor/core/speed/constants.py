"""The free constants of the speed model (`SpeedConstants`) and their starting values: the hardware's
own read test, link latency and tensor peaks where published, else round assumptions shown as
"assumed" until the catalog's measurements replace them. The rates are each engine's own where it
has measurements (core.calibration).
"""

from __future__ import annotations

from dataclasses import field

from sparkadvisor.core.records import record
from sparkadvisor.core.schema import Hardware

DEFAULT_BANDWIDTH_FRACTION = 0.8
"""Share of rated bandwidth a decode step achieves when the hardware has no read test."""

ACTIVATION_BYTES = 2
"""Hidden states cross the link in bf16."""

MIN_BAND = 0.10
"""Narrowest relative range: the article's run-to-run sigma (57.54 +/- 5.61 tok/s, ~10%)."""

# Starting values of the constants calibration fits (core.calibration). Each is a round
# assumption, shown as "assumed" in `show`, until the catalog's own measurements replace it;
# a hardware profile without measurements keeps them.

ASSUMED_FIXED_MS = 2.0
"""Fixed cost of a decode step, ms: the scheduler and sampling."""

ASSUMED_LAYER_MS = 0.05
"""Fixed cost per layer with CUDA graphs, ms: the tails of ~10 kernels a layer."""

ASSUMED_EAGER_MS_PER_LAYER = 0.5
"""Extra cost per layer without CUDA graphs, ms: ~100 launches from Python at ~5 us each."""

ASSUMED_SPEC_MS_PER_STEP = 1.5
"""Cost of one drafter step, ms: its launches and the host sync of rejection sampling."""

ASSUMED_KV_MS_PER_GB = 5.0
"""Attention reads KV at ~200 GB/s: flash-decoding kernels run below the weights' GEMV rate."""

ASSUMED_COMPUTE_MS_PER_GFLOP = 0.03
"""~33 TFLOP/s of decode GEMM for tokens batched in one step."""

ASSUMED_ALLREDUCE_US = 20.0
"""One small all-reduce between two nodes, us, when the link's latency is unpublished."""

ASSUMED_ACCEPTANCE = 0.6
"""Share of drafted tokens accepted when a recipe does not report it."""

ASSUMED_EXPERT_SPREAD = 1.0
"""Routing as independent uniform draws over all experts, until batched measurements say less."""

ASSUMED_PREFILL_MFU = 0.3
"""Share of the dense tensor peak prefill reaches before any measurement calibrates it."""

ASSUMED_EXPERT_PREFILL_FACTOR = 1.5
"""Expert GEMMs are smaller than dense ones and run at ~2/3 of their efficiency in prefill."""

ASSUMED_BAND = 0.3
"""Relative half-width of a range before the model's own errors size it."""

PRECISIONS = ("fp4", "fp8", "int8", "bf16")
"""Compute precisions of the tensor paths prefill can take (formats.FormatInfo.low_precision_compute)."""


@record(kw_only=False)
class SpeedConstants:
    """The free constants of the speed model for one hardware profile and engine."""

    engine: str
    """The serving engine these constants describe (vllm, llama.cpp, sglang, ...)."""
    bandwidth_fraction: float
    """Effective / rated memory bandwidth of a weight read (the published read test where there is one)."""
    weight_penalty: dict[str, float]
    """Extra share of the weight read's time a format's dequantization costs, by `weight_class`."""
    kv_ms_per_gb: float
    """Milliseconds the attention kernel takes per GB of KV it reads."""
    compute_ms_per_gflop: float
    """Milliseconds per GFLOP of the decode GEMMs (what bounds a large batch)."""
    fixed_ms: float
    """Fixed cost of one decode step (scheduler, sampling), in ms."""
    layer_ms: float
    """Fixed cost per layer with CUDA graphs, in ms."""
    eager_ms_per_layer: float
    """Extra cost per layer without CUDA graphs (a launch per kernel), in ms."""
    spec_ms_per_step: float
    """Cost of one drafter step in a speculative pass, in ms."""
    allreduce_us: float
    """Latency of one small all-reduce between two nodes, in microseconds."""
    link_gb_s: float | None
    """Collective bandwidth of the node link, GB/s; None for single-node hardware."""
    acceptance: float
    """Share of proposed tokens accepted (accepted / drafted), when a recipe does not say."""
    expert_spread: float
    """Share of the experts a batch's routing spreads over (1 = independent uniform draws)."""
    prefill_ms_per_gflop: dict[str, float | None]
    """Milliseconds per GFLOP of prefill GEMM by compute precision (None: no rate)."""
    expert_prefill_factor: float
    """How many dense FLOPs an expert FLOP costs in prefill."""
    prefill_attention_ms_per_gflop: float
    """Milliseconds per GFLOP of prefill attention."""
    prefill_kv_ms_per_gb: float
    """Milliseconds per GB of cached K/V a prompt token's attention attends to: 1 / (query tile x
    effective bandwidth), the kernel streaming the cache once per tile of queries."""
    prefill_weight_ms_per_gb: float
    """Milliseconds per GB of weights streamed once per prefill chunk: the published read test
    (not fitted)."""
    decode_band: float
    """How far the single-stream range reaches above the expected figure: high = expected x (1 + band)."""
    aggregate_band: float
    """The same for several streams."""
    prefill_band: float
    """The same for prefill."""
    decode_measurements: int = 0
    """Decode measurements the decode constants were fitted to (0: assumed)."""
    prefill_measurements: int = 0
    """Prefill measurements the prefill rates were fitted to."""
    basis: dict[str, str] = field(default_factory=dict)
    """For each constant, where it comes from ("assumed", "read test", "fitted to 3 measurements")."""
    decode_band_below: float | None = None
    """How far the single-stream range reaches below it: low = expected / (1 + below); None: as far
    as above (a range from the model's errors leans the way they do: calibration.band_from)."""
    aggregate_band_below: float | None = None
    """The same for several streams."""
    prefill_band_below: float | None = None
    """The same for prefill."""
    drafter_acceptance: dict[str, float] = field(default_factory=dict)
    """The median acceptance other recipes published for each drafter (`decode.drafter_key`): a recipe
    that does not publish its own takes its drafter's before the median over every drafter."""

    def acceptance_for(self, drafter: str) -> float:
        """Share of proposed tokens accepted for a recipe of `drafter` that does not publish its own."""
        return self.drafter_acceptance.get(drafter, self.acceptance)

    def decode_range(self, streams: int) -> tuple[float, float]:
        """(below, above) of the decode range for `streams` sequences."""
        if streams == 1:
            return _sides(self.decode_band_below, self.decode_band)
        return _sides(self.aggregate_band_below, self.aggregate_band)

    @property
    def prefill_sides(self) -> tuple[float, float]:
        """(below, above) of the prefill range."""
        return _sides(self.prefill_band_below, self.prefill_band)

    @property
    def prefill_flops_per_node(self) -> float | None:
        """The BF16 prefill rate as FLOP/s of one node (a summary figure)."""
        rate = self.prefill_ms_per_gflop.get("bf16")
        return 1e12 / rate if rate else None


def _sides(below: float | None, above: float) -> tuple[float, float]:
    return (above if below is None else below), above


def default_constants(hardware: Hardware, engine: str = "vllm") -> SpeedConstants:
    """Constants before calibration: the hardware's own read test and link latency where
    published, otherwise round assumptions that the catalog's measurements replace."""
    basis = {k: "assumed" for k in ("weight_penalty", "kv_ms_per_gb", "compute_ms_per_gflop", "fixed_ms",
                                    "layer_ms", "eager_ms_per_layer", "spec_ms_per_step", "acceptance",
                                    "expert_spread", "decode_band", "aggregate_band", "prefill_band",
                                    "bandwidth_fraction", "expert_prefill_factor")}
    fraction = DEFAULT_BANDWIDTH_FRACTION
    if hardware.measured_bandwidth_gb_s:
        fraction = min(1.0, hardware.measured_bandwidth_gb_s / hardware.memory_bandwidth_gb_s)
        basis["bandwidth_fraction"] = "published read test"
    latency, basis["allreduce_us"] = ASSUMED_ALLREDUCE_US, "assumed"
    if hardware.link and hardware.link.latency_us:
        latency, basis["allreduce_us"] = hardware.link.latency_us, "published link latency"
    peak = tensor_peak_flops(hardware)
    rates = {p: _assumed_rate(peak_flops(hardware, p)) for p in PRECISIONS}
    basis["prefill_ms_per_gflop"] = f"{ASSUMED_PREFILL_MFU:.0%} of the tensor peak (assumed)" if peak else "unknown"
    basis["prefill_attention"] = "assumed: the bf16 GEMM rate" if peak else "unknown"
    basis["prefill_kv"] = "assumed: no cost beyond the FLOPs"
    basis["prefill_weight"] = ("the published read test" if hardware.measured_bandwidth_gb_s else
                               f"{DEFAULT_BANDWIDTH_FRACTION:.0%} of rated bandwidth (assumed)")
    return SpeedConstants(
        engine=engine, bandwidth_fraction=fraction, weight_penalty={}, kv_ms_per_gb=ASSUMED_KV_MS_PER_GB,
        compute_ms_per_gflop=ASSUMED_COMPUTE_MS_PER_GFLOP, fixed_ms=ASSUMED_FIXED_MS, layer_ms=ASSUMED_LAYER_MS,
        eager_ms_per_layer=ASSUMED_EAGER_MS_PER_LAYER, spec_ms_per_step=ASSUMED_SPEC_MS_PER_STEP,
        allreduce_us=latency, link_gb_s=hardware.link.bandwidth_gb_s if hardware.link else None,
        acceptance=ASSUMED_ACCEPTANCE, expert_spread=ASSUMED_EXPERT_SPREAD, prefill_ms_per_gflop=rates,
        expert_prefill_factor=ASSUMED_EXPERT_PREFILL_FACTOR, prefill_attention_ms_per_gflop=rates.get("bf16") or 0.0,
        prefill_kv_ms_per_gb=0.0, prefill_weight_ms_per_gb=1e3 / (hardware.memory_bandwidth_gb_s * fraction),
        decode_band=ASSUMED_BAND, aggregate_band=ASSUMED_BAND, prefill_band=ASSUMED_BAND, basis=basis)


def _assumed_rate(peak: float | None) -> float | None:
    """Milliseconds per GFLOP at the assumed share of a tensor peak (None without a peak)."""
    return 1e12 / (peak * ASSUMED_PREFILL_MFU) if peak else None


def peak_flops(hardware: Hardware, precision: str) -> float | None:
    """Dense peak of one node for `precision` in FLOP/s (sparse vendor figures halved)."""
    compute = hardware.compute
    if compute is None:
        return None
    tflops = {"fp4": compute.fp4_tflops, "fp8": compute.fp8_tflops, "int8": compute.fp8_tflops,
              "bf16": compute.bf16_tflops}.get(precision)
    if not tflops:
        return None
    return tflops * 1e12 / (2 if compute.sparse else 1)


def tensor_peak_flops(hardware: Hardware) -> float:
    """The node's highest dense tensor peak over the precisions it publishes, FLOP/s (0 when none)."""
    return max((peak_flops(hardware, p) or 0.0) for p in ("fp4", "fp8", "bf16"))
