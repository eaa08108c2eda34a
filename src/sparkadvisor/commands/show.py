"""`sparkadvisor show BUILD`: the arithmetic for one build, step by step."""

from __future__ import annotations

import argparse

from sparkadvisor.commands.common import add_scenario_options, find_build_id, load, print_json, scenario


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("build", help="build id, its repo name or a close spelling (see `sparkadvisor rank`)")
    add_scenario_options(parser, output="format")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.advisor import advise, show_dict, workload_dict

    index = load(args)
    build_id = find_build_id(index, args.build)
    cluster, workload, settings = scenario(args, index)
    chosen = next(r for r in advise(index, cluster, workload, settings) if r.plan.build.id == build_id)
    if args.format == "json":
        print_json({"hardware": cluster.hardware.id, "nodes": cluster.nodes, "workload": workload_dict(workload),
                    **show_dict(chosen)})
        return 0
    from sparkadvisor.render import print_show, show_listing

    if args.format == "table":
        print_show(chosen, cluster, workload, index)
    else:
        from sparkadvisor.listing import print_listing

        print_listing(show_listing(chosen, index), args.format)
    return 0
