"""A bench run as catalog tables: the recipe it measured, its source and its measurements. Pure.

The server states some recipe fields (max_model_len from /v1/models; block size, KV dtype,
prefix caching, gpu-memory-utilization and a pinned KV size from the labels of
`vllm:cache_config_info`); the rest (parallelism, CUDA graphs, the speculation method) are
not readable from a server and come from the catalog recipe the plan used, as the source
note says. `usercatalog.record_bench` writes these tables.
"""

from __future__ import annotations

from typing import Any

BENCH_SETTINGS = ("max_model_len", "kv_cache_dtype", "block_size", "gpu_memory_utilization", "prefix_caching",
                  "kv_cache_gib")
"""Recipe fields a bench reads from the server; a run whose values differ starts a new recipe."""


def server_recipe_settings(info: Any) -> dict[str, Any]:
    """The recipe fields the server states: max_model_len from /v1/models, the rest from how
    the engine was started (`core.metrics.served_config`)."""
    from sparkadvisor.core.formats import KV_DTYPE_BYTES

    c = info.config
    found: dict[str, Any] = {}
    if info.served.max_model_len:
        found["max_model_len"] = info.served.max_model_len
    if c.kv_cache_dtype in KV_DTYPE_BYTES:
        found["kv_cache_dtype"] = c.kv_cache_dtype
    if c.block_size:
        found["block_size"] = c.block_size
    if c.gpu_memory_utilization is not None and 0 < c.gpu_memory_utilization <= 1:
        found["gpu_memory_utilization"] = c.gpu_memory_utilization
    if c.kv_cache_memory_bytes:
        found["kv_cache_gib"] = c.kv_cache_memory_bytes / 2**30
    if c.prefix_caching is not None:
        found["prefix_caching"] = c.prefix_caching
    return found


def new_bench_recipe(build: Any, cluster: Any, info: Any, collected: Any, base: dict[str, Any] | None,
                     settings: dict[str, Any], source_id: str) -> dict[str, Any]:
    """A recipe for the served build: what the server states, the rest (parallelism, graphs,
    speculation method) from the catalog recipe the plan used, as the source note says."""
    from sparkadvisor.core.bench import acceptance

    engine = info.served.engine
    recipe: dict[str, Any] = {"id": f"bench-{build.id}-{cluster.nodes}x-{cluster.hardware.id}", "build": build.id,
                              "title": f"sparkadvisor bench: {info.served.id} on {cluster.label}",
                              "hardware": cluster.hardware.id, "engine": engine, "nodes": cluster.nodes}
    copied = base if base is not None else _split(engine, cluster.nodes)
    stated = ("max_model_len", "block_size", "gpu_memory_utilization", "kv_cache_gib")
    recipe.update({k: v for k, v in copied.items()
                   if k not in (*recipe, *stated, "title", "source", "measurements")})
    recipe.setdefault("kv_cache_dtype", "auto")
    recipe.setdefault("prefix_caching", True)
    recipe.update(settings)
    spec = recipe.pop("speculative", None)
    if info.config.speculating and spec is not None:
        share = acceptance(collected)
        recipe["speculative"] = {**spec, "source": source_id, **({"acceptance": round(share, 3)} if share else {})}
    recipe["source"] = source_id
    return recipe


def _split(engine: str, nodes: int) -> dict[str, int]:
    """The parallelism a run without a catalog recipe is recorded with: llama.cpp splits by layers (PP), vLLM
    is taken as tensor parallel."""
    return {"tp": 1, "pp": nodes} if engine == "llama.cpp" else {"tp": nodes}


def bench_source(info: Any, cluster: Any, collected: Any, base_id: str | None, today: str,
                 launch: tuple[str, ...] = ()) -> dict[str, Any]:
    """The source entry of one run: when, which vLLM and served name, what the server said, and the launch flags
    assumed where it says nothing of them (`launch`)."""
    from sparkadvisor.core.bench import acceptance

    labels = info.labels
    said = [f"{k} {labels[k]}" for k in ("block_size", "cache_dtype", "enable_prefix_caching",
                                         "gpu_memory_utilization", "num_gpu_blocks", "kv_cache_memory_bytes")
            if labels.get(k, "None") != "None"]
    share = acceptance(collected)
    speculating = info.config.speculating
    said.append("speculative decoding on" + (f", {share:.0%} of drafted tokens accepted" if share else "")
                if speculating else "no speculative decoding" if speculating is False
                else "speculative decoding not reported")
    split = "PP" if info.served.engine == "llama.cpp" else "TP"
    rest = (f"parallelism, CUDA graphs and the speculation method as in recipe {base_id} (not readable from "
            "the server)" if base_id is not None else f"{split}={cluster.nodes} assumed (not readable from the server)")
    if launch:
        rest += f"; {' '.join(launch)} assumed as sparkadvisor's export passes them (llama-server reports neither)"
    spec = collected.spec
    return {"title": f"sparkadvisor bench of {info.served.id} on {cluster.label}", "kind": "bench",
            "url": info.url,
            "note": f"run on {today} against {_server(info)} serving {info.served.id} "
                    f"({info.served.length_text or 'max_model_len unknown'}); server settings: {', '.join(said)}; "
                    f"{rest}; prompts of exactly {spec.context_tokens:,} tokens, warm ones sharing "
                    f"{spec.shared_tokens:,}, {spec.output_tokens:,} output tokens"}


def _server(info: Any) -> str:
    """"vLLM 0.33.0", "vLLM (version unknown)" or "llama-server" (which states no version)."""
    if info.served.engine == "llama.cpp":
        return "llama-server"
    return f"vLLM {info.version or '(version unknown)'}"


def bench_measurements(found: list[Any], spec: Any, source_id: str, today: str) -> list[dict[str, Any]]:
    """The run's figures as catalog measurements (the cold/warm ratio is derived, not kept)."""
    out = []
    for f in found:
        metric = {"cold_ttft_s": "ttft_s", "warm_ttft_s": "ttft_s"}.get(f.key, f.key)
        if metric == "ratio":
            continue
        m: dict[str, Any] = {"metric": metric, "value": _figures4(f.median)}
        if len(f.values) > 1:
            m.update(low=_figures4(f.low), high=_figures4(f.high), spread=_spread(f.spread))
        if f.streams > 1:
            m["streams"] = f.streams
        m["context_tokens"] = spec.context_tokens
        if metric == "ttft_s" and f.hit_tokens is not None:
            m["cached_tokens"] = round(f.hit_tokens)
        if f.acceptance is not None:  # what the fit and `show` predict the figure at (like for like)
            m["acceptance"] = round(f.acceptance, 3)
        m["note"] = f"{f.label}, {len(f.values)} run{'s' * (len(f.values) > 1)}, sparkadvisor bench {today}"
        m["source"] = source_id
        out.append(m)
    return out


def pool_measurement(pool: Any, source_id: str, today: str) -> dict[str, Any] | None:
    """The KV cache vLLM sized (`core.checkup.ServedPool`) as a kv_pool_tokens measurement with the memory
    it holds, or None when its blocks are not in the plan's layout or make no pool at the served context.
    vLLM states the block count; the bytes per block id and the pool are the catalog's layout applied to it,
    as vLLM's own "GPU KV cache size" line applies its layout, and the note says so."""
    if not pool.in_layout or not pool.pool_tokens:
        return None
    return {"metric": "kv_pool_tokens", "value": round(pool.pool_tokens), "kv_gib": round(pool.kv_bytes / 2**30, 3),
            "note": f"vLLM's num_gpu_blocks {pool.blocks:,} x {pool.block_bytes / 2**20:,.3f} MiB per block id in the "
                    f"model's layout, at max_model_len {pool.max_model_len:,}; sparkadvisor bench {today}",
            "source": source_id}


def _figures4(value: float) -> float:
    """Four significant figures: what a timing on a live server supports (59.95 tok/s, 4.312 s)."""
    return float(f"{value:.4g}")


def _spread(value: float) -> float:
    """Two significant figures: a standard deviation over a few runs is known to no better (0.031, 1.2 tok/s)."""
    return float(f"{value:.2g}")
