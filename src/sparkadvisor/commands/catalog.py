"""`sparkadvisor catalog update|info|rollback`: a newer catalog from the project's repository; which is in use."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sparkadvisor.commands.common import number_above_zero
from sparkadvisor.core.safetext import safe_text
from sparkadvisor.listing import Listing, add_format_option, print_listing
from sparkadvisor.urls import redact_urls, url_option

SHOWN_IDS = 8
"""Ids listed per kind in a change report before 'and N more'."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="catalog_action", metavar="ACTION", required=True)
    update = sub.add_parser("update", help="download the newest catalog, check it and install it",
                            description="Download the newest catalog, check it as `check` does, and install it "
                                        "in your data folder, keeping the one it replaces.")
    update.add_argument("--url", type=url_option,
                        help="where to fetch it (default: $SPARKADVISOR_CATALOG_URL, else the project's repository)")
    update.add_argument("--timeout", type=number_above_zero(600, "seconds"), default=30.0, metavar="SECONDS",
                        help="give up when the download takes longer than this (default: 30)")
    update.add_argument("--force", action="store_true", help="install it even when it is older than the one in use")
    update.add_argument("--json", action="store_true", help="print the outcome as JSON")
    info = sub.add_parser("info", help="which catalog is in use, its date and what it holds")
    add_format_option(info, "print it as JSON")
    sub.add_parser("rollback", help="put the catalog the last update replaced back in use")


def run(args: argparse.Namespace) -> int:
    return {"update": _update, "info": _info, "rollback": _rollback}[args.catalog_action](args)


def _update(args: argparse.Namespace) -> int:
    from sparkadvisor.commands.common import print_json
    from sparkadvisor.sources.catalog_update import UpdateError, catalog_url, update

    try:
        url = catalog_url(args.url)
        outcome = update(url, args.timeout, force=args.force)
    except UpdateError as error:
        print(f"sparkadvisor: {safe_text(redact_urls(str(error)))}; {_still_in_use()}.", file=sys.stderr)
        return 1
    if args.json:
        print_json(_update_json(outcome))
        return 0
    for line in _update_lines(outcome):
        print(safe_text(line))
    return 0


def _still_in_use() -> str:
    from sparkadvisor.catalogs import active_catalog

    active = active_catalog()
    which = "the updated catalog" if active.updated else "the bundled catalog"
    return f"still using {which} dated {active.date or 'unknown'}"


def _update_lines(outcome: Any) -> list[str]:
    before = outcome.before
    was = f"the {'updated' if before.updated else 'bundled'} catalog dated {before.date or 'unknown'}"
    if not outcome.installed:
        return [f"Already up to date: {outcome.url} holds the catalog in use ({was})."]
    lines = [f"Installed the catalog dated {outcome.date} from {outcome.url}; it replaces {was}."]
    lines += [f"  {change.kind:<9} {_change_text(change)}" for change in outcome.changes]
    lines.append(f"In use: {outcome.path}. `sparkadvisor catalog rollback` puts the previous one back.")
    return lines


def _change_text(change: Any) -> str:
    if not (change.added or change.removed or change.changed):
        return "unchanged"
    parts = [f"{len(ids)} {word} ({_ids(ids)})" for word, ids in (("added", change.added), ("removed", change.removed))
             if ids]
    if change.changed:
        parts.append(f"{len(change.changed)} changed")
    return ", ".join(parts)


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def _update_json(outcome: Any) -> dict[str, Any]:
    return {"installed": outcome.installed, "url": outcome.url, "catalog_date": outcome.date,
            "path": str(outcome.path), "replaced": {"updated": outcome.before.updated, "date": outcome.before.date,
                                                    "path": str(_kept_at(outcome.before))},
            "changes": {c.kind: {"added": c.added, "removed": c.removed, "changed": c.changed}
                        for c in outcome.changes}}


def _kept_at(before: Any) -> Path:
    """Where the catalog an update replaced is now: an earlier update is kept as the previous one; the bundled
    catalog stays where it is."""
    from sparkadvisor import paths

    return paths.catalog_updates_dir() / "previous.toml" if before.updated else before.path


def _info(args: argparse.Namespace) -> int:
    from sparkadvisor import __version__, paths
    from sparkadvisor.catalogs import active_catalog, load_index
    from sparkadvisor.commands.common import print_json
    from sparkadvisor.sources.catalog_update import KINDS, origin

    active = active_catalog()
    catalog = load_index(include_user=False).catalog
    counts = {kind: len(getattr(catalog, kind)) for kind in KINDS}
    came_from = {k: redact_urls(v) if isinstance(v, str) else v for k, v in origin().items()} if active.updated else {}
    previous = paths.catalog_updates_dir() / "previous.toml"
    user = paths.user_catalog_path()
    facts = {"updated": active.updated, "catalog_date": active.date, "path": str(active.path),
             "bundled_date": active.bundled_date, "version": __version__, "origin": came_from,
             "counts": counts, "previous": str(previous) if previous.is_file() else None,
             "user_catalog": str(user) if user.is_file() else None}
    if args.format == "json":
        print_json(facts)
        return 0
    if args.format != "table":
        print_listing(_info_listing(facts), args.format)
        return 0
    if active.updated:
        when, where = came_from.get("installed_at", "(time unknown)"), came_from.get("url", "(address unknown)")
        head = f"Catalog in use: the update dated {active.date}, installed {when} from {where}."
    else:
        head = f"Catalog in use: the bundled catalog dated {active.date or 'unknown'} (sparkadvisor {__version__})."
    lines = [head, f"  file      {active.path}",
             "  holds     " + ", ".join(f"{n} {kind}" for kind, n in counts.items())]
    if active.updated:
        lines.append(f"  bundled   dated {active.bundled_date or 'unknown'} (sparkadvisor {__version__})")
    elif (paths.catalog_updates_dir() / "catalog.toml").is_file():
        lines.append("  update    an older update is installed; the bundled catalog is newer and wins")
    if previous.is_file():
        lines.append(f"  previous  {previous} (what the last update replaced)")
    if user.is_file():
        lines.append(f"  yours     {user} (your imports, merged over it)")
    for line in lines:
        print(safe_text(line))
    return 0


def _info_listing(facts: dict[str, Any]) -> Listing:
    """`catalog info --format tsv|md`: one row per fact, counts and origin flattened ("counts.models")."""
    rows = []
    for key, value in facts.items():
        if isinstance(value, dict):
            rows += [(f"{key}.{k}", "" if v is None else str(v)) for k, v in value.items()]
        else:
            rows.append((key, "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)))
    return Listing(("field", "value"), tuple(rows))


def _rollback(args: argparse.Namespace) -> int:
    from sparkadvisor.sources.catalog_update import UpdateError, rollback

    try:
        active = rollback()
    except UpdateError as error:
        print(f"sparkadvisor: {safe_text(error)}.", file=sys.stderr)
        return 1
    which = "the updated catalog" if active.updated else "the bundled catalog"
    print(safe_text(f"Now using {which} dated {active.date or 'unknown'} ({active.path})."))
    return 0
