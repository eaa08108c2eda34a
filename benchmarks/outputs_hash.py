"""A digest of what the advisor shows, over many scenarios: speed work must leave it unchanged.

Run: python benchmarks/outputs_hash.py [--out FILE] [--compare FILE] [--synthetic N]

For every catalog hardware at 1, 2 and 4 nodes (as far as it goes), both workloads and several
settings (streams, context and reuse, memory utilization, KV dtype, eager, CUDA graphs, engine),
it ranks the bundled catalog and hashes what each view prints of every build: `rank --json`'s
candidates, the table's and the comparison's cells, the reason, and (for the default and two
other settings) `show --json`'s steps and `show`'s text with its sources. A generated catalog of
N builds (benchmarks/synthetic.py) is ranked on every node count of the DGX Spark the same way.
Prints one digest per scenario and one over all; `--out` writes them, `--compare` names the
scenarios whose digest differs from a file written before.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import synthetic_index  # noqa: E402
from sparkadvisor.catalogs import load_index  # noqa: E402
from sparkadvisor.core.advisor import advise, candidate, show_dict  # noqa: E402
from sparkadvisor.core.index import CatalogIndex  # noqa: E402
from sparkadvisor.core.plan import Cluster  # noqa: E402
from sparkadvisor.core.table import compare_cells, row_cells  # noqa: E402
from sparkadvisor.core.workload import WORKLOADS, Settings, Workload  # noqa: E402
from sparkadvisor.render import show_lines  # noqa: E402

VARIANTS: dict[str, tuple[dict[str, float | int], Settings]] = {
    "default": ({}, Settings()),
    "streams4": ({"streams": 4}, Settings()),
    "ctx32k-reuse50": ({"context_tokens": 32_000, "prefix_reuse": 0.5, "output_tokens": 500}, Settings()),
    "ctx200k": ({"context_tokens": 200_000}, Settings()),
    "util0.8": ({}, Settings(gpu_memory_utilization=0.8)),
    "kv-fp8": ({"streams": 8}, Settings(kv_cache_dtype="fp8")),
    "eager": ({}, Settings(enforce_eager=True)),
    "graphs": ({}, Settings(enforce_eager=False)),
    "llama.cpp": ({}, Settings(engine="llama.cpp")),
}
"""(workload changes, settings) of each scenario."""

DETAILED = ("default", "streams4", "util0.8")
"""Variants whose `show` output (every build's steps and sources) is hashed too."""


def scenarios(index: CatalogIndex, hardware: list[str] | None = None) -> Iterator[tuple[str, Cluster, Workload,
                                                                                       Settings, bool]]:
    """(name, cluster, workload, settings, detailed) of every scenario on `index`."""
    for hw in hardware or sorted(index.hardware):
        profile = index.hardware[hw]
        for nodes in (n for n in (1, 2, 4) if n <= profile.max_nodes):
            for kind, workload in WORKLOADS.items():
                for variant, (changes, settings) in VARIANTS.items():
                    yield (f"{hw}/{nodes}/{kind}/{variant}", Cluster(profile, nodes), workload.changed(**changes),
                           settings, variant in DETAILED)


def digest(index: CatalogIndex, cluster: Cluster, workload: Workload, settings: Settings, detailed: bool) -> str:
    """The hash of everything the views print for one scenario."""
    h = hashlib.sha256()
    for ranked in advise(index, cluster, workload, settings):
        rows: dict[str, object] = {"candidate": candidate(ranked), "cells": compare_cells(ranked),
                                   "row": row_cells(ranked), "reason": ranked.reason}
        if detailed:
            rows["show"] = show_dict(ranked)
            rows["lines"] = show_lines(ranked, cluster, workload, index)
        h.update(json.dumps(rows, sort_keys=True, default=repr).encode())
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the digests here")
    parser.add_argument("--compare", type=Path, help="digests written before: name the scenarios that differ")
    parser.add_argument("--synthetic", type=int, default=2_000, help="builds in the generated catalog (default 2000)")
    args = parser.parse_args()
    start = time.perf_counter()
    bundled = load_index(include_user=False)
    digests = {}
    for name, cluster, workload, settings, detailed in scenarios(bundled):
        digests[f"bundled/{name}"] = digest(bundled, cluster, workload, settings, detailed)
    generated = synthetic_index(bundled.catalog, args.synthetic)
    for name, cluster, workload, settings, _ in scenarios(generated, ["dgx-spark"]):
        digests[f"synthetic/{name}"] = digest(generated, cluster, workload, settings, False)
    overall = hashlib.sha256("".join(f"{k} {v}\n" for k, v in digests.items()).encode()).hexdigest()
    print(f"{len(digests)} scenarios in {time.perf_counter() - start:.0f} s: {overall}")
    if args.out:
        args.out.write_text(json.dumps({"overall": overall, "scenarios": digests}, indent=1) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())["scenarios"]
        changed = [k for k in before.keys() | digests.keys() if before.get(k) != digests.get(k)]
        for name in sorted(changed):
            print(f"differs: {name}")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
