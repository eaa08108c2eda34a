"""Piped and terminal tables count terminal cells: a name in double-width characters (CJK) keeps
every column after it in line, in `rank | cat` as in the app."""

from __future__ import annotations

from sparkadvisor.listing import Listing, terminal_widths, text_lines

WIDE = Listing(("#", "model", "fit"), (("1", "通义千问", "fits +9.0 GiB"), ("2", "Qwen3", "fits +99.3 GiB")),
               numeric=frozenset({0}))


def cells(text: str) -> int:
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def test_a_piped_table_keeps_columns_in_line_after_a_double_width_name() -> None:
    header, wide, narrow = text_lines(WIDE)
    assert cells(wide[:wide.index("fits")]) == narrow.index("fits") == header.index("fit")


def test_a_terminal_table_narrows_a_double_width_name_by_its_cells() -> None:
    from sparkadvisor.listing import natural_widths

    assert natural_widths(WIDE, [list(r) for r in WIDE.rows])[1] == 8
    assert terminal_widths(WIDE, [1, 8, 14], 80) == [1, 8, 14]


def test_a_cut_double_width_name_fits_its_cells() -> None:
    from sparkadvisor.listing import _cut

    assert cells(_cut("通义千问模型", 7)) <= 7 and _cut("通义千问模型", 7).endswith("…")


def test_a_wrapped_comparison_cell_counts_double_width_characters() -> None:
    """`compare` on a narrow terminal wraps each cell within its column: by cells, not characters."""
    from sparkadvisor.listing import wrap_cells

    lines = wrap_cells("通义千问模型超长的名字 Qwen3 NVFP4", 12)
    assert lines == ["通义千问模型", "超长的名字", "Qwen3 NVFP4"]
    assert all(cells(line) <= 12 for line in lines)
    assert wrap_cells("GLM-5.3-Flash RedHatAI NVFP4", 14) == ["GLM-5.3-Flash", "RedHatAI NVFP4"]
    assert wrap_cells("", 12) == [""]
