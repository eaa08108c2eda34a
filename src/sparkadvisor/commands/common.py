"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkadvisor.core.formats import KV_DTYPE_BYTES
from sparkadvisor.core.workload import WORKLOADS, Settings, Workload

if TYPE_CHECKING:
    from sparkadvisor.core.catalog import CatalogIndex
    from sparkadvisor.core.plan import Cluster


class UsageError(Exception):
    """Bad input named in one sentence (exit code 2)."""


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (100_000 and 100,000 allowed)."""
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def number_above_zero(most: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number more than 0 and at most `most` (`unit` names it in messages)."""
    what = f" {unit}" if unit else ""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number{' of' + what if unit else ''}") from None
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than 0 and at most {most:g}{what}")
        return value

    return parse


fraction = number_above_zero(1)
"""An argparse type: a number in (0, 1]."""


def share(text: str) -> float:
    """An argparse type: a share in [0, 1], or a percentage such as 95%."""
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0 and 1 (or 0% and 100%)")
    return value


def add_catalog_option(parser: argparse.ArgumentParser) -> None:
    """--catalog FILE, repeatable."""
    parser.add_argument("--catalog", type=Path, action="append", default=[], metavar="FILE",
                        help="merge a catalog over the bundled one (repeatable)")


def add_scenario_options(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """Cluster, workload and override options shared by rank, show and export."""
    parser.add_argument("--hardware", default="dgx-spark", help="hardware id (default: dgx-spark)")
    parser.add_argument("--nodes", type=positive_int, default=2, help="nodes in the cluster (default: 2)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="agentic", help="default: agentic")
    parser.add_argument("--context", type=positive_int, help="prompt tokens per turn")
    parser.add_argument("--prefix-reuse", type=share, help="share of the prompt reused from the last turn")
    parser.add_argument("--output-tokens", type=positive_int, help="tokens written per turn")
    parser.add_argument("--gpu-memory-utilization", type=fraction, help="override every recipe's value")
    parser.add_argument("--kv-cache-dtype", choices=sorted(KV_DTYPE_BYTES), metavar="DTYPE",
                        help=f"override the KV cache dtype ({', '.join(sorted(KV_DTYPE_BYTES))})")
    add_catalog_option(parser)
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def load(args: argparse.Namespace) -> CatalogIndex:
    """The catalog the options name (bundled + user imports + --catalog files)."""
    from sparkadvisor.catalogs import load_index

    return load_index(args.catalog)


def scenario(args: argparse.Namespace, index: CatalogIndex) -> tuple[Cluster, Workload, Settings]:
    """Cluster, workload and settings from the options, checked against the catalog."""
    from sparkadvisor.core.plan import Cluster

    hardware = index.hardware.get(args.hardware)
    if hardware is None:
        raise UsageError(f"unknown hardware {args.hardware!r}; known hardware ids: {', '.join(sorted(index.hardware))}")
    if args.nodes > hardware.max_nodes:
        raise UsageError(f"--nodes {args.nodes} is more than the {hardware.max_nodes} nodes the advisor "
                         f"sweeps for {hardware.name}")
    changes = {"context_tokens": args.context, "prefix_reuse": args.prefix_reuse, "output_tokens": args.output_tokens}
    workload = WORKLOADS[args.workload].changed(**{k: v for k, v in changes.items() if v is not None})
    settings = Settings(args.gpu_memory_utilization, args.kv_cache_dtype)
    return Cluster(hardware, args.nodes), workload, settings


def find_build_id(index: CatalogIndex, build_id: str) -> str:
    """`build_id` if the catalog has it, else a UsageError naming the known ids."""
    if build_id in index.builds:
        return build_id
    close = [b for b in sorted(index.builds) if build_id.lower() in b.lower()]
    hint = f"did you mean {', '.join(close[:5])}?" if close else f"known build ids: {', '.join(sorted(index.builds))}"
    raise UsageError(f"unknown build {build_id!r}; {hint}")


def print_json(data: dict[str, Any]) -> None:
    """JSON on stdout, UTF-8, indented; never NaN or Infinity, never a raw control character."""
    from sparkadvisor.core.safetext import safe_json

    sys.stdout.write(safe_json(data) + "\n")
