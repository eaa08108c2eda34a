"""Options and helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import sys

from sparkadvisor.inputs import fraction, number_above_zero, positive_int, share, stream_count, token_count

TYPE_CHECKING = False
"""typing.TYPE_CHECKING without importing typing: `--help` imports only argparse (mypy reads the name)."""

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, NoReturn

    from sparkadvisor.core.index import CatalogIndex
    from sparkadvisor.core.plan import Cluster
    from sparkadvisor.core.ranking import Ranked
    from sparkadvisor.core.workload import Settings, Workload


__all__ = ["Parser", "SubcommandParser", "UsageError", "add_catalog_option", "add_recipe_option",
           "add_scenario_options", "find_build_id", "follow_recipe", "followed_plan", "fraction", "load",
           "number_above_zero", "positive_int", "print_json", "recipe_cluster", "scenario", "share"]


class UsageError(Exception):
    """Bad input named in one sentence (exit code 2)."""


class Parser(argparse.ArgumentParser):
    """argparse's parser, refusing bad input in one sentence (`argerrors`) instead of the whole usage."""

    def error(self, message: str) -> NoReturn:
        from sparkadvisor.argerrors import refuse

        refuse(self, message)


class SubcommandParser(Parser):
    """A subcommand's parser: an argument it does not know is refused by it, naming its options
    (argparse hands it back for the top-level parser to refuse, which knows no option of the
    command that was run)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            from gettext import gettext

            self.error(gettext("unrecognized arguments: %s") % " ".join(extras))
        return parsed, extras


def path_option(text: str) -> Path:
    """A path option's value, `~` as the home folder (a shell leaves `--opt=~/x` alone)."""
    from pathlib import Path

    return Path(text).expanduser()


def add_catalog_option(parser: argparse.ArgumentParser, dest: str = "sub_catalog") -> None:
    """--catalog FILE, repeatable. A subcommand's copy keeps its own list (`sub_catalog`), which
    `cli.main` adds to the one given before the subcommand, so both places count."""
    from sparkadvisor.cli import CATALOG_HELP

    parser.add_argument("--catalog", type=path_option, action="append", default=[], metavar="FILE", dest=dest,
                        help=CATALOG_HELP)


def add_scenario_options(parser: argparse.ArgumentParser, output: str = "json", streams: bool = True) -> None:
    """Cluster, workload and override options shared by rank, show, compare, export, probe and bench;
    with `output` "format" also --format and --json, "json" only --json, "" neither."""
    from sparkadvisor.core.formats import KV_DTYPE_BYTES
    from sparkadvisor.core.workload import ENGINES, WORKLOADS

    parser.add_argument("--hardware", default="dgx-spark", help="hardware id (default: dgx-spark)")
    parser.add_argument("--nodes", type=positive_int, default=2, help="nodes in the cluster (default: 2)")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="agentic", help="default: agentic")
    parser.add_argument("--context", type=token_count, help="prompt tokens per turn")
    parser.add_argument("--prefix-reuse", type=share, help="share of the prompt reused from the last turn")
    parser.add_argument("--output-tokens", type=token_count, help="tokens written per turn")
    parser.add_argument("--gpu-memory-utilization", type=fraction, help="override every recipe's value")
    parser.add_argument("--max-model-len", type=token_count, metavar="TOKENS",
                        help="serve at most this context (prompt + answer); each build takes the smaller of it "
                             "and the longest it serves (its recipe's or its model's native context)")
    parser.add_argument("--max-num-batched-tokens", type=token_count, metavar="TOKENS", dest="batched_tokens",
                        help="tokens vLLM computes in one step: the prefill chunk, and what a sliding-window layer "
                             "keeps per request beside its window (default: each recipe's, else vLLM's 8,192); on "
                             "llama.cpp, the --ubatch-size the export passes (default 2,048)")
    parser.add_argument("--kv-cache-dtype", choices=sorted(KV_DTYPE_BYTES), metavar="DTYPE",
                        help=f"override the KV cache dtype ({', '.join(sorted(KV_DTYPE_BYTES))})")
    parser.add_argument("--engine", metavar="ENGINE",
                        help=f"engine for builds without a recipe ({', '.join(ENGINES)}; default: vllm, "
                             "or the build's own)")
    if streams:
        parser.add_argument("--streams", type=stream_count, default=1,
                            help="sequences decoding at once; speeds are per stream, with the aggregate (default: 1)")
    parser.add_argument("--no-speculation", dest="speculation", action="store_const", const=False,
                        help="run every recipe without its drafter (no --speculative-config)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--eager", dest="enforce_eager", action="store_const", const=True,
                      help="cost every build without CUDA graphs (--enforce-eager)")
    mode.add_argument("--cuda-graphs", dest="enforce_eager", action="store_const", const=False,
                      help="cost every build with CUDA graphs, whatever its recipe says")
    add_catalog_option(parser)
    if output == "format":
        from sparkadvisor.listing import add_format_option

        add_format_option(parser)
    elif output == "json":
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def load(args: argparse.Namespace) -> CatalogIndex:
    """The catalog the options name (bundled + user imports + --catalog files)."""
    from sparkadvisor.catalogs import load_index

    return load_index(args.catalog)


def scenario(args: argparse.Namespace, index: CatalogIndex) -> tuple[Cluster, Workload, Settings]:
    """Cluster, workload and settings from the options, checked against the catalog."""
    from sparkadvisor.core.plan import Cluster, engines_here, runs_on
    from sparkadvisor.core.units import plural
    from sparkadvisor.core.workload import ENGINES, WORKLOADS, Settings, batch_room

    hardware = index.hardware.get(args.hardware)
    if hardware is None:
        raise UsageError(f"unknown hardware {args.hardware!r}; known hardware ids: {', '.join(sorted(index.hardware))}")
    if args.nodes > hardware.max_nodes:
        raise UsageError(f"--nodes {args.nodes} is more than the {plural(hardware.max_nodes, 'node')} the advisor "
                         f"sweeps for {hardware.name}")
    changes = {"context_tokens": args.context, "prefix_reuse": args.prefix_reuse, "output_tokens": args.output_tokens,
               "streams": args.streams if isinstance(getattr(args, "streams", None), int) else None}
    workload = WORKLOADS[args.workload].changed(**{k: v for k, v in changes.items() if v is not None})
    engine = getattr(args, "engine", None)
    known = sorted(set(ENGINES) | {r.engine for r in index.catalog.recipes})
    if engine is not None and engine not in known:
        raise UsageError(f"unknown engine {engine!r} for --engine; known engines: {', '.join(known)}")
    if engine is not None and not runs_on(hardware, engine):
        raise UsageError(f"--engine {engine} is not known to run on {hardware.name}; {engines_here(hardware)}")
    batched = getattr(args, "batched_tokens", None)
    if (why := batch_room(batched, workload.streams)) is not None:
        raise UsageError(f"--max-num-batched-tokens and --streams: {why}")
    settings = Settings(args.gpu_memory_utilization, args.kv_cache_dtype, engine=engine,
                        enforce_eager=getattr(args, "enforce_eager", None),
                        max_model_len=getattr(args, "max_model_len", None),
                        speculation=getattr(args, "speculation", None), batched_tokens=batched)
    return Cluster(hardware, args.nodes), workload, settings


def add_recipe_option(parser: argparse.ArgumentParser) -> None:
    """--recipe ID for a command about one build; its --hardware and --nodes then default to the recipe's
    (`recipe_cluster`). Added after `add_scenario_options`, so that they default to None rather than to
    dgx-spark and 2."""
    parser.add_argument("--recipe", metavar="ID", help="the community recipe to follow (sets --hardware and --nodes)")
    parser.set_defaults(nodes=None, hardware=None)


def recipe_cluster(args: argparse.Namespace, index: CatalogIndex, build_id: str) -> None:
    """Set --hardware and --nodes: as given, else the --recipe's, else dgx-spark and 2. A recipe of another
    build, of another engine than the one the build's plans run on there, or on other hardware or node counts
    than given, is refused in one sentence naming the build's recipes."""
    from sparkadvisor.core.index import default_engine, followed_engine
    from sparkadvisor.core.units import plural

    if args.recipe is None:
        args.hardware, args.nodes = args.hardware or "dgx-spark", int(args.nodes or 2)
        return
    build, own = index.builds[build_id], index.recipes_by_build.get(build_id, ())
    follows = {r.id: followed_engine(build, index.hardware.get(r.hardware), r.engine) for r in own}
    where = {r.id: "" if r.hardware == "dgx-spark" else f" of {r.hardware}" for r in own}
    followable = ", ".join(f"{r.id} ({plural(r.nodes, 'node')}{where[r.id]})" for r in own if follows[r.id]) or "none"
    recipe = next((r for r in own if r.id == args.recipe), None)
    if recipe is None:
        raise UsageError(f"no recipe {args.recipe!r} for {build_id}; the recipes its plans follow: {followable}")
    if not follows[recipe.id]:
        engine = default_engine(build, index.hardware.get(recipe.hardware))
        raise UsageError(f"recipe {recipe.id} serves with {recipe.engine}, and a plan of {build_id} runs on "
                         f"{engine} there (its measurements still count in the fit); the recipes its plans follow: "
                         f"{followable}")
    if args.hardware not in (None, recipe.hardware):
        raise UsageError(f"recipe {recipe.id} runs on {recipe.hardware}, not --hardware {args.hardware}")
    if args.nodes not in (None, recipe.nodes):
        raise UsageError(f"recipe {recipe.id} runs on {plural(recipe.nodes, 'node')}, not --nodes {args.nodes}")
    args.hardware, args.nodes = recipe.hardware, int(recipe.nodes)


def follow_recipe(args: argparse.Namespace, settings: Settings) -> Settings:
    """The settings with --recipe followed over the advisor's pick among the build's recipes here."""
    from dataclasses import replace

    return replace(settings, recipe=args.recipe) if args.recipe else settings


def followed_plan(args: argparse.Namespace, ranked: Sequence[Ranked], build_id: str, cluster: Cluster) -> Ranked:
    """The ranked entry of `build_id`; with --recipe, refused unless its plan follows that recipe (a recipe
    for other hardware than --hardware is not followed)."""
    chosen = next(r for r in ranked if r.plan.build.id == build_id)
    recipe = chosen.plan.recipe
    if args.recipe and (recipe is None or recipe.id != args.recipe):
        raise UsageError(f"on {cluster.label} the advisor uses recipe {recipe.id if recipe else 'none'!r}, not "
                         f"{args.recipe!r}; change --nodes or --hardware to match the recipe")
    return chosen


def find_build_id(index: CatalogIndex, typed: str) -> str:
    """The build `typed` names (its id in any case, or its repo name), else a UsageError that
    suggests the closest ids (core/buildids.py)."""
    from sparkadvisor.core.buildids import match_build, unknown_build_sentence

    match = match_build(index.builds, typed)
    if match.build_id is None:
        raise UsageError(unknown_build_sentence(typed, match))
    return match.build_id


def print_json(data: dict[str, Any]) -> None:
    """JSON on stdout, UTF-8; never NaN or Infinity, never a raw control character.

    Indented for a person at a terminal; one line for a pipe or a file, which the C encoder
    writes several times faster than Python's indenting one (rank --json of 5,000 builds)."""
    from sparkadvisor.core.safetext import safe_json

    sys.stdout.write(safe_json(data, indent=2 if sys.stdout.isatty() else None) + "\n")
