"""`sparkadvisor show BUILD`: the arithmetic for one build, step by step."""

from __future__ import annotations

import argparse

from sparkadvisor.commands.common import (
    add_recipe_option,
    add_scenario_options,
    find_build_id,
    follow_recipe,
    followed_plan,
    load,
    print_json,
    recipe_cluster,
    scenario,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("build", help="build id, its repo name or a close spelling (see `sparkadvisor rank`)")
    add_scenario_options(parser, output="format")
    add_recipe_option(parser)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.core.advisor import advise, settings_dict, show_dict, workload_dict

    index = load(args)
    build_id = find_build_id(index, args.build)
    recipe_cluster(args, index, build_id)
    cluster, workload, settings = scenario(args, index)
    chosen = followed_plan(args, advise(index, cluster, workload, follow_recipe(args, settings)), build_id, cluster)
    if args.format == "json":
        print_json({"hardware": cluster.hardware.id, "nodes": cluster.nodes, "workload": workload_dict(workload),
                    "settings": settings_dict(settings),
                    **show_dict(chosen, index.facts.get(build_id), args.recipe)})
        return 0
    from sparkadvisor.render import print_show, show_listing

    if args.format == "table":
        print_show(chosen, cluster, workload, index, args.recipe, settings)
    else:
        from sparkadvisor.listing import print_listing

        print_listing(show_listing(chosen, index, args.recipe, settings), args.format)
    return 0
