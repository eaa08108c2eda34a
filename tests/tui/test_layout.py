"""Which columns show at which width: the decision first, whole, and the sorted column kept."""

from __future__ import annotations

import pytest

from sparkadvisor.core.workload import AGENTIC
from sparkadvisor.tui.layout import FIXED, GAP, GUTTER, LABELS, natural_widths, place
from sparkadvisor.tui.model import Scenario, compute_ranking


@pytest.fixture(scope="module")
def natural(index) -> dict[str, int]:
    return natural_widths(compute_ranking(index, Scenario("dgx-spark", 2, AGENTIC)).widest)


@pytest.mark.parametrize("width", [77, 117, 197])
def test_the_decision_columns_come_first_and_everything_fits(natural, width: int) -> None:
    layout = place(natural, width)
    assert layout.keys[:7] == (*FIXED, "flags", "fit", "expected", "ttft")
    assert layout.fixed_width + layout.scrolled_width - GAP <= width
    for placed in layout.fixed + layout.scrolled:
        assert placed.width >= len(LABELS[placed.key]), placed
        if placed.key not in ("model", "build", "flags", "reason"):
            assert placed.width == natural[placed.key], "numbers are never cut"


def test_wider_screens_show_more_and_names_grow(natural) -> None:
    narrow, middle, wide = (place(natural, w) for w in (77, 117, 197))
    assert len(narrow.keys) < len(middle.keys) < len(wide.keys)
    widths = [{p.key: p.width for p in layout.fixed + layout.scrolled} for layout in (narrow, middle, wide)]
    assert widths[0]["model"] < widths[2]["model"] == natural["model"]
    assert widths[1]["flags"] == natural["flags"], "the badge shows before the secondary columns"


def test_the_sorted_column_is_kept_at_any_width(natural) -> None:
    layout = place(natural, 77, sort_key="per_node")
    assert "per_node" in layout.keys and "flags" in layout.keys


def test_the_wide_view_has_every_column(natural) -> None:
    layout = place(natural, 77, wide=True)
    assert set(layout.keys) == set(natural) and layout.keys[:3] == FIXED
    assert layout.fixed_width == GUTTER + sum(p.width + GAP for p in layout.fixed)
