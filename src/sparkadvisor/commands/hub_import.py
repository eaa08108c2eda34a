"""`sparkadvisor import ORG/NAME`: add a hub repo to the user's catalog from its metadata alone."""

from __future__ import annotations

import argparse
import sys

from sparkadvisor.commands.common import number_above_zero
from sparkadvisor.core.safetext import safe_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repo", metavar="ORG/NAME", help="Hugging Face repo id, e.g. openai/gpt-oss-120b")
    parser.add_argument("--revision", help="branch, tag or commit (default: main)")
    parser.add_argument("--force", action="store_true", help="replace a model or build with the same id; import a repo "
                        "the catalog already has")
    parser.add_argument("--timeout", type=number_above_zero(3600, "seconds"), default=60.0, metavar="SECONDS",
                        help="give up when the whole import (model info, files, retries) takes longer (default: 60)")
    parser.add_argument("--json", action="store_true", help="print what was added as JSON")


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.commands.common import UsageError, print_json
    from sparkadvisor.sources.hub import HubError, is_repo_id
    from sparkadvisor.usercatalog import ImportConflict, UserCatalogError, import_repo

    if not is_repo_id(args.repo):
        from sparkadvisor.core.schema import repo_id_problem

        raise UsageError(repo_id_problem(args.repo))
    if not args.force:
        from sparkadvisor.catalogs import already_in_catalog, catalog_builds_of

        if builds := catalog_builds_of(args.repo):
            raise UsageError(already_in_catalog(args.repo, builds, "pass --force"))
    progress = _progress if sys.stderr.isatty() and not args.json else None
    try:
        imported = import_repo(args.repo, args.revision, force=args.force, timeout_s=args.timeout, progress=progress)
    except ImportConflict as error:
        raise UsageError(str(error)) from None
    except (HubError, UserCatalogError) as error:
        _clear_progress(progress)
        print(f"sparkadvisor: {safe_text(error)}", file=sys.stderr)
        return 1
    _clear_progress(progress)
    if args.json:
        print_json(imported.as_json())
    else:
        _print_summary(imported)
    return 0


def _progress(what: str, done: int, total: int) -> None:
    sys.stderr.write(f"\r\033[Kreading {safe_text(what)}: {done}/{total}")
    sys.stderr.flush()


def _clear_progress(progress: object) -> None:
    if progress is not None:
        sys.stderr.write("\r\033[K")


def _print_summary(imported: object) -> None:
    from sparkadvisor.core.units import fmt_size, plural
    from sparkadvisor.usercatalog import Imported

    assert isinstance(imported, Imported)
    d, files = imported.derived, imported.files
    active = f"{d.active_params / 1e9:.2f}B active" if d.active_params is not None else "active unknown"
    experts = f" ({d.routed_experts} routed experts, {d.experts_per_token} per token)" if d.routed_experts else ""
    kv = d.kv_bytes_per_token
    lines = [
        f"Imported {files.repo} at {files.commit[:12]} as build {imported.build.id} (model {imported.model.id}).",
        f"  weights   {fmt_size(d.weight_bytes, 'GB', 2)} exactly ({d.weight_bytes:,} bytes, "
        f"{plural(len(files.shards), 'safetensors file')}), format {d.format} ({d.quantizer})",
        f"  params    {d.total_params / 1e9:.2f}B total, {active}{experts}",
        f"  KV cache  {'unknown' if kv is None else f'{kv / 1024:.1f} KiB per token'} (bf16, one rank)",
    ]
    if d.unknown:
        lines.append("  unknown   " + "; ".join(d.unknown))
    if files.metadata_file:
        lines.append(f"  offline   used cached metadata from sparkadvisor's metadata cache, read online on "
                     f"{files.metadata_saved_on} ({files.metadata_file})")
    elif files.from_cache:
        lines.append("  offline   read from the hub cache")
    lines.append(f"Saved to {imported.path}. Next: sparkadvisor show {imported.build.id}")
    print(safe_text("\n".join(lines), keep_newlines=True))
