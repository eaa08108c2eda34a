"""`sparkadvisor export BUILD --format FORMAT --out DIR`: the files that launch a build, from its plan."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from sparkadvisor.commands.common import add_scenario_options, find_build_id, load, scenario

FORMAT_NAMES = ("sh", "yaml", "compose", "claude", "md", "json")


def port(text: str) -> int:
    """An argparse type: a TCP port."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def address(text: str) -> str:
    """An argparse type: a host name or an IPv4/IPv6 address (nothing a shell or JSON would misread)."""
    if not re.fullmatch(r"[A-Za-z0-9.:\-\[\]]+", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host name or IP address")
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("build", help="build id (see `sparkadvisor rank`)")
    parser.add_argument("--recipe", metavar="ID", help="the community recipe to follow (sets --nodes)")
    parser.add_argument("--launcher", choices=("native", "ray"), default="native",
                        help="multi-node launcher: vLLM's own --nnodes/--headless (default) or Ray")
    parser.add_argument("--format", required=True, choices=FORMAT_NAMES, dest="fmt", help="what to write")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write into")
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")
    parser.add_argument("--gateway-url", metavar="URL", help="Claude Code talks to this gateway instead of vLLM")
    parser.add_argument("--port", type=port, default=8000, help="API port on the head node (default: 8000)")
    parser.add_argument("--head-addr", type=address, metavar="ADDR",
                        help="the head node's address as Claude Code and the workers reach it "
                             "(default: the example 192.168.100.10; scripts also read $HEAD_ADDR)")
    add_scenario_options(parser, json_flag=False)
    parser.set_defaults(nodes=None)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.commands.common import UsageError
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.export import ExportError, ExportOptions, render
    from sparkadvisor.export.write import ExistingFiles, write_files

    index = load(args)
    build_id = find_build_id(index, args.build)
    args.nodes = _nodes(args, index, build_id)
    cluster, workload, settings = scenario(args, index)
    ranked = advise(index, cluster, workload, settings)
    plan = next(r.plan for r in ranked if r.plan.build.id == build_id)
    if args.recipe and (plan.recipe is None or plan.recipe.id != args.recipe):
        chosen = plan.recipe.id if plan.recipe else "none"
        raise UsageError(f"on {cluster.label} the advisor uses recipe {chosen!r}, not {args.recipe!r}; "
                         "change --nodes or --hardware to match the recipe")
    options = ExportOptions(args.launcher, args.gateway_url, args.port, args.head_addr)
    try:
        files = render(args.fmt, plan, options, ranked, index.catalog.sources)
        written = write_files(args.out, files, args.force)
    except (ExportError, ExistingFiles) as error:
        raise UsageError(str(error)) from None
    except OSError as error:
        raise UsageError(f"cannot write to {args.out}: {error.strerror or error}") from None
    for path in written:
        sys.stdout.write(f"wrote {path}\n")
    return 0


def _nodes(args: argparse.Namespace, index: object, build_id: str) -> int:
    """--nodes as given, else the recipe's, else 2."""
    from sparkadvisor.commands.common import UsageError

    if args.recipe is None:
        return int(args.nodes or 2)
    recipe = next((r for r in index.catalog.recipes if r.id == args.recipe), None)  # type: ignore[attr-defined]
    if recipe is None or recipe.build != build_id:
        known = [r.id for r in index.catalog.recipes if r.build == build_id]  # type: ignore[attr-defined]
        raise UsageError(f"no recipe {args.recipe!r} for {build_id}; its recipes: {', '.join(known) or 'none'}")
    if args.nodes not in (None, recipe.nodes):
        raise UsageError(f"recipe {recipe.id} runs on {recipe.nodes} node(s), not --nodes {args.nodes}")
    return int(recipe.nodes)
