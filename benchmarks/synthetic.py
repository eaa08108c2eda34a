"""Generated catalogs for benchmarks: the bundled catalog plus N synthetic builds.

Each synthetic build copies a real model's facts under a new id and a derived size, so
every code path (GQA, MLA, hybrids, recipes, caveats) runs at scale.
"""

from __future__ import annotations

from dataclasses import replace

from sparkadvisor.core.index import CatalogIndex
from sparkadvisor.core.schema import Build, Catalog, Model

FORMATS = ("nvfp4-compressed-tensors", "nvfp4-modelopt", "mxfp4", "fp8", "bf16", "awq-int4", "gguf-q4_k_m")


def synthetic_index(base: Catalog, builds: int) -> CatalogIndex:
    """`base` plus `builds` synthetic builds spread over scaled copies of its models."""
    models: list[Model] = list(base.models)
    extra_models, extra_builds = [], []
    for number in range(builds):
        template = models[number % len(models)]
        scale = 0.25 + (number % 40) / 10
        model_id = f"synthetic-{number // 4}"
        if number % 4 == 0:
            params = replace(template.params, total_b=template.params.total_b * scale,
                             active_b=(template.params.active_b or 1) * scale)
            extra_models.append(replace(template, id=model_id, name=f"Synthetic {number // 4}", params=params))
        extra_builds.append(Build(id=f"synthetic-build-{number}", model=model_id, repo=f"synthetic/model-{number}",
                                  format=FORMATS[number % len(FORMATS)], source=template.source))  # type: ignore[arg-type]
    catalog = replace(base, models=tuple(models + extra_models), builds=(*base.builds, *extra_builds))
    return CatalogIndex(catalog)
