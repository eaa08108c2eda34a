"""`sparkadvisor coverage [--markdown]`: what the catalog holds, per model family.

The table is generated from the catalog, never written by hand: docs/coverage.md is this
command's `--markdown` output. Counts only; every figure behind them is in the catalog
with its source.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkadvisor.commands.common import add_catalog_option
from sparkadvisor.listing import Listing, add_format_option, print_listing

if TYPE_CHECKING:
    from sparkadvisor.core.schema import Catalog


COLUMNS = ("family", "models", "builds", "sizes stated", "KV from config", "context known", "scored", "recipes",
           "measurements", "caveats", "engines")
"""Column headings, in order."""


@dataclass(frozen=True, slots=True)
class FamilyCoverage:
    """What the catalog holds for one model family."""

    family: str
    """Family name as the catalog spells it."""
    models: int
    """Models in the family."""
    builds: int
    """Builds of those models."""
    sizes_stated: int
    """Builds whose size a source states (the rest are derived from parameters and format)."""
    kv_from_config: int
    """Models whose config.json facts give KV bytes per token (the rest: unknown or from a pool)."""
    context_known: int
    """Models whose context window a source gives."""
    scored: int
    """Models with a sourced capability score beside a frontier reference."""
    none_published: int
    """Models with an explicit note that no such score was found."""
    recipes: int
    """Recipes for those builds."""
    measurements: int
    """Measured figures in those recipes."""
    caveats: int
    """Distinct caveats on those builds and recipes."""
    engines: tuple[str, ...]
    """Engines the recipes run on."""

    def cells(self) -> tuple[str, ...]:
        """The row as text, in COLUMNS order."""
        counts = (self.models, self.builds, self.sizes_stated, self.kv_from_config, self.context_known)
        return (self.family, *map(str, counts), f"{self.scored}/{self.models}",
                *map(str, (self.recipes, self.measurements, self.caveats)), ", ".join(self.engines) or "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true",
                        help="print the whole docs/coverage.md page (--format md prints the family table only)")
    add_format_option(parser, "print JSON: families and each model's capability")
    add_catalog_option(parser)


def run(args: argparse.Namespace) -> int:
    from sparkadvisor.catalogs import load_index
    from sparkadvisor.core.safetext import safe_text

    catalog = load_index(args.catalog, include_user=False).catalog
    if args.format == "json":
        from sparkadvisor.commands.common import print_json

        print_json(as_json(catalog))
    elif args.markdown:
        print(safe_text(markdown(catalog), keep_newlines=True))
    else:
        if args.format == "table":
            lines = [_summary(catalog), "", *_hardware_lines(catalog), ""]
            print(safe_text("\n".join(_fitted(lines)), keep_newlines=True))
        print_listing(family_listing(catalog), args.format)
    return 0


def family_rows(catalog: Catalog) -> list[FamilyCoverage]:
    """One row per family, sorted by name, then a total row."""
    families = sorted({m.family for m in catalog.models}, key=str.lower)
    rows = [_family(catalog, {m.id for m in catalog.models if m.family == f}, f) for f in families]
    return rows + [_family(catalog, {m.id for m in catalog.models}, "all")]


def _family(catalog: Catalog, model_ids: set[str], name: str) -> FamilyCoverage:
    from sparkadvisor.core.kv import kv_shape

    models = [m for m in catalog.models if m.id in model_ids]
    builds = [b for b in catalog.builds if b.model in model_ids]
    build_ids = {b.id for b in builds}
    recipes = [r for r in catalog.recipes if r.build in build_ids]
    caveats = {c for b in builds for c in b.caveats} | {c for r in recipes for c in r.caveats}
    with_kv = [m for m in models if m.attention and kv_shape(m.attention, "auto", 1, 1)]
    return FamilyCoverage(
        name, len(models), len(builds), sum(b.size is not None for b in builds), len(with_kv),
        sum(m.context is not None for m in models), sum(bool(m.capability) for m in models),
        sum(not m.capability and m.capability_none_published is not None for m in models), len(recipes),
        sum(len(r.measurements) for r in recipes), len(caveats),
        tuple(sorted({r.engine for r in recipes})),
    )


def _hardware_lines(catalog: Catalog) -> list[str]:
    from sparkadvisor.core.units import plural

    lines = []
    for hw in catalog.hardware:
        nodes = f"up to {plural(hw.max_nodes, 'node')}" if hw.max_nodes > 1 else "one node"
        engines = f"; engines: {', '.join(hw.serving.engines)}" if hw.serving else ""
        lines.append(f"{hw.name} ({hw.id}): {hw.memory_gb:g} GB sold, {hw.usable_memory_gib:g} GiB usable, "
                     f"{hw.memory_bandwidth_gb_s:g} GB/s, {nodes}{engines}")
    return lines


def _fitted(lines: list[str]) -> list[str]:
    """On a terminal, each line wrapped to its width, the rest of a line indented under it; piped, as they are."""
    import shutil
    import sys
    import textwrap

    if not sys.stdout.isatty():
        return lines
    width = max(shutil.get_terminal_size().columns, 40)
    return [part for line in lines
            for part in (textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) or [""])]


def _summary(catalog: Catalog) -> str:
    return (f"{len(catalog.hardware)} hardware profiles, {len(catalog.models)} models, {len(catalog.builds)} builds, "
            f"{len(catalog.recipes)} recipes, {sum(len(r.measurements) for r in catalog.recipes)} measurements, "
            f"{len(catalog.caveats)} caveats, {len(catalog.sources)} sources.")


def family_listing(catalog: Catalog) -> Listing:
    """The per-family counts, one row per family and a total row."""
    return Listing(COLUMNS, tuple(row.cells() for row in family_rows(catalog)),
                   frozenset(range(1, len(COLUMNS) - 1)), keep=3)  # a narrow terminal drops from the right, named


def markdown(catalog: Catalog) -> str:
    """docs/coverage.md: the summary, the hardware, the family table and the builds."""
    rows = family_rows(catalog)
    out = ["# Catalog coverage", "",
           "Generated by `sparkadvisor coverage --markdown > docs/coverage.md` from the bundled `catalog.toml`; "
           "do not edit by hand.", "", _summary(catalog), "", "## Hardware", ""]
    out += [f"- {line}" for line in _hardware_lines(catalog)]
    out += ["", "## Per family", "", _md_row(COLUMNS), _md_row(tuple("---" for _ in COLUMNS))]
    out += [_md_row(r.cells()) for r in rows[:-1]]
    out += [_md_row(tuple(f"**{c}**" for c in rows[-1].cells())), "", _LEGEND, "", "## Capability", "",
            _CAPABILITY_NOTE, ""]
    out += _capability_table(catalog) + ["", "## Builds", ""]
    return "\n".join(out + _build_table(catalog))


_CAPABILITY_NOTE = ("The score the agentic ranking uses (or, marked *chat only*, the chat ranking's), as a share of "
                    "the frontier model on the same table, with its source. Where the model's own table has no "
                    "frontier column the reference comes from another table (the benchmark's official leaderboard "
                    "or the frontier vendor's own announcement), named separately; a model without a score says "
                    "what was looked for.")


def capability_rows(catalog: Catalog) -> list[dict[str, object]]:
    """Each model's first capability score (the one ranked on), or its 'none published' note."""
    rows: list[dict[str, object]] = []
    for m in sorted(catalog.models, key=lambda m: (m.family.lower(), m.id)):
        cap = next((c for c in m.capability if "agentic" in c.workloads), m.capability[0] if m.capability else None)
        row: dict[str, object] = {"model": m.id, "family": m.family}
        if cap is None:
            row["none_published"] = m.capability_none_published
        else:
            row.update(benchmark=cap.benchmark, score=cap.score, reference_model=cap.reference_model,
                       reference_score=cap.reference_score, share=round(cap.score / cap.reference_score, 3),
                       reported_by=cap.reported_by, date=cap.date, source=cap.source,
                       reference_source=cap.reference_source, workloads=list(cap.workloads))
        rows.append(row)
    return rows


def _capability_table(catalog: Catalog) -> list[str]:
    lines = [_md_row(("model", "benchmark", "score", "frontier reference", "share", "reported by", "date",
                      "source")), _md_row(("---",) * 8)]
    for r in capability_rows(catalog):
        if "benchmark" not in r:
            note = r["none_published"] or "**no score and no note**"
            lines.append(_md_row((str(r["model"]), f"unknown: {note}", "-", "-", "-", "-", "-", "-")))
            continue
        source = f"`{_ids(r['source'])}`"
        reference = f"{r['reference_model']} {r['reference_score']:g}"
        if r["reference_source"] is not None:
            reference += f" (from another table: `{_ids(r['reference_source'])}`)"
        benchmark = str(r["benchmark"]) + ("" if "agentic" in r["workloads"] else " (chat only)")  # type: ignore[operator]
        lines.append(_md_row((str(r["model"]), benchmark, f"{r['score']:g}", reference, f"{r['share']:.0%}",
                              str(r["reported_by"]), str(r["date"]), source)))
    return lines


def _ids(ref: object) -> str:
    return ref if isinstance(ref, str) else ", ".join(str(sid) for sid in ref) if isinstance(ref, (list, tuple)) \
        else str(ref)


def as_json(catalog: Catalog) -> dict[str, object]:
    """`coverage --json`: per-family counts and each model's capability entry."""
    from dataclasses import asdict

    return {"families": [asdict(r) for r in family_rows(catalog)], "capability": capability_rows(catalog)}


_LEGEND = ("*sizes stated*: builds whose size on disk a source states; the others are derived from the "
           "parameter count and the format, and say so. *KV from config*: models whose config.json facts give "
           "the KV bytes per token; for the others the KV figures are unknown (or come from a measured pool). "
           "*context known*: models whose context window a source gives. *scored*: models with a sourced "
           "capability score beside a frontier reference (the others carry a note saying none was found). "
           "*caveats*: distinct known problems on the family's builds and recipes.")


def _build_table(catalog: Catalog) -> list[str]:
    from sparkadvisor.core.formats import FORMATS

    models = {m.id: m for m in catalog.models}
    recipes: dict[str, int] = {}
    for recipe in catalog.recipes:
        recipes[recipe.build] = recipes.get(recipe.build, 0) + 1
    lines = [_md_row(("build", "model", "repo", "format", "size", "engines", "recipes")),
             _md_row(("---",) * 7)]
    for b in sorted(catalog.builds, key=lambda b: (models[b.model].family.lower(), b.model, b.id)):
        size = f"{b.size.value:g} {b.size.unit}" if b.size else "derived"
        lines.append(_md_row((b.id, models[b.model].name, f"`{b.repo}`", FORMATS[b.format].label, size,
                              ", ".join(b.engines), str(recipes.get(b.id, 0)))))
    return lines


def _md_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"
