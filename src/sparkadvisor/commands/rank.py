"""`sparkadvisor rank`: every build ranked for a cluster and workload."""

from __future__ import annotations

import argparse

from sparkadvisor.commands.common import add_scenario_options, load, print_json, scenario

NAME = "rank"
HELP = "rank every build for a cluster and workload"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.advisor import advise, candidate, workload_dict

    index = load(args)
    cluster, workload, settings = scenario(args, index)
    ranked = advise(index, cluster, workload, settings)
    if args.json:
        print_json({"hardware": cluster.hardware.id, "nodes": cluster.nodes, "workload": workload_dict(workload),
                    "candidates": [candidate(r) for r in ranked]})
        return 0
    from sparkadvisor.render import print_ranking

    print_ranking(ranked, cluster, workload)
    return 0
