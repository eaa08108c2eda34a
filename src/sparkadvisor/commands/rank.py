"""`sparkadvisor rank`: every build ranked for a cluster and workload."""

from __future__ import annotations

import argparse

from sparkadvisor.commands.common import add_scenario_options, load, print_json, scenario, share
from sparkadvisor.listing import print_listing


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser, output="format")
    parser.add_argument("--min-capability", type=share, metavar="SHARE",
                        help="hide builds whose sourced score is below this share of the frontier reference "
                             "on the same table, e.g. 80%% or 0.8 (unknown capability is hidden too)")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.advisor import advise, candidate, settings_dict, workload_dict

    index = load(args)
    cluster, workload, settings = scenario(args, index)
    ranked = advise(index, cluster, workload, settings, min_capability=args.min_capability)
    if args.format == "json":
        print_json({"hardware": cluster.hardware.id, "nodes": cluster.nodes, "workload": workload_dict(workload),
                    "settings": settings_dict(settings),
                    "min_capability": args.min_capability, "hidden": len(index.catalog.builds) - len(ranked),
                    "candidates": [candidate(r) for r in ranked]})
        return 0
    from sparkadvisor.core.units import plural
    from sparkadvisor.render import ranking_listing

    hidden = () if args.min_capability is None else (
        f"{plural(len(index.catalog.builds) - len(ranked), 'build')} hidden: below {args.min_capability:.0%} "
        "capability, or capability unknown (--min-capability).",)
    print_listing(ranking_listing(ranked, cluster, workload, hidden, settings), args.format)
    return 0
