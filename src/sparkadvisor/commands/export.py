"""`sparkadvisor export BUILD --format FORMAT --out DIR`: the files that launch a build, from its plan."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sparkadvisor.commands.common import (
    add_recipe_option,
    add_scenario_options,
    find_build_id,
    follow_recipe,
    followed_plan,
    load,
    recipe_cluster,
    scenario,
)

if TYPE_CHECKING:
    from sparkadvisor.export.spec import ExportFile, ExportOptions


def port(text: str) -> int:
    """An argparse type: a TCP port."""
    if not text.isdecimal() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return int(text)


def _checked(name: str) -> Callable[[str], object]:
    """An argparse type from export.addresses' check `name`, imported only when the option is given."""
    def parse(text: str) -> object:
        from sparkadvisor.export import addresses

        try:
            return getattr(addresses, name)(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = name
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sparkadvisor.export import FORMATS

    parser.add_argument("build", help="build id, its repo name or a close spelling (see `sparkadvisor rank`)")
    parser.add_argument("--launcher", choices=("native", "ray"), default="native",
                        help="multi-node launcher: vLLM's own --nnodes/--headless (default) or Ray")
    parser.add_argument("--format", required=True, choices=list(FORMATS), dest="fmt", help="what to write")
    parser.add_argument("--out", metavar="DIR", help="folder to write into; '-' or none prints a one-file "
                        "format (json, md, a one-node yaml or compose) to stdout")
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")
    parser.add_argument("--gateway-url", type=_checked("gateway_url"), metavar="URL",
                        help="Claude Code talks to this gateway instead of vLLM")
    parser.add_argument("--port", type=port, default=8000, help="API port on the head node (default: 8000)")
    parser.add_argument("--head-addr", type=_checked("address"), metavar="ADDR",
                        help="the head node's address as Claude Code and the workers reach it "
                             "(default: a named placeholder; scripts also read $HEAD_ADDR)")
    parser.add_argument("--worker-addrs", type=_checked("addresses"), metavar="ADDR,...",
                        help="the workers' ConnectX-7 addresses, rank 1 first (scripts also read $NODE_ADDR)")
    parser.add_argument("--nic", type=_checked("netdev"), metavar="NETDEV",
                        help="the ConnectX-7 netdev NCCL uses, from ibdev2netdev (default: enp1s0f1np1)")
    add_scenario_options(parser, output="")
    add_recipe_option(parser)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.commands.common import UsageError
    from sparkadvisor.core.advisor import advise
    from sparkadvisor.export import ExportError, ExportOptions, ExportRefused, render

    index = load(args)
    build_id = find_build_id(index, args.build)
    recipe_cluster(args, index, build_id)
    cluster, workload, settings = scenario(args, index)
    ranked = advise(index, cluster, workload, follow_recipe(args, settings))
    plan = followed_plan(args, ranked, build_id, cluster).plan
    options = ExportOptions(args.launcher, args.gateway_url, args.port, args.head_addr, args.worker_addrs or (),
                            args.nic)
    try:
        files = render(args.fmt, plan, options, ranked, index.catalog.sources)
    except ExportRefused as error:
        return _refused(f"{error} (--nodes {error.nodes_needed})" if error.nodes_needed else str(error))
    except ExportError as error:
        raise UsageError(str(error)) from None
    if args.out in (None, "-"):
        code = _to_stdout(files, args.fmt)
    else:
        code = _to_folder(Path(args.out).expanduser(), files, args.force)
    if code == 0:
        from sparkadvisor.export.llamacpp import is_llamacpp
        from sparkadvisor.export.spec import machines

        _placeholder_notice(args.fmt, machines(plan), options, is_llamacpp(plan))
    return code


def _refused(message: str) -> int:
    sys.stderr.write(f"sparkadvisor: {message}\n")
    return 1


def _placeholder_notice(fmt: str, nodes: int, options: ExportOptions, llama: bool) -> None:
    """Which addresses the files name by placeholder, and what that means for each format."""
    from sparkadvisor.export.placeholders import left_out

    notice = left_out(fmt, nodes, options, llama)
    if notice is None:
        return
    given = [(o, a) for o, a, m in (("--head-addr", "ADDR", notice.head),
                                    ("--worker-addrs", "ADDR,...", notice.workers)) if m]
    sys.stderr.write(f"sparkadvisor: no {' or '.join(o for o, _ in given)}: {notice.text}; "
                     f"export again with {' '.join(f'{o} {a}' for o, a in given)}\n")


def _to_stdout(files: tuple[ExportFile, ...], fmt: str) -> int:
    from sparkadvisor.commands.common import UsageError

    if len(files) != 1:
        names = ", ".join(f.name for f in files)
        raise UsageError(f"--format {fmt} writes {len(files)} files here ({names}); give --out DIR to write them")
    sys.stdout.write(files[0].text)
    return 0


def _to_folder(folder: Path, files: tuple[ExportFile, ...], force: bool) -> int:
    from sparkadvisor.export.write import ExistingFiles, NotAFolder, write_files

    try:
        written = write_files(folder, files, force)
    except NotAFolder as error:
        return _refused(f"--out {error}")
    except ExistingFiles as error:
        return _refused(str(error))
    except OSError as error:
        return _refused(f"cannot write to {folder}: {error.strerror or error}")
    for path in written:
        sys.stderr.write(f"wrote {path}\n")
    return 0

