"""`sparkadvisor coverage`: the per-family table, and docs/coverage.md is its current output."""

from __future__ import annotations

from pathlib import Path

from sparkadvisor.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_markdown_matches_docs_coverage(capsys):
    assert main(["coverage", "--markdown"]) == 0
    assert capsys.readouterr().out == (REPO / "docs" / "coverage.md").read_text(encoding="utf-8"), \
        "docs/coverage.md is stale: run `sparkadvisor coverage --markdown > docs/coverage.md`"


def test_plain_table_counts_every_family_and_the_total(index, capsys):
    assert main(["coverage"]) == 0
    out = capsys.readouterr().out
    catalog = index.catalog
    assert f"{len(catalog.models)} models, {len(catalog.builds)} builds, {len(catalog.recipes)} recipes" in out
    for family in {m.family for m in catalog.models}:
        assert f"\n{family} " in out
    total = next(line for line in out.splitlines() if line.startswith("all "))
    assert total.split()[1:3] == [str(len(catalog.models)), str(len(catalog.builds))]


def test_family_rows_add_up_to_the_total(index):
    from sparkadvisor.commands.coverage import family_rows

    rows = family_rows(index.catalog)
    for column in ("models", "builds", "recipes", "measurements"):
        assert sum(getattr(r, column) for r in rows[:-1]) == getattr(rows[-1], column)
